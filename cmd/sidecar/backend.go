package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/snapshot"
	"github.com/memgate/memgate/store"
)

// backend is the store the sidecar runs on, as serve uses it: the embedded
// Badger store under --data-dir, or a shared database named by --store.
// What only Badger offers is nil on another store.
type backend struct {
	// Store is what the governor, the outbox (a notify.Claimer when
	// several instances share it) and the reminder write through.
	Store memory.Store
	// KV is the small key-value area of Slack, the guard and the reminder.
	KV storeapi.KV
	// Writable says why writes are refused (disk full, database down).
	Writable func() error
	// Search is what search.Open reads: a store with a commit feed, or
	// one whose read transactions scan their index of active records.
	Search search.Source
	// Snapshot writes a whole-store backup (nil: the admin route answers
	// 503).
	Snapshot func(ctx context.Context, w io.Writer) error
	// Disk reports the store's files for /metrics (nil: not on this disk).
	Disk metrics.DiskReader
	// Follow attaches a feed to the store's commits (nil: the store has no
	// commit feed, and the embeddings worker reconciles periodically);
	// the returned func detaches it.
	Follow func(storeapi.ActiveFeed) (unfollow func())
	// Vectors is where the embeddings worker keeps a model's vectors (nil:
	// the store cannot keep them).
	Vectors func(model string) embed.Store
	// Unready words a Writable error for /readyz.
	Unready func(err error) error
	// Audit is the store's audit chain (verify, export).
	Audit memory.AuditChain
	// Compact makes what an erasure removed leave the disk (nil: the
	// store cannot).
	Compact func(ctx context.Context) error
	// Events is Mem0's event log, in the store's KV area (nil: the store
	// cannot scan a KV namespace, and serve refuses it).
	Events *mem0.EventLog
	// Where names the store in logs and /readyz, without credentials.
	Where string
	Close func() error
}

// sharedStore is what a store beside Badger offers (pgstore.Store): the
// memory store, the KV area with store.Store's semantics (a missing key is
// store.ErrNotFound), Writable (an EUNAVAILABLE error while the database
// does not answer) and Close. Its read transactions scan their index of
// active records (storeapi.ActiveScanner); a notify.Claimer shares the
// outbox between instances.
type sharedStore interface {
	memory.Store
	storeapi.KV
	Writable() error
	Close() error
}

// openShared opens the database of a --store URL; serve uses openPostgres
// unless a test gives another.
type openShared func(ctx context.Context, url string, log *slog.Logger) (sharedStore, error)

// openBackend opens the store --store names: "" the embedded Badger store
// under --data-dir, postgres:// or postgresql:// a PostgreSQL database.
func openBackend(ctx context.Context, cfg serveConfig, log *slog.Logger) (*backend, error) {
	if cfg.store == "" {
		return openBadger(ctx, cfg, log)
	}
	u, err := url.Parse(cfg.store)
	if err != nil || u.Scheme == "" {
		// Not echoed: a key=value connection string may hold a password.
		return nil, errors.New("--store is not a URL: give postgres://… or postgresql://…, or leave it empty for the embedded store under --data-dir")
	}
	if !isPostgresURL(cfg.store) {
		return nil, fmt.Errorf("--store: unknown scheme %q: give postgres://… or postgresql://…, or leave it empty for the embedded store under --data-dir", u.Scheme)
	}
	open := cfg.openShared
	if open == nil {
		open = openPostgres
	}
	where := "PostgreSQL " + redactedURL(cfg.store)
	st, err := openWaiting(ctx, func(ctx context.Context) (sharedStore, error) { return open(ctx, cfg.store, log) },
		cmp.Or(cfg.storeWait, storeWait), where, log)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", where, err)
	}
	return sharedBackend(st, where), nil
}

// storeWait is how long serve waits at start for a database that does not
// answer (it may be starting beside memgate) before giving up.
const storeWait = time.Minute

