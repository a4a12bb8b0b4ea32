package memory

import (
	"context"
	"hash/fnv"
	"sync"

	"github.com/memgate/memgate/textfold"
)

// One fact, one active version, for free text (DESIGN §1 rule 1). A write
// that policy places in a named slot (subject, fact type) meets the other
// versions of its fact there. A free-text write that it cannot place
// would open a slot of its own; before it does, a FactMatcher looks for the
// active memory of the same subject and scope that states the same fact:
//   - a repeat (its text, normalised or paraphrased, states what the
//     memory states) changes nothing: the answer is "unchanged" with the
//     memory's active version, whatever the write's own risk, since
//     nothing the agent reads changes;
//   - an update (a new value of the memory's fact) goes to the memory's
//     slot, where policy sees the memory as current and decides as for
//     any override: the review shows what it replaces, approval
//     supersedes it, rollback brings it back. A matcher never applies
//     anything itself;
//   - a possible conflict (the matcher is unsure it is one fact) stays a
//     memory of its own, since a lost fact is worse than a repeat, and the
//     record names the memory it may conflict with (Record.FactMatch), so
//     explain shows it.
//
// Matching and writing must be one step, or two identical writes at once
// would both find nothing and both open a slot. The free-text writes of a
// subject therefore take the subject's fact lock (in the process, and in
// a store shared by a fleet its FactLocker) before the matcher reads and
// release it once their transaction has committed, so the next one's
// matcher sees it. Writes policy places in a slot, and edits by id, do not
// take it: they meet in their slot's lock.

// FactMatcher finds the active memory a free-text write repeats or states
// a new value of (package facts implements it over the search index).
type FactMatcher interface {
	// MatchFact returns the best match for rec among the active memories
	// of its subject and scope, of the caller's tenant, or nil. An error
	// means no match: the write keeps a slot of its own.
	MatchFact(ctx context.Context, rec *Record) (*FactMatch, error)
}

// MatchKind is how a free-text write relates to an active memory.
type MatchKind string

const (
	MatchRepeat   MatchKind = "repeat"   // states what the memory states: a no-op
	MatchUpdate   MatchKind = "update"   // a new value of the memory's fact: goes to its slot
	MatchPossible MatchKind = "possible" // may be one fact: kept apart, and named
)

// MatchKinds lists every match kind (metrics label values).
var MatchKinds = []MatchKind{MatchRepeat, MatchUpdate, MatchPossible}

// FactMatch names the active memory a write was matched with, and why.
// The record of a write that was matched keeps it (Record.FactMatch).
type FactMatch struct {
	Kind     MatchKind `json:"kind"`
	SlotID   string    `json:"slotId"`
	RecordID string    `json:"recordId"`
	Reason   string    `json:"reason,omitempty"`
	// Record is the matched active version, for the governor; not kept.
	Record *Record `json:"-"`
}

// FactLocker is a Store shared by several processes that serializes the
// free-text writes of one subject among them (pgstore: an advisory lock).
// The governor takes it after its own fact lock and releases it once the
// write has committed.
type FactLocker interface {
	LockFacts(ctx context.Context, key string) (unlock func(), err error)
}

// FactObserver is an Observer that also counts what the fact matcher
// found, after the write committed (metrics implements it).
type FactObserver interface {
	FactMatched(kind MatchKind)
}

// SameText reports whether two memory texts are the same to a reader:
// equal after case, width, look-alikes, white space and the punctuation
// that frames words are folded (textfold.Key).
func SameText(a, b string) bool { return textfold.Key(a) == textfold.Key(b) }

// factLocks serialize the free-text writes of one subject in the process.
// They are taken before any slot's stripe lock and never while one is
// held, so they cannot deadlock with them.
type factLocks [64]sync.Mutex

func factKey(rec *Record) string { return rec.SubjectID }

