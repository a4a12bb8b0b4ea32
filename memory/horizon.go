package memory

import (
	"context"
	"sync"
)

// writesUnderWay tracks the write transactions under way, so that a reader
// following the audit log by event id never passes an id a transaction
// still to commit may hold. Ids are drawn in increasing order (newID), but
// transactions commit in any order: one that drew its ids first can commit
// after another, and a follower that had read the other's events and
// moved its cursor past them would never see the first one's.
type writesUnderWay struct {
	mu     sync.Mutex
	seq    uint64
	floors map[uint64]string // transaction -> an id drawn before any of its own
}

// beginWrite registers a transaction about to name events and notices;
// end, called once it has committed (or failed), unregisters it.
func (g *Governor) beginWrite() (end func()) {
	w := &g.writes
	w.mu.Lock()
	w.seq++
	k := w.seq
	if w.floors == nil {
		w.floors = map[uint64]string{}
	}
	// Drawn under mu: a reader's horizon drawn before it is lower, and
	// one drawn after it sees the floor.
	w.floors[k] = g.newID()
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.floors, k)
		w.mu.Unlock()
	}
}

// eventHorizon is an id below which every event this governor will ever
// write has committed: the lowest floor of the transactions under way, or
// a fresh id when none is. A reader that stops there, and reads in a
// snapshot taken after asking, misses nothing it has passed. Writers in
// other processes sharing the store (a PostgreSQL fleet) are not counted.
func (g *Governor) eventHorizon() string {
	w := &g.writes
	w.mu.Lock()
	defer w.mu.Unlock()
	h := g.newID()
	for _, f := range w.floors {
		h = min(h, f)
	}
	return h
}

// storeUpdate runs fn in a transaction of the store, registered as a
// write under way until it has committed.
func (g *Governor) storeUpdate(ctx context.Context, fn func(Tx) error) error {
	defer g.beginWrite()()
	return g.store.Update(ctx, fn)
}
