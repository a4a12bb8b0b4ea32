package crash

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// AckKind is what the sidecar acknowledged.
type AckKind string

const (
	AckApplied    AckKind = "applied"     // a write answered 201
	AckParked     AckKind = "parked"      // a write answered 202
	AckApproved   AckKind = "approved"    // an approval answered 200
	AckRejected   AckKind = "rejected"    // a rejection answered 200
	AckRolledBack AckKind = "rolled_back" // a rollback answered 200
)

// Op is a governing call sent for a record, acknowledged or not: a call cut
// off by the kill may still have committed, so the checks allow its effect.
type Op string

const (
	OpApprove  Op = "approve"
	OpReject   Op = "reject"
	OpRollback Op = "rollback"
)

// Slot names a keyed slot.
type Slot struct {
	SubjectID string `json:"subjectId"`
	FactType  string `json:"factType"`
}

// Ack is one acknowledged item, logged on the client side the moment the
// answer arrives.
type Ack struct {
	Kind     AckKind `json:"kind"`
	RecordID string  `json:"recordId"`
	Slot     Slot    `json:"slot,omitzero"`
	// Summary is the text a write's answer gave back: what the record
	// holds while active or pending.
	Summary string    `json:"summary,omitempty"`
	Cycle   int       `json:"cycle"`
	At      time.Time `json:"at"`
}

// Ledger is the client-side log of everything acknowledged and every
// governing call attempted. It is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	acks     []Ack
	byRecord map[string][]AckKind
	summary  map[string]string // the text each acknowledged write gave back
	tried    map[string]map[Op]bool
	parked   []string // acknowledged parked, not known to be decided
	applied  []string // acknowledged active at some point: rollback candidates
	slots    map[Slot]bool
	out      *json.Encoder
	outErr   error
}

// NewLedger returns an empty ledger that also writes each ack as a JSON
// line to w (nil: memory only).
func NewLedger(w io.Writer) *Ledger {
	l := &Ledger{byRecord: map[string][]AckKind{}, summary: map[string]string{}, tried: map[string]map[Op]bool{}, slots: map[Slot]bool{}}
	if w != nil {
		l.out = json.NewEncoder(w)
	}
	return l
}

// Attempt notes that op is about to be sent for a record.
func (l *Ledger) Attempt(recordID string, op Op) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tried[recordID] == nil {
		l.tried[recordID] = map[Op]bool{}
	}
	l.tried[recordID][op] = true
}

// Ack records an acknowledged item.
func (l *Ledger) Ack(a Ack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks = append(l.acks, a)
	l.byRecord[a.RecordID] = append(l.byRecord[a.RecordID], a.Kind)
	if a.Summary != "" {
		l.summary[a.RecordID] = a.Summary
	}
	if a.Slot.FactType != "" {
		l.slots[a.Slot] = true
	}
	switch a.Kind {
	case AckParked:
		l.parked = append(l.parked, a.RecordID)
	case AckApplied, AckApproved:
		l.applied = append(l.applied, a.RecordID)
	}
	if a.Kind == AckApproved || a.Kind == AckRejected {
		l.parked = remove(l.parked, a.RecordID)
	}
	if l.out != nil && l.outErr == nil {
		l.outErr = l.out.Encode(a)
	}
}

// Decided drops a parked record from the candidates for review (the
// sidecar said it was already decided).
func (l *Ledger) Decided(recordID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parked = remove(l.parked, recordID)
}

// PickParked returns a parked record to decide, or "".
func (l *Ledger) PickParked(rng *rand.Rand) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.parked) == 0 {
		return ""
	}
	return l.parked[rng.IntN(len(l.parked))]
}

// PickApplied returns a recently applied record to roll back, or "".
func (l *Ledger) PickApplied(rng *rand.Rand) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.applied) == 0 {
		return ""
	}
	// Recent records are likelier to still be their slot's head.
	recent := l.applied[max(0, len(l.applied)-32):]
	return recent[rng.IntN(len(recent))]
}

// PickSlot returns a slot some acknowledged write went to, or false.
func (l *Ledger) PickSlot(rng *rand.Rand) (Slot, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := rng.IntN(len(l.slots) + 1)
	for s := range l.slots {
		if n == 0 {
			return s, true
		}
		n--
	}
	for s := range l.slots {
		return s, true
	}
	return Slot{}, false
}

// Err is the first error writing the ack log.
func (l *Ledger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.outErr
}

// claims is what the ledger knows of one record.
type claims struct {
	acked   map[AckKind]bool
	tried   map[Op]bool
	summary string // its text as acknowledged ("" if unknown)
}

// snapshot returns the records acknowledged in cycle since or later, each
// with everything known of it, and every slot written to.
func (l *Ledger) snapshot(since int) (map[string]claims, []Slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := map[string]bool{}
	for _, a := range l.acks {
		if a.Cycle >= since {
			recent[a.RecordID] = true
		}
	}
	recs := make(map[string]claims, len(recent))
	for id := range recent {
		kinds := l.byRecord[id]
		c := claims{acked: map[AckKind]bool{}, tried: map[Op]bool{}, summary: l.summary[id]}
		for _, k := range kinds {
			c.acked[k] = true
		}
		for op := range l.tried[id] {
			c.tried[op] = true
		}
		recs[id] = c
	}
	slots := make([]Slot, 0, len(l.slots))
	for s := range l.slots {
		slots = append(slots, s)
	}
	return recs, slots
}

// Len is how many items were acknowledged.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// Counts returns how many items of each kind were acknowledged.
func (l *Ledger) Counts() map[AckKind]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[AckKind]int{}
	for _, a := range l.acks {
		out[a.Kind]++
	}
	return out
}

func remove(ids []string, id string) []string {
	for i, v := range ids {
		if v == id {
			ids[i] = ids[len(ids)-1]
			return ids[:len(ids)-1]
		}
	}
	return ids
}
