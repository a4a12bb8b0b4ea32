package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// The Badger store's side of the contract of the index of active records
// (memory/storeapi/active.go), which package search keeps parts of in
// memory (search/doc.go says how the two stay consistent). The index is
// the a/ keys; the store offers:
//
//   - a feed: each commit that changes a/ keys hands its changes to each
//     storeapi.ActiveFeed (Follow) after Badger's commit returns and
//     before Update does, with Begin/End around the commit;
//   - an aligned snapshot (ViewAligned): a read transaction opened while
//     no commit with changes is between Begin and End, so it holds exactly
//     the commits whose End has run;
//   - a loader (the snapshot's ScanActiveIndex): the a/ index of a
//     snapshot, each entry with its key's version.
//
// Versions order the changes of one key: commits return in any order, but
// a transaction that changes a record's a/ key has read the record (the
// store enforces it: errReadBeforeChange), so Badger's conflict detection
// orders any two of them, and the later one read at or after the earlier
// one's commit timestamp. A change's version is its transaction's read
// timestamp plus one; an entry ScanActiveIndex loads has its key's commit
// timestamp.

var _ storeapi.Feed = (*Store)(nil)

func entryOf(r *memory.Record) storeapi.ActiveEntry {
	return storeapi.ActiveEntry{ID: r.ID, SubjectID: r.SubjectID, Layer: r.Layer, Scope: r.Scope, Summary: r.Summary,
		CreatedAt: r.CreatedAt, ActivatedAt: r.ActivatedAt}
}

// commitGate lines commits up with aligned snapshots. A commit with changes
// enters it (shared) before Badger's commit and leaves it after the feed's
// End; ViewAligned closes it (alone) while it opens its snapshot and pins
// the feed's state. A commit is then in both or in neither.
type commitGate struct{ mu sync.RWMutex }

func (g *commitGate) enter() { g.mu.RLock() }
func (g *commitGate) leave() { g.mu.RUnlock() }
func (g *commitGate) close() { g.mu.Lock() }
func (g *commitGate) open()  { g.mu.Unlock() }

// Follow makes feed hear of every commit that changes the a/ index from
// now on, until stop is called. It waits for commits in flight, so a
// commit either reaches feed or returned before Follow did (and a snapshot
// opened later holds it). Each feed is told in the order they were added.
func (s *Store) Follow(feed storeapi.ActiveFeed) (stop func()) {
	s.gate.close()
	s.feeds = append(slices.Clone(s.feeds), feed)
	s.gate.open()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.gate.close()
			defer s.gate.open()
			if i := slices.Index(s.feeds, feed); i >= 0 {
				s.feeds = slices.Delete(slices.Clone(s.feeds), i, i+1)
			}
		})
	}
}

// errReadBeforeChange is a store bug: the a/ key of a record changed in a
// transaction that had not read the record, so nothing orders the change
// against another transaction's (see the versions above).
var errReadBeforeChange = errors.New("store: the active index changed for a record this transaction did not read")

// readRecord notes that t read record id (found or not): Badger's conflict
// detection then orders t against any transaction that writes it.
func (t *tx) readRecord(id string) {
	if t.readOnly {
		return
	}
	if t.read == nil {
		t.read = make(map[string]struct{}, 4)
	}
	t.read[id] = struct{}{}
}

// activeChanged notes a change of the record's entry in the a/ index, for
// the feed once the transaction commits. It refuses a record t has not
// read (see the versions above).
func (t *tx) activeChanged(r *memory.Record, active bool) error {
	if _, ok := t.read[r.ID]; !ok {
		return fmt.Errorf("%w: %s", errReadBeforeChange, r.ID)
	}
	if n := len(t.changes); n > 0 && t.changes[n-1].ID == r.ID && t.changes[n-1].SubjectID == r.SubjectID &&
		t.changes[n-1].Scope == r.Scope {
		t.changes = t.changes[:n-1] // the same entry changed again (removed, then set): the last change holds
	}
	t.changes = append(t.changes, storeapi.ActiveChange{ActiveEntry: entryOf(r), Active: active})
	return nil
}

// commit commits t's transaction and hands its changes of the a/ index to
// the feed, before the caller acknowledges the write.
func (s *Store) commit(t *tx) (err error) {
	if len(t.changes) == 0 {
		return s.commitChained(t)
	}
	s.gate.enter()
	defer s.gate.leave()
	feeds := s.feeds // Follow changes them only with the gate closed
	if len(feeds) == 0 {
		return s.commitChained(t)
	}
	version := t.txn.ReadTs() + 1
	for _, f := range feeds {
		f.Begin(version)
	}
	returned := false
	defer func() {
		if !returned { // Commit panicked: the version must not stay in flight, and what Badger kept is unknown
			for _, f := range feeds {
				f.End(version, t.changes, storeapi.Failed)
			}
		}
	}()
	err = s.commitChained(t)
	returned = true
	outcome := storeapi.Committed
	switch {
	case errors.Is(err, badger.ErrConflict):
		outcome = storeapi.Conflicted
	case err != nil:
		outcome = storeapi.Failed
	}
	for _, f := range feeds {
		f.End(version, t.changes, outcome)
	}
	return err
}

