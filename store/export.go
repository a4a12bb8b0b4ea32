package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// The scans a store-neutral snapshot reads (package snapshot): every
// record, slot, rollback point and kv entry of one read transaction, in key
// order. With ScanEvents and ScanNotices of memory.ReadTx they cover the
// store's layout but for its indexes, which writing the entities rebuilds.
// Embeddings (em/) live outside the layout and are not scanned: they are
// recomputed from the records. The Mem0 event log is in the KV area, so
// a snapshot carries it, as on every store.

var _ storeapi.ExportTx = (*tx)(nil)

// ScanRecords calls fn for every record, whatever its status, in id order,
// until fn returns false.
func (t *tx) ScanRecords(fn func(*memory.Record) bool) error {
	return scanValues(t, "r/", "record", fn)
}

// ScanSlots calls fn for every slot, in id order, until fn returns false.
func (t *tx) ScanSlots(fn func(*memory.Slot) bool) error {
	return scanValues(t, "s/", "slot", fn)
}

// ScanRollbackPoints calls fn for every rollback point, in id order, until
// fn returns false.
func (t *tx) ScanRollbackPoints(fn func(*memory.RollbackPoint) bool) error {
	return scanValues(t, "p/", "rollback point", fn)
}

// ScanKV calls fn for every value kept through Put, by namespace then key,
// until fn returns false. value is valid only during the call.
func (t *tx) ScanKV(fn func(namespace, key string, value []byte) bool) error {
	prefix := []byte("kv/")
	return t.scanItems(prefix, func(item *badger.Item) (bool, error) {
		rest := item.Key()[len(prefix):]
		// Namespaces are the callers' constants, never holding the separator.
		ns, k, ok := bytes.Cut(rest, []byte(sep))
		if !ok {
			return false, fmt.Errorf("kv key %q has no namespace", item.Key())
		}
		more := true
		err := item.Value(func(v []byte) error {
			more = fn(string(ns), string(k), v)
			return nil
		})
		return more, err
	})
}

// scanValues decodes the JSON value of every key under prefix into a new T.
func scanValues[T any](t *tx, prefix, what string, fn func(*T) bool) error {
	return t.scanItems([]byte(prefix), func(item *badger.Item) (bool, error) {
		v := new(T)
		if err := item.Value(func(b []byte) error { return json.Unmarshal(b, v) }); err != nil {
			return false, fmt.Errorf("decode %s %s: %w", what, item.Key()[len(prefix):], err)
		}
		return fn(v), nil
	})
}

// scanItems calls fn with every item under prefix, values prefetched, in
// key order, until fn returns false or an error.
func (t *tx) scanItems(prefix []byte, fn func(*badger.Item) (bool, error)) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	it := t.txn.NewIterator(opts)
	defer it.Close()
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		more, err := fn(it.Item())
		if err != nil || !more {
			return err
		}
	}
	return nil
}
