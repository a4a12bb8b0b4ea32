package storeapi

import (
	"context"
	"time"

	"github.com/memgate/memgate/memory"
)

// The index of active records, as package search reads it and keeps parts
// of it in memory (search/doc.go says how they stay consistent). A store
// offers up to three things:
//
//   - a scan (ActiveScanner): the index of one snapshot, each entry with a
//     version; every store's read transactions offer it;
//   - a feed (Feed.Follow): each commit that changes the index hands its
//     changes to each ActiveFeed after the commit returns and before the
//     write is acknowledged, with Begin/End around the commit;
//   - an aligned snapshot (Feed.ViewAligned): a snapshot opened while no
//     commit with changes is between Begin and End, so it holds exactly
//     the commits whose End has run.
//
// The Badger store (store/feed.go) has all three; the PostgreSQL store
// only the scan.

// ActiveEntry is what the index of active records holds of one active
// record: the fields a read filters and ranks on without loading it.
type ActiveEntry struct {
	ID        string
	SubjectID string
	Layer     memory.Layer
	Scope     memory.Scope
	Summary   string
	// The record's creation and activation times; zero in entries whose
	// index value was written before the index held them (the Badger
	// store's version 1).
	CreatedAt, ActivatedAt time.Time
}

// ActiveScanner is a read transaction that reads its store's index of
// active records: ScanActiveIndex calls fn with each entry of one subject
// (or all, for an empty subjectID) whose scope holds every non-empty id of
// scope, in key order (subject, record id), with a version that grows with
// each change of that record's entry, until fn returns false. Strings that
// repeat (subjects, layers, scope ids) may be shared between the entries
// of one scan.
type ActiveScanner interface {
	ScanActiveIndex(ctx context.Context, subjectID string, scope memory.Scope, fn func(ActiveEntry, uint64) bool) error
}

// Snapshot is a read-only snapshot of a store: its records
// (memory.ReadTx) and its index of active records, of the same commits.
type Snapshot interface {
	memory.ReadTx
	ActiveScanner
}

// ActiveChange is one change a commit made to the index of active
// records: the record's entry set (Active) or removed.
type ActiveChange struct {
	ActiveEntry
	Active bool
}

// CommitOutcome is how a commit with changes ended.
type CommitOutcome int

const (
	// Committed: every change is in the store.
	Committed CommitOutcome = iota
	// Conflicted: the store refused the transaction; nothing was written.
	Conflicted
	// Failed: another error; the store may hold some of the changes.
	Failed
)

// ActiveFeed hears of every commit that changes the index of active
// records (Feed.Follow).
//
// Versions order the changes of one key: commits return in any order, but
// a change's version is above the version of every change of the same key
// that committed before its transaction read, and an entry a Snapshot
// scans has its key's version. A change applies to a key whose version is
// at most its own. (The Badger store: a change's version is its
// transaction's read timestamp plus one, an entry's its key's commit
// timestamp; store/feed.go says why they order.)
type ActiveFeed interface {
	// Begin is called before the store commits a transaction with
	// changes, with the version they carry.
	Begin(version uint64)
	// End is called once the commit returned, with its changes and
	// outcome, before the write is acknowledged. The feed must not keep
	// changes.
	End(version uint64, changes []ActiveChange, outcome CommitOutcome)
}

// Feed is a store with a commit feed of its index of active records and
// snapshots aligned with it.
type Feed interface {
	// Follow makes feed hear of every commit that changes the index from
	// now on, until stop is called. A commit either reaches feed or
	// returned before Follow did (and a snapshot opened later holds it).
	// Feeds are told in the order they were added.
	Follow(feed ActiveFeed) (stop func())
	// ViewSnapshot runs fn in a read-only snapshot.
	ViewSnapshot(ctx context.Context, fn func(Snapshot) error) error
	// ViewAligned runs fn in a snapshot aligned with the feed: it holds
	// every commit whose End has run and no other, and pin is called
	// while that holds (a follower takes what it has applied). pin must
	// be quick and must not write.
	ViewAligned(ctx context.Context, pin func(), fn func(Snapshot) error) error
}
