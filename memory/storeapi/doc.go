// Package storeapi is the storage contract beside memory.Store: what the
// packages around the governor need of a store, whichever implements it
// (package store, the embedded Badger store; package pgstore, PostgreSQL).
// It owns the contract's types and interfaces and nothing that runs: it
// imports only package memory and the standard library, and no package
// outside cmd/ needs to import a store to use one.
//
//   - kv.go: ErrNotFound and the small key-value area (KV, KVScanner,
//     KVDeleter) that the Slack loop, the reminder, the Markdown guard,
//     the Mem0 event log, snapshots and the erasure journal keep values in.
//   - active.go: the index of active records as a read sees it
//     (ActiveEntry, read through an ActiveScanner), the commit feed of its
//     changes (ActiveFeed, ActiveChange, CommitOutcome) and the snapshots
//     aligned with that feed (Snapshot, Feed), which package search keeps
//     its in-memory index with. Both stores scan; the Badger store also
//     has the feed.
//   - export.go: the full scans of a read transaction that the
//     store-neutral snapshot stream is written from (ExportTx).
//   - usage.go: what a store on local disk occupies (Usage), for the
//     disk metrics.
//
// A package that needs less asks for less: KV rather than KVScanner, an
// ActiveScanner rather than a Feed.
package storeapi