// openWaiting opens a shared store, trying again with backoff for up to
// wait while the database is unavailable (a refused or dropped
// connection); any other error (a wrong password, a newer schema) fails at
// once.
func openWaiting(ctx context.Context, open func(context.Context) (sharedStore, error), wait time.Duration,
	where string, log *slog.Logger) (sharedStore, error) {
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval, exp.MaxInterval = 500*time.Millisecond, 10*time.Second
	return backoff.Retry(ctx, func() (sharedStore, error) {
		st, err := open(ctx)
		if err != nil && memory.ErrorCode(err) != memory.EUNAVAILABLE {
			return nil, backoff.Permanent(err)
		}
		return st, err
	}, backoff.WithBackOff(exp), backoff.WithMaxElapsedTime(wait), backoff.WithNotify(func(err error, next time.Duration) {
		log.Warn("the store does not answer yet; trying again", "store", where, "in", next.Round(time.Millisecond).String(),
			"err", memory.ErrorMessage(err))
	}))
}

// openPostgres opens a PostgreSQL store, applying its migrations.
func openPostgres(ctx context.Context, url string, log *slog.Logger) (sharedStore, error) {
	return pgstore.Open(ctx, pgstore.Options{URL: url, Logger: log})
}

// openBadger opens the embedded store, as serve always did. Every write
// the sidecar acknowledges goes through its Update, Put or PutKey, which
// return once durable in group commit mode too.
func openBadger(ctx context.Context, cfg serveConfig, log *slog.Logger) (*backend, error) {
	dir := filepath.Join(cfg.dataDir, "db")
	st, err := store.Open(store.Options{Dir: dir, NoSync: cfg.noSync, GroupCommit: cfg.groupCommit, Logger: log})
	if err != nil {
		return nil, err
	}
	if cfg.noSync {
		log.Warn("--no-sync: commits are not fsynced; a crash may lose acknowledged writes")
	}
	// Releases before the KV contract kept Mem0's events outside the KV
	// area: they move once, at the first start after the upgrade.
	if n, err := mem0.MoveLegacyEvents(ctx, st); err != nil {
		st.Close()
		return nil, err
	} else if n > 0 {
		log.Info("moved the Mem0 events of an earlier release into the store's KV area", "events", n)
	}
	return &backend{Store: st, KV: st, Writable: st.Writable, Search: st, Disk: st, Where: dir, Audit: st, Compact: st.Compact,
		Snapshot: func(ctx context.Context, w io.Writer) error { return snapshot.Save(ctx, st, w) },
		Events:   mem0.NewEventLog(st), Close: st.Close,
		Follow:  st.Follow,
		Vectors: func(string) embed.Store { return embedStore{st} }, // beside the records, in Badger's own keys
		// The only reason is a full disk (writes answer 507, reads still work).
		Unready: func(err error) error { return errors.New(memory.ErrorMessage(err)) }}, nil
}

// sharedBackend is the backend of a shared store. Backups in Badger's
// format and disk metrics are Badger's; a shared store moves with
// `sidecar snapshot export`. The Mem0 event log and the embeddings'
// vectors live in its KV area.
func sharedBackend(st sharedStore, where string) *backend {
	b := &backend{Store: st, KV: st, Writable: st.Writable, Search: st, Where: where, Close: st.Close,
		// A database that does not answer, named.
		Unready: func(err error) error { return fmt.Errorf("the store %s: %s", where, memory.ErrorMessage(err)) }}
	if kv, ok := st.(sharedKV); ok {
		// A namespace per model: each instance finds what another embedded.
		b.Vectors = func(model string) embed.Store { return kvEmbedStore{kv, embedNamespace(model)} }
	}
	if ac, ok := st.(memory.AuditChain); ok {
		b.Audit = ac
	}
	if c, ok := st.(interface{ Compact(context.Context) error }); ok {
		b.Compact = c.Compact
	}
	if kv, ok := st.(storeapi.KVScanner); ok {
		b.Events = mem0.NewEventLog(kv)
	}
	return b
}

// notReady says why /readyz fails for the store, or nil.
func (b *backend) notReady() error {
	if err := b.Writable(); err != nil {
		return b.Unready(err)
	}
	return nil
}

// isPostgresURL reports whether a --store URL names PostgreSQL.
func isPostgresURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (strings.EqualFold(u.Scheme, "postgres") || strings.EqualFold(u.Scheme, "postgresql"))
}

// redactedURL is a store URL fit for logs: without its password or query
// (which may carry one), or nothing of it when it does not parse.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.Redacted()
}
