package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// ErrNotFound is returned by Get for a missing key.
var ErrNotFound = errors.New("store: key not found")

// Get reads a small value other packages keep beside the records (e.g. the
// Slack message that announced a parked write), under kv/<namespace>.
func (s *Store) Get(ctx context.Context, namespace, k string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key("kv/", namespace, k))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("store: get %s/%s: %w", namespace, k, err)
	}
	return out, err
}

// Put writes a small value under kv/<namespace>, durably.
func (s *Store) Put(ctx context.Context, namespace, k string, v []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.logs != nil && len(v) >= valueThreshold {
		s.logs.markVlog()
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(key("kv/", namespace, k), v) }); err != nil {
		return fmt.Errorf("store: put %s/%s: %w", namespace, k, err)
	}
	return s.durable()
}
