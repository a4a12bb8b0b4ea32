// Package store keeps memgate's records in an embedded Badger database on
// disk. It implements memory.Store: every Update is one Badger transaction,
// durable on commit (SyncWrites) unless relaxed, with Badger's conflict
// detection serializing transitions of the same slot.
//
// It implements the storage contract of package memory/storeapi, which
// owns the types the rest of memgate sees: the KV area (kv.go, kvscan.go),
// the index of active records with its commit feed and the snapshots
// aligned with it (feed.go: storeapi.Feed, which package search keeps its
// in-memory index with), and the full scans of an export (export.go). What
// it owns beside them is Badger's: the key layout and its indexes (tx.go),
// group commit (groupcommit.go), the disk guard (diskguard.go), the disk
// usage the metrics read (usage.go, a storeapi.Usage), compaction for
// erasure (compact.go), and backups in Badger's own format (backup.go).
//
// Only cmd/ opens it; every other package reads a store through
// memory.Store and storeapi, so that the PostgreSQL store (pgstore) serves
// them too. Tests elsewhere open it to run against a real store.
package store