// snapshot is a read-only snapshot of the store (storeapi.Snapshot):
// memory.ReadTx, and the a/ index with each key's version.
type snapshot struct {
	memory.ReadTx
	txn *badger.Txn
}

var _ storeapi.Snapshot = (*snapshot)(nil)

// ViewSnapshot runs fn in a read-only snapshot.
func (s *Store) ViewSnapshot(ctx context.Context, fn func(storeapi.Snapshot) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: view: %w", err)
	}
	return s.db.View(func(txn *badger.Txn) error {
		return fn(&snapshot{ReadTx: &tx{txn: txn, db: s.db, readOnly: true}, txn: txn})
	})
}

// ViewAligned runs fn in a snapshot aligned with the feed: opened with the
// gate closed, so it holds every commit whose End has run and no other,
// and pin is called then too (the feed takes what it has applied). pin
// must be quick and must not write.
func (s *Store) ViewAligned(ctx context.Context, pin func(), fn func(storeapi.Snapshot) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: view: %w", err)
	}
	s.gate.close()
	txn := s.db.NewTransaction(false)
	pin()
	s.gate.open()
	defer txn.Discard()
	return fn(&snapshot{ReadTx: &tx{txn: txn, db: s.db, readOnly: true}, txn: txn})
}

// ScanActiveIndex calls fn with each entry of the a/ index, of one subject
// when subjectID is not empty, whose scope holds every non-empty id of
// scope, in key order (subject, record id), with the version of its key,
// until fn returns false. Entries whose index value holds no fields are
// filled from their records. Strings that repeat (subjects, layers, scope
// ids) are shared between the entries of one scan.
func (sn *snapshot) ScanActiveIndex(ctx context.Context, subjectID string, scope memory.Scope, fn func(storeapi.ActiveEntry, uint64) bool) error {
	prefix := []byte("a/")
	if subjectID != "" {
		prefix = append(key("a/", subjectID), 0)
	}
	// The first entity id the scope names, tested on the raw value so that
	// another entity's entries are not parsed.
	field, want := 0, ""
	for i, id := range []string{scope.UserID, scope.AgentID, scope.AppID, scope.RunID} {
		if id != "" {
			field, want = i+1, id
			break
		}
	}
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false // small values live in the tree: read in place
	opts.Prefix = prefix
	it := sn.txn.NewIterator(opts)
	defer it.Close()
	intern := map[string]string{}
	in := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		intern[s] = s
		return s
	}
	n := 0
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return fmt.Errorf("store: scan active index: %w", ctx.Err())
		}
		item := it.Item()
		k := item.Key()[2:] // <subject>\0<record>
		at := bytes.LastIndexByte(k, 0)
		if at < 0 {
			return fmt.Errorf("store: malformed active index key %q", item.Key())
		}
		var e storeapi.ActiveEntry
		var ok, skip bool
		err := item.Value(func(v []byte) error {
			if f, known := activeValueField(v, field); field > 0 && known && string(f) != want {
				skip = true // another entity's: not worth parsing
				return nil
			}
			ok = parseActiveValue(v, &e)
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: read active index %q: %w", item.Key(), err)
		} else if skip {
			continue
		}
		rid := string(k[at+1:])
		if !ok {
			r, err := sn.Record(rid)
			if err != nil {
				return err
			}
			e = entryOf(r)
		}
		if !scopeHolds(e.Scope, scope) {
			continue
		}
		e.ID, e.SubjectID, e.Layer = rid, in(string(k[:at])), memory.Layer(in(string(e.Layer)))
		e.Scope = memory.Scope{UserID: in(e.Scope.UserID), AgentID: in(e.Scope.AgentID), AppID: in(e.Scope.AppID), RunID: in(e.Scope.RunID)}
		if !fn(e, item.Version()) {
			return nil
		}
	}
	return nil
}

// scopeHolds reports whether s has each non-empty id of want.
func scopeHolds(s, want memory.Scope) bool {
	return (want.UserID == "" || s.UserID == want.UserID) && (want.AgentID == "" || s.AgentID == want.AgentID) &&
		(want.AppID == "" || s.AppID == want.AppID) && (want.RunID == "" || s.RunID == want.RunID)
}

// activeValueField returns field i (0 layer, 1–4 the scope's user, agent,
// app and run ids) of an index value, if it holds fields.
func activeValueField(v []byte, i int) ([]byte, bool) {
	v, _, _, ok := activeValueFields(v)
	if i < 0 || !ok {
		return nil, false
	}
	for ; ; i-- {
		end := bytes.IndexByte(v, 0)
		if end < 0 {
			return nil, false
		}
		if i == 0 {
			return v[:end], true
		}
		v = v[end+1:]
	}
}
