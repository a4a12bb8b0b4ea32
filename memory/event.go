package memory

import (
	"encoding/json"
	"time"
)

// EventType names a transition in the audit log.
type EventType string

const (
	EventApplied     EventType = "applied"     // a candidate became active (or a deletion applied)
	EventUnchanged   EventType = "unchanged"   // a candidate repeated the active version
	EventParked      EventType = "parked"      // a candidate waits for review
	EventRejected    EventType = "rejected"    // policy rejected a candidate
	EventApproved    EventType = "approved"    // a reviewer approved a parked write
	EventDenied      EventType = "denied"      // a reviewer rejected a parked write
	EventStale       EventType = "stale"       // an approval found the slot changed
	EventSuperseded  EventType = "superseded"  // a version was replaced by a newer one
	EventRolledBack  EventType = "rolled_back" // a version was undone
	EventRestored    EventType = "restored"    // a version became active again by a rollback
	EventQuarantined EventType = "quarantined" // a run's or actor's writes were undone

	EventErasureStarted EventType = "erasure_started" // an erasure began (its journal in the log)
	EventErased         EventType = "erased"          // a record's text was erased
	EventErasureDone    EventType = "erasure_done"    // an erasure finished, with its counts
	EventRetained       EventType = "retention"       // retention removed an old version's text
	EventExpired        EventType = "expired"         // an active record reached its expiry and left the active layer
)

// Event is one entry of the append-only audit log.
type Event struct {
	ID        string    `json:"id"`
	Type      EventType `json:"type"`
	At        time.Time `json:"at"`
	RecordID  string    `json:"recordId,omitempty"`
	SlotID    string    `json:"slotId,omitempty"`
	SubjectID string    `json:"subjectId,omitempty"`
	Actor     *Actor    `json:"actor,omitempty"` // who triggered the write
	By        string    `json:"by,omitempty"`    // reviewer or operator
	Reason    string    `json:"reason,omitempty"`
	// Related are other records involved (replaced, conflicting). A parked
	// write's lists the slot's active version, if it differs, and then at
	// most MaxEventPending (16) of the slot's other pending writes, the
	// newest, oldest first: its size does not grow with the queue.
	Related  []string  `json:"related,omitempty"`
	Decision *Decision `json:"decision,omitempty"`
	// Input is the policy input a candidate was decided on, kept so a new
	// policy can be replayed over what really happened. It is a
	// RecordedInput: pending writes are referenced by id, not embedded
	// (events written before that embed them; ParseRecordedInput reads both).
	Input json.RawMessage `json:"input,omitempty"`
	// Erasure names the erasure (or retention pass) an erased,
	// erasure_started, erasure_done or retention event is about.
	Erasure *ErasureSummary `json:"erasure,omitempty"`

	// The audit chain (chain.go), set by the store when it appends the
	// event: its position, the hash and id of the event before it, the
	// salt and salted hash of its text (Input, Reason), and, once erasure
	// or retention removed that text, why.
	Seq      uint64 `json:"seq,omitempty"`
	Prev     string `json:"prev,omitempty"`
	PrevID   string `json:"prevId,omitempty"`
	Salt     string `json:"salt,omitempty"`
	TextHash string `json:"textHash,omitempty"`
	Erased   string `json:"erased,omitempty"`
}

// NoticeKind names a notification for reviewers.
type NoticeKind string

const (
	NoticeParked     NoticeKind = "parked"     // a write waits for review
	NoticeDecided    NoticeKind = "decided"    // a parked write was approved or rejected
	NoticeStale      NoticeKind = "stale"      // an approval was refused as stale
	NoticeRollback   NoticeKind = "rollback"   // a version was rolled back
	NoticeQuarantine NoticeKind = "quarantine" // a run or actor was quarantined
	NoticeReminder   NoticeKind = "reminder"   // an item has waited too long
)

// Notice is an outbox entry: stored in the transaction that caused it and
// delivered later by a worker, so a down Slack loses nothing.
type Notice struct {
	ID       string     `json:"id"`
	Kind     NoticeKind `json:"kind"`
	RecordID string     `json:"recordId,omitempty"`
	Text     string     `json:"text,omitempty"`
	At       time.Time  `json:"at"`
	// Delivery bookkeeping, owned by the outbox worker.
	Attempts    int       `json:"attempts,omitempty"`
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
	LastError   string    `json:"lastError,omitempty"`
}
