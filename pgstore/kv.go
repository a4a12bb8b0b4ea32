package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/store"
)

// Get reads a small value other packages keep beside the records (e.g. the
// Slack message that announced a parked write). A missing key is
// store.ErrNotFound, as with the Badger store.
func (s *Store) Get(ctx context.Context, namespace, key string) ([]byte, error) {
	if s.closed.Load() {
		return nil, errClosed()
	}
	// One statement, outside a transaction: one round trip.
	var out []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM memgate_kv WHERE namespace = $1 AND key = $2", namespace, key).Scan(&out)
	switch {
	case err == nil:
		s.health.answered()
		return out, nil
	case errors.Is(err, pgx.ErrNoRows):
		s.health.answered()
		return nil, store.ErrNotFound
	case classify(err) == failUnavailable && ctx.Err() == nil:
		s.health.failed(err)
		return nil, unavailable("get", err)
	}
	return nil, fmt.Errorf("pgstore: get %s/%s: %w", namespace, key, err)
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
