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
	var out []byte
	err := s.run(ctx, "get", readTx, func(t *tx) error {
		err := t.tx.QueryRow(ctx, "SELECT value FROM memgate_kv WHERE namespace = $1 AND key = $2", namespace, key).Scan(&out)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNotFound
		}
		return t.fail(err)
	})
	if errors.Is(err, errNotFound) {
		return nil, store.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("pgstore: get %s/%s: %w", namespace, key, err)
	}
	return out, nil
}

// errNotFound carries a missing key out of run, which returns the errors
// of fn it does not know as they are.
var errNotFound = errors.New("not found")

// Put writes a small value, durably (it returns once committed).
func (s *Store) Put(ctx context.Context, namespace, key string, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	err := s.run(ctx, "put", rowTx, func(t *tx) error {
		return t.exec("put", `INSERT INTO memgate_kv (namespace, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value`, namespace, key, v)
	})
	if err != nil {
		return fmt.Errorf("pgstore: put %s/%s: %w", namespace, key, err)
	}
	return nil
}
