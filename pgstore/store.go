package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memgate/memgate/memory"
)

// Options configure a Store.
type Options struct {
	// URL is a libpq connection string or postgres:// URL; pool settings
	// (pool_max_conns, …) may be given in it, as pgxpool reads them.
	// Without pool_max_conns the pool holds up to defaultMaxConns.
	URL    string
	Logger *slog.Logger
	// Instance names this process as the owner of the outbox leases it
	// takes; default "<host>-<pid>".
	Instance string
}

// Store is a PostgreSQL-backed memory.Store that several memgate
// instances share.
type Store struct {
	pool     *pgxpool.Pool
	log      *slog.Logger
	instance string
	health   health
	// stop ends the health probes; probes waits for them at Close.
	stop   context.CancelFunc
	probes sync.WaitGroup
	closed atomic.Bool
	// factConns bounds the connections LockFacts holds to half the pool,
	// so the writes holding them always find one for their transaction.
	factConns chan struct{}
	// sealKick wakes the audit chain's sealer (chain.go), which runs
	// until stop and is waited for with probes.
	sealKick chan struct{}
}

var _ memory.Store = (*Store)(nil)

// Open connects to the database and brings its schema up to date.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Instance == "" {
		host, _ := os.Hostname()
		o.Instance = host + "-" + strconv.Itoa(os.Getpid())
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		// The URL may hold a password: pgx's message does not repeat it.
		return nil, fmt.Errorf("pgstore: parse the database URL: %w", err)
	}
	if !strings.Contains(o.URL, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		if classify(err) == failUnavailable {
			return nil, unavailable("connect", err)
		}
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	applied, err := migrate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: migrate: %w", err)
	}
	if len(applied) > 0 {
		o.Logger.Info("pgstore: schema migrated", "applied", applied)
	}
	probeCtx, stop := context.WithCancel(context.Background())
	s := &Store{pool: pool, log: o.Logger, instance: o.Instance, stop: stop,
		factConns: make(chan struct{}, max(1, cfg.MaxConns/2)), sealKick: make(chan struct{}, 1)}
	s.health.ctx, s.health.log = probeCtx, o.Logger
	s.probes.Go(func() { s.sealer(probeCtx) })
	s.kickSealer() // events an instance left unsealed, or written before the chain
	return s, nil
}

// defaultMaxConns bounds the pool when the URL does not. pgxpool's own
// default (the number of CPUs, at least 4) is sized for CPU-bound work; a
// sidecar's requests wait on the database, a View may be open while an
// Update runs, and the governor serializes a slot's writers in process,
// so a few more connections keep requests from queueing on the pool. Ten
// instances then hold 160 connections: set pool_max_conns (and
// PostgreSQL's max_connections) for larger fleets.
const defaultMaxConns = 16

// Instance is the owner name of the leases this store takes.
func (s *Store) Instance() string { return s.instance }

// Close waits for a health probe in flight and closes the pool.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stop()
	s.probes.Wait()
	s.pool.Close()
	return nil
}

// Transactions that lose a serialization race are run again, at most
// maxAttempts times, after a jittered backoff that grows from minBackoff
// to maxBackoff: the governor serializes the writers of one slot within an
// instance, so races come from other instances and are short.
const (
	maxAttempts = 32
	minBackoff  = time.Millisecond
	maxBackoff  = 100 * time.Millisecond
)

var (
	// Writes: SERIALIZABLE, so a rule read in one row and enforced in
	// another holds as under Badger's SSI (doc.go).
	writeTx = pgx.TxOptions{IsoLevel: pgx.Serializable}
	// Reads: one snapshot, as a Badger View.
	readTx = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	// Outbox leases and KV writes: single-row statements that need no
	// predicate locks; SKIP LOCKED is meant for READ COMMITTED.
	rowTx = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
)

// Update runs fn in a SERIALIZABLE transaction, running it again when it
// loses a serialization race, and returns once COMMIT succeeded.
func (s *Store) Update(ctx context.Context, fn func(memory.Tx) error) error {
	events := false
	err := s.run(ctx, "update", writeTx, func(t *tx) error {
		err := fn(t)
		events = len(t.events) > 0
		return err
	})
	if err == nil && events {
		s.kickSealer()
	}
	return err
}

// View runs fn in a read-only snapshot.
func (s *Store) View(ctx context.Context, fn func(memory.ReadTx) error) error {
	return s.run(ctx, "view", readTx, func(t *tx) error { return fn(t) })
}

