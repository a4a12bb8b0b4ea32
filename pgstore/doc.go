// Package pgstore keeps memgate's records in PostgreSQL (15 or later), so
// that several memgate instances share one governed memory: one review
// queue, one audit log, one outbox. It implements memory.Store as package
// store does over Badger, with the same JSON encoding of each entity and
// the same order in every scan (ids compare bytewise: COLLATE "C").
//
// Isolation. Update runs fn in a SERIALIZABLE transaction and runs it
// again, with a jittered backoff, when PostgreSQL reports a serialization
// failure (40001) or a deadlock (40P01). The governor's rules are
// read-validate-write over several rows (the slot's head and Rev, its
// pending writes, the record a review decides on): with row locks every
// such read would have to lock, and a forgotten one would break "one
// active version per slot" silently; under SERIALIZABLE a transaction
// whose reads another changed does not commit, which is what Badger's
// conflict detection gives package store today, so package memory does
// not change. View runs in a REPEATABLE READ READ ONLY transaction: one
// snapshot, as a Badger View; it decides nothing (the governor checks
// what it read from a snapshot again in its Update). The outbox's leases
// and KV writes are single statements on rows they lock, in READ
// COMMITTED (SKIP LOCKED is meant for it).
//
// Round trips. Writes return nothing fn needs, so a transaction queues
// them and sends them together (a pipeline) before its next read or its
// COMMIT; an apply is then BEGIN, a read, the writes, COMMIT. A write's
// error comes back from the read or the Update after it.
//
// Failures. An error that says the database cannot be reached or is going
// away (connection refused or reset, admin shutdown 57P01, cannot connect
// now 57P03, a deadline while connecting) is returned as a memory error
// with code EUNAVAILABLE, which the HTTP layers answer with 503. A write
// is reported done only when COMMIT returned OK; a connection lost during
// COMMIT leaves the outcome unknown and is reported as EUNAVAILABLE too,
// never as success. An Update whose connection broke before COMMIT runs
// once more on a fresh connection (memory.Store lets fn run again); a
// View's fn, which may keep what it read, runs again only if it had not
// started. The pool replaces broken connections by itself, so
// the store keeps working once the database is back, without reopening.
// Writable answers from the last outcome, probing at most once a second.
//
// Schema. Embedded, versioned migrations (migrations/NNNN_*.sql) are
// applied at Open in one transaction holding an advisory lock, and
// recorded in memgate_schema_migrations: instances starting at once apply
// each once. The audit log (memgate_events) refuses UPDATE, DELETE and
// TRUNCATE with a trigger.
//
// The storage contract. Beside memory.Store it implements what package
// memory/storeapi defines, and shares no code or type with package store:
// the KV area with ErrNotFound, scans by namespace and deletes (kv.go,
// kvdelete.go: storeapi.KVScanner, KVDeleter); read transactions that are
// storeapi.Snapshots (ScanActiveIndex, package search's loader) and
// storeapi.ExportTxs (ScanRecords, ScanSlots, ScanRollbackPoints and
// ScanKV, for a snapshot export: scans.go). It has no commit feed
// (storeapi.Feed): search scans it on each read. What it owns beside them
// is PostgreSQL's: the schema and its migrations, isolation and retries,
// the pipeline of writes, and ClaimNotices (the outbox of a fleet).
package pgstore
