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
	"github.com/memgate/memgate/memory/storeapi"
)

// sharedReconcile is how often the worker reconciles on a store without a
// commit feed: the bound on how long a record written through any instance
// ranks lexically only. Each pass costs one scan of the active records; on
// a store where that takes over a tenth of the period, the worker waits ten
// scans' time instead (embed/doc.go).
const sharedReconcile = 5 * time.Second

// openEmbeddings makes the optional semantic index (--embed-url): it
// embeds active records after their commit, never on a write's path, keeps
// the vectors beside the records, and is what search ranks with. Its
// worker runs with its Run; unfollow detaches it from Badger's commit feed
// once the writers stopped. Without --embed-url it returns nil and search
// ranks lexically.
//
// On Badger the commit feed tells the worker of each change. A shared
// store (PostgreSQL) has no feed and other instances write to it: the
// worker reconciles every sharedReconcile against a scan of the active
// records, and keeps the vectors in the store's KV area, a namespace per
// model, where each instance finds what another embedded instead of asking
// the endpoint again.
func openEmbeddings(cfg serveConfig, b *backend, reg prometheus.Registerer, log *slog.Logger) (x *embed.Index, unfollow func(), err error) {
	if cfg.embedURL == "" {
		return nil, func() {}, nil
	}
	if b.Vectors == nil {
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
	var every time.Duration
	if b.Follow == nil {
		every = sharedReconcile // no commit feed: other instances write too
	}
	x, err = embed.New(embed.Options{Client: client, Scan: activeTexts(b.Store), Store: b.Vectors(client.Model()), Reconcile: every, Logger: log, Metrics: met})
	if err != nil {
		return nil, nil, err
	}
	unfollow = func() {}
	if b.Follow != nil {
		unfollow = b.Follow(embedFeed{x}) // changes wait in the queue until Run starts the worker
	}
	if every > 0 {
		log.Info("semantic search on: active records are embedded by a periodic pass over the shared store",
			"url", client.Endpoint(), "model", client.Model(), "every", every)
	} else {
		log.Info("semantic search on: active records are embedded after commit", "url", client.Endpoint(), "model", client.Model())
	}
	return x, unfollow, nil
}

// activeTexts is the worker's scan: the id and text of every active record
// of st, read in one transaction. A transaction that reads its index of
// active records (PostgreSQL's) is asked for that: its columns, without
// decoding each record, which a pass every few seconds repeats.
func activeTexts(st memory.Store) embed.ScanFunc {
	return func(ctx context.Context, fn func(id, text string) bool) error {
		return st.View(ctx, func(tx memory.ReadTx) error {
			if idx, ok := tx.(storeapi.ActiveScanner); ok {
				return idx.ScanActiveIndex(ctx, "", memory.Scope{}, func(e storeapi.ActiveEntry, _ uint64) bool { return fn(e.ID, e.Summary) })
			}
			return tx.ScanActive("", func(r *memory.Record) bool { return fn(r.ID, r.Summary) })
		})
	}
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

func (f embedFeed) End(_ uint64, changes []storeapi.ActiveChange, outcome storeapi.CommitOutcome) {
	if outcome == storeapi.Conflicted {
		return // nothing was written
	}
	for _, ch := range changes {
		f.x.Changed(ch.ID, ch.Summary, ch.Active)
	}
}