// run runs fn in a transaction with opts until it commits, fails for good,
// or the database is found unavailable. Only a write transaction's fn is
// run again after it ran (memory.Store allows it for Update); a View's fn
// may keep what it read, so it is retried only when it never ran.
func (s *Store) run(ctx context.Context, op string, opts pgx.TxOptions, fn func(*tx) error) error {
	if s.closed.Load() {
		return errClosed()
	}
	rerun := opts.AccessMode != pgx.ReadOnly
	reconnected := false
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pgstore: %s: %w", op, err)
		}
		at, err := s.attempt(ctx, opts, fn)
		if err == nil {
			s.health.answered()
			return nil
		}
		var de *memory.Error
		switch {
		case errors.As(err, &de):
			return err // a domain answer from fn
		case s.closed.Load():
			return errClosed() // closed under it
		}
		switch classify(err) {
		case failRetry:
			if attempt < maxAttempts && (rerun || at == atBegin) {
				if err := sleep(ctx, backoff(attempt)); err != nil {
					return fmt.Errorf("pgstore: %s: %w", op, err)
				}
				continue
			}
			return fmt.Errorf("pgstore: %s: still losing serialization races after %d attempts: %w", op, attempt, err)
		case failUnavailable:
			if ctx.Err() != nil {
				return fmt.Errorf("pgstore: %s: %w", op, ctx.Err())
			}
			s.health.failed(err)
			if at == atCommit && rerun && !pgconn.SafeToRetry(err) {
				s.log.Error("pgstore: commit outcome unknown", "op", op, "err", err)
				return unavailable(errCommitUnknown, err)
			}
			// A connection the server closed (a restart) is found broken
			// only when used; the pool drops it, and one more attempt
			// takes a fresh one. Nothing was committed.
			if !reconnected && (rerun || at == atBegin) {
				reconnected = true
				continue
			}
			return unavailable(op, err)
		}
		if bad := badInput(err); bad != nil {
			return bad
		}
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
}

func errClosed() error { return memory.Errorf(memory.EUNAVAILABLE, "the store is closed") }

// stage is how far an attempt got before it failed.
type stage int

const (
	atBegin  stage = iota // fn did not run
	inFn                  // fn ran (or was running)
	atCommit              // COMMIT itself failed
)

// attempt runs fn once in a transaction.
func (s *Store) attempt(ctx context.Context, opts pgx.TxOptions, fn func(*tx) error) (stage, error) {
	ptx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return atBegin, err
	}
	t := &tx{ctx: ctx, tx: ptx}
	ferr := fn(t)
	if ferr == nil {
		t.flush() // an error is kept in t.err
	}
	if ferr == nil && t.err == nil {
		if err := ptx.Commit(ctx); err != nil {
			return atCommit, err
		}
		return atCommit, nil
	}
	// Rolling back a transaction the server has already aborted or lost
	// has nothing to report.
	_ = ptx.Rollback(context.WithoutCancel(ctx))
	// A database error fn saw decides, whatever fn made of it: the
	// transaction is aborted either way, and a lost race is retried.
	if t.err != nil && (ferr == nil || classify(t.err) != failOther) {
		return inFn, t.err
	}
	return inFn, ferr
}

func backoff(attempt int) time.Duration {
	d := minBackoff << min(attempt-1, 16)
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Writable reports nil while the database answers, and an error with code
// EUNAVAILABLE while it does not. It never waits for the database: it
// answers from the last transaction's outcome or probe, and starts a probe
// (a ping, at most one a second) when that is older than a second.
func (s *Store) Writable() error {
	if s.closed.Load() {
		return errClosed()
	}
	err, probe := s.health.state()
	if probe {
		s.probes.Add(1)
		go func() {
			defer s.probes.Done()
			s.probe()
		}()
	}
	return err
}

// probeTimeout bounds a health probe's ping.
const probeTimeout = 2 * time.Second

func (s *Store) probe() {
	ctx, cancel := context.WithTimeout(s.health.ctx, probeTimeout)
	defer cancel()
	err := s.pool.Ping(ctx)
	if s.health.ctx.Err() != nil {
		return // closing
	}
	s.health.probed(err)
}

// health is the store's last word on the database. It logs each change:
// the database going away, and answering again.
type health struct {
	ctx     context.Context // ends at Close
	log     *slog.Logger
	mu      sync.Mutex
	err     error // nil: answering
	at      time.Time
	probing bool
}

func (h *health) state() (err error, probe bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.probing && time.Since(h.at) >= time.Second {
		h.probing, probe = true, true
	}
	return h.err, probe
}

func (h *health) answered() { h.set(nil, false) }

func (h *health) failed(cause error) { h.set(cause, false) }

func (h *health) probed(err error) { h.set(err, true) }

// set records the outcome of a transaction or a probe (cause nil: the
// database answered).
func (h *health) set(cause error, probe bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if probe {
		h.probing = false
	}
	h.at = time.Now()
	switch {
	case cause != nil && h.err == nil:
		h.log.Error("pgstore: the database is unavailable", "err", cause)
	case cause == nil && h.err != nil:
		h.log.Info("pgstore: the database answers again")
	}
	if cause != nil {
		h.err = unavailable("no answer", cause)
	} else {
		h.err = nil
	}
}

// Compact rewrites the tables that hold text (VACUUM FULL), so that rows
// an erasure or retention changed leave the table files, not only the
// reach of queries. Each table is locked while it is rewritten: the fleet's
// writes wait for it. PostgreSQL's write-ahead log, its archive and
// replicas keep the old rows until they are recycled; backups keep them.
func (s *Store) Compact(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, "VACUUM (FULL) memgate_records, memgate_events, memgate_notices, memgate_kv, memgate_rollback_points, memgate_slots")
	if err != nil {
		return fmt.Errorf("pgstore: compact: %w", err)
	}
	return nil
}
