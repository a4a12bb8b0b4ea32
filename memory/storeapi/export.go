package storeapi

import "github.com/memgate/memgate/memory"

// ExportTx is a read transaction everything a store holds can be read
// from: the full scans a store's read transactions offer beside
// memory.ReadTx, which package snapshot writes the store-neutral stream
// from (store and pgstore implement them).
type ExportTx interface {
	memory.ReadTx
	// ScanRecords calls fn for every record, any status, in id order.
	ScanRecords(fn func(*memory.Record) bool) error
	// ScanSlots calls fn for every slot, in id order.
	ScanSlots(fn func(*memory.Slot) bool) error
	// ScanRollbackPoints calls fn for every rollback point, in id order.
	ScanRollbackPoints(fn func(*memory.RollbackPoint) bool) error
	// ScanKV calls fn for every value kept through KV.Put, by namespace
	// then key; value is valid only during the call.
	ScanKV(fn func(namespace, key string, value []byte) bool) error
}
