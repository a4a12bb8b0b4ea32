package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/memgate/memgate/memory/storeapi"
)

// ErrNotFound is returned by Get for a missing key: the storage
// contract's (storeapi.ErrNotFound), named here too for callers in cmd/.
var ErrNotFound = storeapi.ErrNotFound

var _ storeapi.KVScanner = (*Store)(nil)

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
	if err := s.setDurable(ctx, key("kv/", namespace, k), v); err != nil {
		return fmt.Errorf("store: put %s/%s: %w", namespace, k, err)
	}
	return nil
}

// PutKey writes one value under a key of the caller's own prefix, outside
// the store's layout (as the Mem0 event log kept mem0/ev/<id> before it
// moved to the KV area: MoveKeys), and returns
// once it is durable, as Update and Put do, in group commit mode too. This
// is how other packages write to the database: a write made directly
// through DB() is not durable until Sync. Keys under the store's own
// prefixes are refused.
func (s *Store) PutKey(ctx context.Context, k, v []byte) error {
	if err := checkOwnKey(k); err != nil {
		return err
	}
	if err := s.setDurable(ctx, k, v); err != nil {
		return fmt.Errorf("store: put %q: %w", k, err)
	}
	return nil
}

// layoutPrefixes are the store's own key prefixes (see tx.go).
var layoutPrefixes = []string{"r/", "s/", "p/", "sr/", "sp/", "ss/", "a/", "q/", "xr/", "xa/", "e/", "ec/", "ch/", "er/", "sh/", "o/", "kv/"}

// setDurable writes one key in a transaction of its own and returns once
// the commit is durable.
func (s *Store) setDurable(ctx context.Context, k, v []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := entryBytes(k, len(v), s.threshold) + txnOverhead
	if err := s.guard.admit(n); err != nil {
		return err // nothing reached Badger
	}
	var err error
	for attempt := 1; ; attempt++ {
		err = s.db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) })
		if !errors.Is(err, badger.ErrBlockedWrites) || waitUnblocked(ctx, attempt) != nil {
			break
		}
	}
	s.guard.done(n)
	if err != nil {
		return err
	}
	return s.durable()
}
