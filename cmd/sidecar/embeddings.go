package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// sharedReconcile is how often the worker reconciles on a store without a
// commit feed: the bound on how long a record written through any instance
// ranks lexically only. Each period costs one scan of the active records.
const sharedReconcile = 5 * time.Second

// openEmbeddings starts the optional semantic index (--embed-url): it
// embeds active records after their commit, never on a write's path, keeps
// the vectors beside the records, and returns what search ranks with.
// Without --embed-url it returns nil and search ranks lexically.
//
// On Badger the commit feed tells the worker of each change. A shared
// store (PostgreSQL) has no feed and other instances write to it: the
// worker reconciles every sharedReconcile against a scan of the active
// records, and keeps the vectors in the store's KV area, where each
// instance finds what another embedded instead of asking the endpoint again.
func openEmbeddings(cfg serveConfig, b *backend, reg prometheus.Registerer, log *slog.Logger) (search.Semantic, func(), error) {
	if cfg.embedURL == "" {
		return nil, func() {}, nil
	}
	var vectors embed.Store
	var every time.Duration
	switch kv, ok := b.KV.(sharedKV); {
	case b.Badger != nil:
		vectors = embedStore{b.Badger}
	case ok:
		vectors, every = kvEmbedStore{kv}, sharedReconcile
	default:
		return nil, nil, fmt.Errorf("--embed-url: the store %s cannot keep vectors (it lists no KV namespace); "+
			"unset --embed-url (search then ranks lexically) or use --store postgres://…", b.Where)
	}
	met, err := embed.NewMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	client, err := embed.NewClient(embed.ClientOptions{URL: cfg.embedURL, Model: cfg.embedModel,
		APIKey: os.Getenv("MEMGATE_EMBED_API_KEY"), Logger: log, Metrics: met})
	if err != nil {
		return nil, nil, fmt.Errorf("--embed-url: %w", err)
	}
	scan := func(ctx context.Context, fn func(id, text string) bool) error {
		return b.Store.View(ctx, func(tx memory.ReadTx) error {
			return tx.ScanActive("", func(r *memory.Record) bool { return fn(r.ID, r.Summary) })
		})
	}
	x, err := embed.New(embed.Options{Client: client, Scan: scan, Store: vectors, Reconcile: every, Logger: log, Metrics: met})
	if err != nil {
		return nil, nil, err
	}
	stop := func() {}
	if b.Badger != nil {
		stop = b.Badger.Follow(embedFeed{x})
	}
	if err := x.Open(); err != nil { // loading and the first pass run in the background
		stop()
		return nil, nil, err
	}
	if every > 0 {
		log.Info("semantic search on: active records are embedded by a periodic pass over the shared store",
			"url", client.Endpoint(), "model", client.Model(), "every", every)
	} else {
		log.Info("semantic search on: active records are embedded after commit", "url", client.Endpoint(), "model", client.Model())
	}
	return x, func() {
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := x.Close(ctx); err != nil {
			log.Warn("closing the embeddings worker", "err", err)
		}
	}, nil
}

// embedFeed tells the embeddings worker of each commit's changes to the
// active layer. Changed never blocks; records never change their text (a
// new version is a new record), so the order in which commits return does
// not matter. A failed commit's changes are passed on too: a vector for a
// record that is not active is never read (search scores only records its
// snapshot holds as active), and one missing is made again at the next
// start's full pass.
type embedFeed struct{ x *embed.Index }

func (embedFeed) Begin(uint64) {}

func (f embedFeed) End(_ uint64, changes []store.ActiveChange, outcome store.CommitOutcome) {
	if outcome == store.Conflicted {
		return // nothing was written
	}
	for _, ch := range changes {
		f.x.Changed(ch.ID, ch.Summary, ch.Active)
	}
}
