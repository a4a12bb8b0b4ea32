// Package search owns the read side of the active layer: an in-memory
// index of the active records kept consistent with the store's commits,
// text analysis (text.go: English stemming, CJK), lexical ranking (bm25.go),
// optional ranking by meaning (semantic.go), top-K, and the one filter AST
// every dialect compiles to (filter.go). The Mem0 handler, the native list
// route and, through the Mem0 handler, the MCP tools read through it.
//
// # The index and its consistency with commits
//
// The store keeps an index of active records, key a/<subject>\0<record>,
// whose value holds what a read filters and ranks on
// (storeapi.ActiveEntry). Scanning 10,000 of them in Badger takes ~4 ms;
// testing them in memory a tenth of that (DESIGN §7: search of a
// 10,000-record subject ≤ 1 ms). So the Index keeps parts of it in memory:
// the entries of one subject, or of one entity id of a scope (a Mem0 user,
// agent, app or run, whose records may lie under any subject). A part is
// loaded by one scan of the store's index (storeapi.Snapshot's
// ScanActiveIndex) on its first read, then follows the changes each commit
// makes to a/ keys, which the store hands to the Index (it is the store's
// storeapi.ActiveFeed) after Badger's commit returns and before Update
// does. Nothing is persisted: after a restart parts load again. Parts are
// evicted, least recently used first, to keep their estimated size within
// Options.Budget; a part larger than the budget is not kept, and its reads
// scan the store's index.
//
// That is for a store with a commit feed (FeedStore: the Badger store;
// New). A store without one (the PostgreSQL store; Open) offers only
// memory.Store's View, whose read transactions scan its index of active
// records (storeapi.ActiveScanner). The index then keeps no parts: each
// read is one scan in one View, tested and ranked by the same code as a
// read of a part, so the answers are the same (the tests run the same
// reads over both kinds). The invariants below concern parts and hold
// trivially there; a read's entries and records still come from one
// snapshot, and activeRecord still asserts it. Open refuses a store that
// has neither.
//
// Invariant 1, alignment: a read sees a part and a snapshot holding the
// same commits. A commit with changes enters the store's gate (shared)
// before Badger commits and leaves it after End; a read opens its snapshot
// with the gate closed (storeapi.Feed's ViewAligned) and pins the part
// then. So every commit is in both or in neither, and each entry of the
// part names a record that is active in the snapshot, under that subject.
// Reads assert it: activeRecord answers an internal error otherwise. A
// failed commit (Badger may hold some of it) drops the parts it touches.
//
// Invariant 2, order: commits return in any order, so a change may arrive
// after a later change of the same key. Every transaction that changes a
// record's a/ key has read the record; the store refuses the change
// otherwise (store's errReadBeforeChange). Badger's conflict detection
// therefore orders any two of them: the later read at or after the earlier
// one's commit timestamp. A change carries its transaction's read
// timestamp plus one as version, a loaded entry its key's commit
// timestamp, and a change applies only at or above the version the key
// holds. A key's last version is kept (recent) until no commit that could
// be older is in flight, so a removal is not undone by an older set.
//
// Invariant 3, loading: a part is registered as loading before its scan's
// snapshot is opened. A commit that ends before that is in the snapshot;
// one that ends after is buffered and applied, by invariant 2, once the
// scan is in.
//
// Readers hold a part's entries without copying them. The entries sit in
// chunks of 256–512; a change copies only the chunk, and the list of
// chunks, a reader may hold (part.go). What readers derive from entries
// (the joined lower-case text List searches, the term counts BM25 needs)
// is kept with them in memos that a change renews.
//
// The tests hold every commit path to a fresh scan of the store's index
// after every step (index_test.go), commits ending out of order, readers
// beside writers, a restart, the budget, List to a plain scan of every
// active record (search_test.go), and Search to Rank over a listing
// (proxy/mem0's search_equiv_test.go and search_cache_test.go), and the
// same reads through a part, a scan and a store without a feed
// (source_test.go). The store tests that a change without a read is
// refused and that an aligned snapshot's pin runs between commits
// (store/feed_test.go).
package search
