package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// ScanNamespace calls fn with each key of kv/<namespace> and its value, in
// byte order of the keys (descending with newestFirst), until fn returns
// false. The value is valid only during the call. It reads one snapshot,
// as pgstore's scan of the same name reads one transaction.
func (s *Store) ScanNamespace(ctx context.Context, namespace string, newestFirst bool, fn func(key string, value []byte) bool) error {
	prefix := key("kv/", namespace, "")
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix, opts.Reverse = prefix, newestFirst
		it := txn.NewIterator(opts)
		defer it.Close()
		seek := prefix
		if newestFirst {
			seek = append(bytes.Clone(prefix), 0xff)
		}
		n := 0
		for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
			if n++; n%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			item := it.Item()
			var more bool
			if err := item.Value(func(v []byte) error {
				more = fn(string(item.Key()[len(prefix):]), v)
				return nil
			}); err != nil {
				return err
			}
			if !more {
				return nil
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("store: scan %s: %w", namespace, err)
	}
	return nil
}

// CountNamespace returns the number of keys of kv/<namespace>; values are
// not read.
func (s *Store) CountNamespace(ctx context.Context, namespace string) (int, error) {
	prefix := key("kv/", namespace, "")
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix, opts.PrefetchValues = prefix, false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: count %s: %w", namespace, err)
	}
	return n, nil
}

// moveBatch is how many keys one transaction of MoveKeys moves: well
// within Badger's transaction limits.
const moveBatch = 256

// MoveKeys moves every key under prefix (one of the caller's own, outside
// the store's layout) into kv/<namespace>, the rest of the key becoming
// the KV key, and returns how many it moved: how a package that kept keys
// of its own moves to the KV contract. Each transaction sets the new keys
// and deletes the old ones together and is durable before the next, so a
// process killed midway loses nothing, and running it again finishes the
// move (a key already in the namespace is kept: it was written after an
// earlier move, or by it).
func (s *Store) MoveKeys(ctx context.Context, prefix, namespace string) (int, error) {
	if prefix == "" {
		return 0, errors.New("store: move keys: no prefix")
	}
	if err := checkOwnKey([]byte(prefix)); err != nil {
		return 0, err
	}
	moved := 0
	for {
		if err := ctx.Err(); err != nil {
			return moved, err
		}
		type kv struct{ k, v []byte }
		var batch []kv
		err := s.db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = []byte(prefix)
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix) && len(batch) < moveBatch; it.Next() {
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				batch = append(batch, kv{it.Item().KeyCopy(nil), v})
			}
			return nil
		})
		if err != nil {
			return moved, fmt.Errorf("store: move %s: %w", prefix, err)
		}
		if len(batch) == 0 {
			return moved, nil
		}
		var n int64 = txnOverhead
		for _, e := range batch {
			n += entryBytes(key("kv/", namespace, string(e.k[len(prefix):])), len(e.v), s.threshold) + entryBytes(e.k, 0, s.threshold)
		}
		if err := s.guard.admit(n); err != nil {
			return moved, err
		}
		err = s.db.Update(func(txn *badger.Txn) error {
			for _, e := range batch {
				nk := key("kv/", namespace, string(e.k[len(prefix):]))
				if _, err := txn.Get(nk); errors.Is(err, badger.ErrKeyNotFound) {
					if err := txn.Set(nk, e.v); err != nil {
						return err
					}
				} else if err != nil {
					return err
				}
				if err := txn.Delete(e.k); err != nil {
					return err
				}
			}
			return nil
		})
		s.guard.done(n)
		if err == nil {
			err = s.durable()
		}
		if err != nil {
			return moved, fmt.Errorf("store: move %s: %w", prefix, err)
		}
		moved += len(batch)
	}
}
