package memory

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"
)

// Store persists records, slots, rollback points, the audit log and the
// notification outbox. Implementations apply everything written in one
// Update atomically and durably, and detect conflicting concurrent updates
// (returning an error for which IsConflict is true, or retrying internally).
type Store interface {
	// Update runs fn in a read-write transaction. fn may run more than once
	// if the transaction conflicts with another; it must not keep state
	// across runs.
	Update(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only snapshot.
	View(ctx context.Context, fn func(ReadTx) error) error
}

// SyncDeferrer is a Store that can commit a transaction and wait for it to
// be durable as two steps. The governor releases a slot's lock in between,
// so the next write to the slot does not wait for this one's sync: it
// commits after this one, and the sync that makes it durable makes this
// one durable too. Every write is still acknowledged only once durable.
type SyncDeferrer interface {
	// UpdateThenSync runs fn as Update does and returns once the
	// transaction has committed, with sync, which returns once it is
	// durable.
	UpdateThenSync(ctx context.Context, fn func(Tx) error) (sync func() error, err error)
}

// ReadTx reads a consistent snapshot. Lookups of unknown ids return an error
// with code ENOTFOUND.
type ReadTx interface {
	Record(id string) (*Record, error)
	Slot(id string) (*Slot, error)
	RollbackPoint(id string) (*RollbackPoint, error)
	// SlotRecords returns every record of a slot, oldest first.
	SlotRecords(slotID string) ([]*Record, error)
	// SlotPending returns the slot's pending records, oldest first.
	SlotPending(slotID string) ([]*Record, error)
	// SubjectSlots returns the ids of the slots about a subject.
	SubjectSlots(subjectID string) ([]string, error)
	// ScanActive calls fn for each active record, of one subject when
	// subjectID is not empty, oldest first, until fn returns false.
	ScanActive(subjectID string, fn func(*Record) bool) error
	// ScanPending calls fn for each pending record, oldest first.
	ScanPending(fn func(*Record) bool) error
	// ScanByActor calls fn for each record written by a run/session id
	// (kind "run") or an agent/user id (kind "actor"), oldest first.
	ScanByActor(kind, id string, fn func(*Record) bool) error
	// ScanEvents calls fn for each audit event after the given event id
	// ("" = from the start), oldest first.
	ScanEvents(after string, fn func(*Event) bool) error
	// RecordEvents returns the audit events of one record, oldest first.
	RecordEvents(recordID string) ([]*Event, error)
	// ScanNotices calls fn for each undelivered notice, oldest first.
	ScanNotices(fn func(*Notice) bool) error
}

// ActiveEntry is what a store's index of active records may hold about a
// record: the fields a ListFilter tests, so List can skip loading the
// records that do not pass.
type ActiveEntry struct {
	ID        string
	SubjectID string
	Layer     Layer
	Scope     Scope
	Summary   string
	// Lower is Summary in lower case, and Memo a place for what a reader
	// derives from Summary, when the entry comes from a store's cache
	// (ActiveCache): each query then need not derive them again. Both are
	// empty otherwise.
	Lower string
	Memo  *Memo
	// The record's creation and activation times, where the index holds
	// them; a zero CreatedAt means it does not.
	CreatedAt, ActivatedAt time.Time
}

// Memo holds what readers derived from an entry's summary, or from the
// entries of a part (List keeps the summaries joined, the Mem0 search term
// counts), one value per key: each reader keys with a type of its own.
// Concurrent readers may store under one key; they store the same thing.
type Memo struct{ slots atomic.Pointer[[]memoSlot] }

type memoSlot struct{ key, val any }

// Load returns what was stored under key, or nil (also on a nil Memo).
func (m *Memo) Load(key any) any {
	if m == nil {
		return nil
	}
	if s := m.slots.Load(); s != nil {
		for _, e := range *s {
			if e.key == key {
				return e.val
			}
		}
	}
	return nil
}

// Store keeps val under key; a nil Memo keeps nothing.
func (m *Memo) Store(key, val any) {
	if m == nil {
		return
	}
	for {
		old := m.slots.Load()
		var s []memoSlot
		if old != nil {
			for _, e := range *old {
				if e.key != key {
					s = append(s, e)
				}
			}
		}
		s = append(s, memoSlot{key, val})
		if m.slots.CompareAndSwap(old, &s) {
			return
		}
	}
}

// ActiveCache is implemented by read transactions of a store that keeps
// the index of active records of a subject, or of one entity id, in memory.
type ActiveCache interface {
	// CachedActive returns the part of the index of active records of the
	// subject, or, when subjectID is empty, of the scope's first entity id
	// (user, agent, app, run). The part is shared: read it, never change
	// it. It reflects every commit that returned before the call; one still
	// in flight may show or not, so an entry may name a record the caller's
	// snapshot holds as inactive or not at all: load it and check its
	// status before returning it. ok is false when the store keeps nothing
	// for this (no subject and no entity id, or more than its memory
	// budget): scan the index instead.
	CachedActive(ctx context.Context, subjectID string, scope Scope) (part ActivePart, ok bool, err error)
}

// ActivePart is what a store's cache holds of one subject or entity id:
// its entries in the index's key order, in chunks (so that a change copies
// a chunk a reader holds, not all of them), and a memo for what a reader
// derives from all of them, new whenever they change.
type ActivePart struct {
	Chunks [][]*ActiveEntry
	Memo   *Memo
}

// Len returns the number of entries.
func (p ActivePart) Len() int {
	n := 0
	for _, c := range p.Chunks {
		n += len(c)
	}
	return n
}

// Entries returns the entries in one slice, a new one: a reader that needs
// them so keeps it in the memo.
func (p ActivePart) Entries() []*ActiveEntry {
	out := make([]*ActiveEntry, 0, p.Len())
	for _, c := range p.Chunks {
		out = append(out, c...)
	}
	return out
}

// ActiveIndex is implemented by read transactions whose index of active
// records carries ActiveEntry fields. fn gets ok false for an entry the
// index holds no fields for (written before the store kept them); the
// record must then be loaded to be tested.
type ActiveIndex interface {
	ScanActiveEntries(subjectID string, fn func(e ActiveEntry, ok bool) (more bool, err error)) error
}

// Tx is a read-write transaction.
type Tx interface {
	ReadTx
	PutRecord(*Record) error
	PutSlot(*Slot) error
	PutRollbackPoint(*RollbackPoint) error
	AppendEvent(*Event) error
	PutNotice(*Notice) error
	DeleteNotice(id string) error
}

// PolicyInput is what policy decides on. Its shape may grow, never shrink.
type PolicyInput struct {
	Op        Op        `json:"op"`
	Candidate *Record   `json:"candidate"`
	Current   *Record   `json:"current"` // the slot's active record, or null
	Pending   []*Record `json:"pending"` // the slot's pending records
	Actor     Actor     `json:"actor"`
	Dialect   string    `json:"dialect"`
	// Secrets are the credentials the governor's scanner found in the
	// candidate, by field and rule; never the secret itself, so the input
	// can be kept in the audit log and replayed.
	Secrets []SecretFinding `json:"secrets"`
	// Judge is a model's second opinion on the candidate's text, when one
	// is configured and answered in time; null otherwise.
	Judge *Verdict `json:"judge"`
}

// SecretFinding says which field of a candidate holds a credential and
// which detection rule found it.
type SecretFinding struct {
	Field string `json:"field"` // e.g. summary, value, metadata.url, actor.agentId
	Rule  string `json:"rule"`  // e.g. aws-access-token, password-assignment
}

// SecretScanner finds credentials in text. It returns the ids of the
// rules that matched, or none; never the matched text.
type SecretScanner interface {
	FindSecrets(text string) []string
}

// Verdict is a model's classification of a candidate's text (the judge).
// Policy may let it raise risk, never lower it.
type Verdict struct {
	// Label is what the text is: strategy, permission, state_change,
	// inference, poisoning, secret, preference, checkpoint or knowledge.
	Label  string `json:"label"`
	Risk   Risk   `json:"risk"`
	Reason string `json:"reason,omitempty"`
	Model  string `json:"model,omitempty"`
}

// Judge classifies a candidate's text with a model. An error (down, slow,
// unparseable answer) means no second opinion: the rules' verdict stands.
type Judge interface {
	Judge(ctx context.Context, rec *Record) (*Verdict, error)
}

// Classifier decides the risk of a candidate. An error makes the governor
// fail closed: the write is parked with reason policy_error.
type Classifier interface {
	Classify(ctx context.Context, in *PolicyInput) (Decision, error)
}

// Placement is where policy puts a free-text memory: the slot fields its
// text implies. The governor uses a field only where the writer left it
// empty.
type Placement struct {
	Layer     Layer
	FactType  string
	SubjectID string
	Value     json.RawMessage
}

// Placer is a Classifier that places free text with a query of its own,
// far cheaper than a decision. The governor asks it before deciding; a
// Classifier that is not a Placer places through the slot fields of a
// decision.
type Placer interface {
	Place(ctx context.Context, in *PolicyInput) (Placement, error)
}

// ClassifierFunc adapts a function to Classifier (tests inject decisions).
type ClassifierFunc func(ctx context.Context, in *PolicyInput) (Decision, error)

// Classify calls f.
func (f ClassifierFunc) Classify(ctx context.Context, in *PolicyInput) (Decision, error) {
	return f(ctx, in)
}

// Conflict kinds reported to the Observer.
const (
	ConflictOverrideParked  = "override_parked"
	ConflictOverrideApplied = "override_applied"
	ConflictPendingPending  = "pending_vs_pending"
)

// Rollback scopes reported to the Observer.
const (
	ScopeRecord     = "record"
	ScopeCascade    = "cascade"
	ScopeQuarantine = "quarantine"
	ScopeRestore    = "restore"
)

// Observer hears about transitions after they commit; metrics implement it.
type Observer interface {
	Write(dialect string, action Action, risk Risk)
	Conflict(kind string)
	RolledBack(scope, reason string, n int)
	Stale()
	ReviewDecided(outcome, route string, waited time.Duration)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) Write(string, Action, Risk)                  {}
func (NopObserver) Conflict(string)                             {}
func (NopObserver) RolledBack(string, string, int)              {}
func (NopObserver) Stale()                                      {}
func (NopObserver) ReviewDecided(string, string, time.Duration) {}

// Notified is told after commit that new notices are in the outbox, so a
// worker can deliver them without polling.
type Notified interface{ Wake() }

// Candidate is a write as a dialect hands it to the governor.
type Candidate struct {
	Op              Op              `json:"op,omitempty"`
	SlotID          string          `json:"slotId,omitempty"` // edit or delete an existing memory
	Layer           Layer           `json:"layer,omitempty"`
	SubjectID       string          `json:"subjectId,omitempty"`
	FactType        string          `json:"factType,omitempty"`
	Summary         string          `json:"summary"`
	Value           json.RawMessage `json:"value,omitempty"`
	CandidateSource Source          `json:"candidateSource,omitempty"`
	Evidence        Evidence        `json:"evidence,omitzero"`
	Actor           Actor           `json:"actor,omitempty"`
	Scope           Scope           `json:"scope,omitzero"`
	Metadata        map[string]any  `json:"metadata,omitempty"`
}
