package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/memgate/memgate/memory/storeapi"
)

var (
	_ storeapi.KVScanner = (*Store)(nil)
	_ storeapi.KVDeleter = (*Store)(nil)
)

// Get reads a small value other packages keep beside the records (e.g. the
// Slack message that announced a parked write). A missing key is
// storeapi.ErrNotFound, as with the Badger store.
func (s *Store) Get(ctx context.Context, namespace, key string) ([]byte, error) {
	var out []byte
	err := s.queryRow(ctx, "get", "get "+namespace+"/"+key, "SELECT value FROM memgate_kv WHERE namespace = $1 AND key = $2",
		[]any{namespace, key}, &out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storeapi.ErrNotFound
	}
	return out, err
}

// queryRow runs a statement of one row outside a transaction (one round
// trip) and scans it into dest. A database that does not answer is an
// EUNAVAILABLE error naming op; no row is pgx.ErrNoRows; another error
// names what.
func (s *Store) queryRow(ctx context.Context, op, what, q string, args []any, dest ...any) error {
	if s.closed.Load() {
		return errClosed()
	}
	err := s.pool.QueryRow(ctx, q, args...).Scan(dest...)
	switch {
	case err == nil || errors.Is(err, pgx.ErrNoRows):
		s.health.answered()
		return err
	case classify(err) == failUnavailable && ctx.Err() == nil:
		s.health.failed(err)
		return unavailable(op, err)
	}
	if bad := badInput(err); bad != nil {
		return bad
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

// Put writes a small value, durably (it returns once committed).
func (s *Store) Put(ctx context.Context, namespace, key string, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	err := s.run(ctx, "put", rowTx, func(t *tx) error {
		return t.exec(`INSERT INTO memgate_kv (namespace, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value`, namespace, key, v)
	})
	if err != nil {
		return fmt.Errorf("pgstore: put %s/%s: %w", namespace, key, err)
	}
	return nil
}

// ScanNamespace calls fn with each key of namespace and its value, in byte
// order of the keys (the column's collation is "C"), descending when
// newestFirst, until fn returns false. It reads one snapshot a page at a
// time (keyset paging on the primary key), so a large namespace is never
// held at once; fn runs while the snapshot is open, so it should not block.
func (s *Store) ScanNamespace(ctx context.Context, namespace string, newestFirst bool, fn func(key string, value []byte) bool) error {
	order, past := "ASC", ">"
	if newestFirst {
		order, past = "DESC", "<"
	}
	first := "SELECT key, value FROM memgate_kv WHERE namespace = $1 ORDER BY key " + order + limit
	next := "SELECT key, value FROM memgate_kv WHERE namespace = $1 AND key " + past + " $2 ORDER BY key " + order + limit
	type entry struct {
		key   string
		value []byte
	}
	err := s.run(ctx, "scan", readTx, func(t *tx) error {
		return scan(t, cursor{}, func(c cursor) (string, []any) {
			if c[1] == "" { // the first page: every key, the empty one included
				return first, []any{namespace}
			}
			return next, []any{namespace, c[0]}
		}, func(r pgx.CollectableRow) (entry, cursor, error) {
			var e entry
			err := r.Scan(&e.key, &e.value)
			return e, cursor{e.key, "after"}, err
		}, func(e entry) (bool, error) { return fn(e.key, e.value), nil })
	})
	if err != nil {
		return fmt.Errorf("pgstore: scan %s: %w", namespace, err)
	}
	return nil
}

// CountNamespace returns the number of keys of namespace, counted in the
// database: no row is sent.
func (s *Store) CountNamespace(ctx context.Context, namespace string) (int, error) {
	var n int
	err := s.queryRow(ctx, "count", "count "+namespace, "SELECT count(*) FROM memgate_kv WHERE namespace = $1",
		[]any{namespace}, &n)
	return n, err
}
