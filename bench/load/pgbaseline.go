package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGBaseline is the yardstick for memgate on PostgreSQL (issue 17): N bare
// HTTP handlers, each with a connection pool of its own as each memgate
// instance has, doing in one SERIALIZABLE transaction what a low-risk write
// does to the database: read the slot and its active record, insert the
// record, point the slot at it (superseding the old head), append an event,
// commit. No policy, no indexes beyond the primary keys, no outbox.
type PGBaseline struct {
	servers []*baselineServer
	pools   []*pgxpool.Pool
	// retries counts transactions run again after a serialization failure.
	retries atomic.Int64
}

// pgBaselineSchema is created once before the handlers start. Its own table
// names, so it never collides with memgate's schema on a shared database.
const pgBaselineSchema = `
CREATE TABLE IF NOT EXISTS bench_baseline_slots (
	id        text COLLATE "C" PRIMARY KEY,
	active_id text COLLATE "C",
	version   bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS bench_baseline_records (
	id         text COLLATE "C" PRIMARY KEY,
	slot_id    text COLLATE "C" NOT NULL,
	status     text NOT NULL,
	supersedes text,
	value      bytea NOT NULL
);
CREATE TABLE IF NOT EXISTS bench_baseline_events (
	seq       bigserial PRIMARY KEY,
	record_id text COLLATE "C" NOT NULL,
	slot_id   text COLLATE "C" NOT NULL,
	kind      text NOT NULL,
	at        timestamptz NOT NULL DEFAULT now()
);`

// StartPGBaseline creates the baseline's tables in the database at dbURL
// and starts handlers HTTP handlers on loopback ports, each with its own
// pool (pgxpool's defaults; pool_max_conns in the URL sets its size).
func StartPGBaseline(ctx context.Context, dbURL string, handlers, recordBytes int) (*PGBaseline, error) {
	b := &PGBaseline{}
	for i := range max(handlers, 1) {
		pool, err := pgxpool.New(ctx, dbURL)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("baseline: connect handler %d: %w", i, err)
		}
		b.pools = append(b.pools, pool)
		if i == 0 {
			if _, err := pool.Exec(ctx, pgBaselineSchema); err != nil {
				b.Close()
				return nil, fmt.Errorf("baseline: create tables: %w", err)
			}
		}
		srv, err := startBaselineServer(recordBytes, func(ctx context.Context, rec *baselineRecord, value []byte) error {
			return b.writeRecord(ctx, pool, rec, value)
		})
		if err != nil {
			b.Close()
			return nil, err
		}
		b.servers = append(b.servers, srv)
	}
	return b, nil
}

// A transaction that lost a serialization race runs again after a
// jittered pause that doubles from retryMinPause to retryMaxPause, at most
// maxSerializationRetries times: the policy pgstore announces for
// memgate's writes, so both sides pay alike for the races. Races are not
// rare even between writes to different slots: a read of an absent key
// takes a predicate lock on the index page an insert then lands on.
const (
	maxSerializationRetries = 32
	retryMinPause           = time.Millisecond
	retryMaxPause           = 100 * time.Millisecond
)

// writeRecord is a low-risk write's transaction, retried while PostgreSQL
// reports a serialization failure or a deadlock.
func (b *PGBaseline) writeRecord(ctx context.Context, pool *pgxpool.Pool, rec *baselineRecord, value []byte) error {
	slot := rec.SubjectID + "\x1f" + rec.FactType
	for attempt := 0; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			var head *string
			err := tx.QueryRow(ctx, `SELECT active_id FROM bench_baseline_slots WHERE id = $1`, slot).Scan(&head)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("read slot: %w", err)
			}
			if head != nil {
				var prev []byte
				if err := tx.QueryRow(ctx, `SELECT value FROM bench_baseline_records WHERE id = $1`, *head).Scan(&prev); err != nil {
					return fmt.Errorf("read active record: %w", err)
				}
				if _, err := tx.Exec(ctx, `UPDATE bench_baseline_records SET status = 'superseded' WHERE id = $1`, *head); err != nil {
					return fmt.Errorf("supersede: %w", err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO bench_baseline_records (id, slot_id, status, supersedes, value) VALUES ($1, $2, 'active', $3, $4)`,
				rec.ID, slot, head, value); err != nil {
				return fmt.Errorf("insert record: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO bench_baseline_slots (id, active_id, version) VALUES ($1, $2, 1)
				ON CONFLICT (id) DO UPDATE SET active_id = EXCLUDED.active_id, version = bench_baseline_slots.version + 1`,
				slot, rec.ID); err != nil {
				return fmt.Errorf("update slot: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO bench_baseline_events (record_id, slot_id, kind) VALUES ($1, $2, 'applied')`,
				rec.ID, slot); err != nil {
				return fmt.Errorf("append event: %w", err)
			}
			return nil
		})
		if err == nil || attempt+1 >= maxSerializationRetries || !retryable(err) {
			return err
		}
		b.retries.Add(1)
		pause := min(retryMinPause<<min(attempt, 16), retryMaxPause)
		select {
		case <-time.After(pause/2 + rand.N(pause/2+1)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Retries is how many transactions ran again after a serialization
// failure or a deadlock since the baseline started.
func (b *PGBaseline) Retries() int64 { return b.retries.Load() }

// retryable reports a serialization failure or a deadlock: the transaction
// did nothing and may run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// Targets are the handlers' URLs.
func (b *PGBaseline) Targets() []string {
	urls := make([]string, len(b.servers))
	for i, s := range b.servers {
		urls[i] = s.url
	}
	return urls
}

// Close stops the handlers and closes their pools.
func (b *PGBaseline) Close() error {
	var errs []error
	for _, s := range b.servers {
		errs = append(errs, s.Close())
	}
	for _, p := range b.pools {
		p.Close()
	}
	return errors.Join(errs...)
}