// lockFacts takes the fact lock of rec's subject: the process's, then the
// store's if it is shared. The returned unlock is safe to call twice.
func (g *Governor) lockFacts(ctx context.Context, rec *Record) (func(), error) {
	key := factKey(rec)
	h := fnv.New32a()
	h.Write([]byte(key))
	m := &g.facts[h.Sum32()%uint32(len(g.facts))]
	m.Lock()
	var storeUnlock func()
	if fl, ok := g.store.(FactLocker); ok {
		u, err := fl.LockFacts(ctx, key)
		if err != nil {
			m.Unlock()
			return nil, err
		}
		storeUnlock = u
	}
	return sync.OnceFunc(func() {
		if storeUnlock != nil {
			storeUnlock()
		}
		m.Unlock()
	}), nil
}

// matchesFacts reports whether a write is free text the matcher looks at:
// a new memory with text and no slot of a fact (placeRecord gave it a slot
// of its own), without a secret (it is rejected anyway), from a writer
// that does not keep its memories apart. The Markdown guard does (each
// entry is a line of a file; its diff pairs an edited entry with the
// entry's slot), and so does the adoption of a file's baseline.
func (g *Governor) matchesFacts(w *write) bool {
	rec := w.rec
	return g.matcher != nil && rec.Op == OpWrite && !w.byID && !w.adopt && !w.apart && rec.SlotID == rec.ID &&
		rec.FactType == "" && rec.Summary != "" && len(w.findings) == 0
}

// matchFact asks the matcher about the write and, for a repeat or an
// update, moves it to the matched memory's slot. A matcher's error, or a
// match another tenant's, leaves the write in a slot of its own.
func (g *Governor) matchFact(ctx context.Context, w *write) {
	rec := w.rec
	m, err := g.matcher.MatchFact(ctx, rec)
	if err != nil {
		g.log.Warn("fact matcher failed; the write keeps a memory of its own", "err", err, "record", rec.ID)
		return
	}
	if m == nil || m.Record == nil || m.Record.Status != StatusActive || !w.tenant.Covers(m.Record.Scope) ||
		m.Record.SubjectID != rec.SubjectID {
		return
	}
	w.matched(m)
}

// relate reads the memory a writer found its write related to
// (Candidate.Related) and matches the write with its active version as
// matchFact does with the matcher's answer; a memory that is gone, or no
// longer active, leaves the write in its own slot.
func (g *Governor) relate(ctx context.Context, w *write, hint *FactMatch) error {
	if hint.Kind != MatchRepeat && hint.Kind != MatchUpdate {
		return nil
	}
	var st SlotState
	err := g.store.View(ctx, func(tx ReadTx) (err error) {
		st, err = loadSlot(tx, hint.SlotID)
		return err
	})
	if ErrorCode(err) == ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	a := st.Active()
	if a == nil || !w.tenant.Covers(a.Scope) || a.SubjectID != w.rec.SubjectID || a.Scope != w.rec.Scope {
		return nil
	}
	m := *hint
	m.Record = a
	w.matched(&m)
	return nil
}

// matched moves the write to the slot of the active record m names, for a
// repeat or an update, and keeps the match on the record.
func (w *write) matched(m *FactMatch) {
	rec := w.rec
	note := *m
	note.SlotID, note.RecordID, note.Record = m.Record.SlotID, m.Record.ID, nil
	rec.FactMatch = &note
	w.match = m.Kind
	if m.Kind == MatchRepeat || m.Kind == MatchUpdate {
		rec.SlotID, rec.FactType = m.Record.SlotID, m.Record.FactType
		w.repeatOf = ""
		if m.Kind == MatchRepeat {
			w.repeatOf = m.Record.ID
		}
	}
}

// repeats reports whether the write repeats st's active version: the one
// the matcher found, or any with the same text (textfold.Key).
func (w *write) repeats(st SlotState) bool {
	a := st.Active()
	return w.repeatOf != "" && a != nil && (a.ID == w.repeatOf || SameText(a.Summary, w.rec.Summary))
}
