package store

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// checkOwnKey refuses keys under the store's own prefixes: other packages
// write beside the records, never into their layout.
func checkOwnKey(k []byte) error {
	for _, p := range layoutPrefixes {
		if bytes.HasPrefix(k, []byte(p)) {
			return fmt.Errorf("store: key %q: the %s prefix belongs to the store", k, p)
		}
	}
	return nil
}

// WriteBatch sets and deletes keys of the caller's own prefix in batches,
// without waiting for them to be durable: for what can be rebuilt after a
// crash (the embeddings of records, which are recomputed when missing). It
// goes through the disk guard as every write does. Keys under the store's
// own prefixes are refused.
func (s *Store) WriteBatch(ctx context.Context, sets map[string][]byte, deletes []string) error {
	var n int64
	for k, v := range sets {
		if err := checkOwnKey([]byte(k)); err != nil {
			return err
		}
		n += entryBytes([]byte(k), len(v), s.threshold)
	}
	for _, k := range deletes {
		if err := checkOwnKey([]byte(k)); err != nil {
			return err
		}
		n += entryBytes([]byte(k), 0, s.threshold)
	}
	if n == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.guard.admit(n); err != nil {
		return err
	}
	defer s.guard.done(n)
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for k, v := range sets {
		if err := wb.Set([]byte(k), v); err != nil {
			return fmt.Errorf("store: batch set %q: %w", k, err)
		}
	}
	for _, k := range deletes {
		if err := wb.Delete([]byte(k)); err != nil {
			return fmt.Errorf("store: batch delete %q: %w", k, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("store: batch: %w", err)
	}
	return nil
}

// ScanPrefix calls fn with each key under prefix (one of the caller's own)
// and its value, in key order, until fn returns false. Both are valid only
// during the call.
func (s *Store) ScanPrefix(ctx context.Context, prefix string, fn func(k, v []byte) bool) error {
	if err := checkOwnKey([]byte(prefix)); err != nil {
		return err
	}
	return s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte(prefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix); it.Next() {
			if n++; n%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			var more bool
			err := it.Item().Value(func(v []byte) error {
				more = fn(it.Item().Key(), v)
				return nil
			})
			if err != nil {
				return fmt.Errorf("store: scan %q: %w", prefix, err)
			}
			if !more {
				return nil
			}
		}
		return nil
	})
}
