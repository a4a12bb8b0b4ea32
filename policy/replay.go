package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
)

// ReplayReport says what a policy would have decided on the writes of an
// audit log, next to what was decided then.
type ReplayReport struct {
	// Revision of the replayed policy, as its decisions report it.
	Revision  string `json:"revision"`
	Evaluated int    `json:"evaluated"` // writes replayed
	Same      int    `json:"same"`      // same action as then
	Changed   int    `json:"changed"`   // a different action
	Errors    int    `json:"errors"`    // writes the policy could not decide
	Skipped   int    `json:"skipped"`   // events that are not a decided write
	// Redacted counts the rejected writes whose text the log no longer
	// holds: the governor keeps only a fingerprint of a rejected
	// candidate, so a secret or a chit-chat line cannot be decided again.
	// They keep the decision recorded with them and count as the same,
	// with their own "old->old" transition; this says how many there were.
	Redacted int `json:"redacted"`
	// PendingResolved counts the slots' pending writes that replayed
	// inputs reference by id (memory.RecordedInput) and the replay loaded,
	// once per input; PendingMissing the ones it could not (no longer
	// stored, or not named by the event nor known from the log before it).
	// Those writes were replayed without them.
	PendingResolved int `json:"pendingResolved"`
	PendingMissing  int `json:"pendingMissing"`
	// Transitions counts replayed writes by "old->new" action, the same
	// ones included (e.g. "apply->review": 3, "apply->apply": 40).
	Transitions map[string]int  `json:"transitions"`
	Changes     []ReplayChange  `json:"changes"`
	Failures    []ReplayFailure `json:"failures,omitempty"`
}

// ReplayChange is one write whose action would change.
type ReplayChange struct {
	EventID   string        `json:"eventId"`
	RecordID  string        `json:"recordId"`
	SubjectID string        `json:"subjectId,omitempty"`
	FactType  string        `json:"factType,omitempty"`
	Summary   string        `json:"summary,omitempty"`
	At        time.Time     `json:"at"`
	Old       ReplayOutcome `json:"old"`
	New       ReplayOutcome `json:"new"`
}

// ReplayOutcome is one decision, reduced to what a reviewer compares.
type ReplayOutcome struct {
	Action     memory.Action `json:"action"`
	Risk       memory.Risk   `json:"risk"`
	Categories []string      `json:"categories"`
	Rules      []string      `json:"rules"`
	Revision   string        `json:"revision,omitempty"`
}

// ReplayFailure is a write the replayed policy could not decide.
type ReplayFailure struct {
	EventID  string `json:"eventId"`
	RecordID string `json:"recordId"`
	Error    string `json:"error"`
}

// RecordLoader loads a record by id (the governor's Get); an error with
// code memory.ENOTFOUND means it is not there.
type RecordLoader func(ctx context.Context, id string) (*memory.Record, error)

// ReplayOption configures a replay.
type ReplayOption func(*Replayer)

// WithRecords lets a replay resolve the pending writes a recorded input
// references by id (memory.RecordedInput). Without it they count as
// missing and the writes are replayed without them.
func WithRecords(load RecordLoader) ReplayOption {
	return func(r *Replayer) { r.load = load }
}

// Replay evaluates c on every audit event that carries the policy input a
// write was decided on and its decision (applied, parked and rejected
// writes), and reports where the action would differ. Only a cancelled ctx
// stops it early; it then returns the report so far with ctx's error.
//
// The input replayed is the one recorded: a free-text write keeps the slot
// the old policy gave it. The slot's pending writes are recorded by id
// (see memory.RecordedInput) and loaded through WithRecords; events
// should come in log order, oldest first (see Replayer).
func Replay(ctx context.Context, c memory.Classifier, events []*memory.Event, opts ...ReplayOption) (*ReplayReport, error) {
	r := NewReplayer(c, opts...)
	for _, ev := range events {
		if err := r.Add(ctx, ev); err != nil {
			return r.Report(), err
		}
	}
	return r.Report(), nil
}

// Replayer replays audit events one at a time, so a caller can page
// through a long log without holding it.
//
// An event keeps the ids of at most memory.MaxEventPending of its slot's
// pending writes, the newest, and how many there were. For the others the
// Replayer follows the log: a parked event adds a write to its slot's
// pending ones, an approved or denied one takes it off. It uses what it
// followed when that agrees with the event (the same count, ending in the
// ids kept), which it does when the events come in log order from the
// start of the log or from an event that named all of its slot's pending
// writes. Otherwise the writes it cannot name count as missing.
type Replayer struct {
	c      memory.Classifier
	load   RecordLoader
	report *ReplayReport
	// pending holds the ids of each slot's pending writes, in id order (as
	// a slot lists them), as the events so far say; slotOf the slot of
	// each of them, and loaded the records loaded for them (nil: missing).
	pending map[string][]string
	slotOf  map[string]string
	loaded  map[string]*memory.Record
}

// NewReplayer returns a Replayer of c.
func NewReplayer(c memory.Classifier, opts ...ReplayOption) *Replayer {
	r := &Replayer{c: c, report: &ReplayReport{Transitions: map[string]int{}, Changes: []ReplayChange{}},
		pending: map[string][]string{}, slotOf: map[string]string{}, loaded: map[string]*memory.Record{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Add replays one event. Only a cancelled ctx is an error; what the policy
// cannot decide is reported.
func (r *Replayer) Add(ctx context.Context, ev *memory.Event) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	rin := r.add(ctx, ev)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replay: %w", err) // a load or evaluation cut short
	}
	r.follow(ev, rin)
	return nil
}

// Report returns the report so far.
func (r *Replayer) Report() *ReplayReport { return r.report }

// add replays ev, if it is a decided write, and returns its recorded
// input (nil if none could be read).
func (r *Replayer) add(ctx context.Context, ev *memory.Event) *memory.RecordedInput {
	rep := r.report
	if ev == nil || len(ev.Input) == 0 || ev.Decision == nil {
		rep.Skipped++
		return nil
	}
	rep.Evaluated++
	rin, err := memory.ParseRecordedInput(ev.Input)
	if err != nil {
		rep.fail(ev, fmt.Errorf("decode recorded input: %w", err))
		return nil
	}
	if redacted(rin) {
		rep.Redacted++
		rep.Same++
		rep.Transitions[string(ev.Decision.Action)+"->"+string(ev.Decision.Action)]++
		return rin
	}
	in := rin.PolicyInput // a copy: rin keeps what was recorded
	if !rin.Embedded() {
		if in.Pending, err = r.resolve(ctx, rin); err != nil {
			rep.fail(ev, err)
			return rin
		}
	}
	d, err := r.c.Classify(ctx, &in)
	if err != nil {
		rep.fail(ev, err)
		return rin
	}
	if rep.Revision == "" {
		rep.Revision = d.Revision
	}
	old := *ev.Decision
	rep.Transitions[string(old.Action)+"->"+string(d.Action)]++
	if old.Action == d.Action {
		rep.Same++
		return rin
	}
	rep.Changed++
	rep.Changes = append(rep.Changes, ReplayChange{
		EventID: ev.ID, RecordID: ev.RecordID, SubjectID: in.Candidate.SubjectID,
		FactType: in.Candidate.FactType, Summary: in.Candidate.Summary, At: ev.At,
		Old: outcomeOf(old), New: outcomeOf(d),
	})
	return rin
}

// resolve loads the pending writes an input references, as they were
// while pending; the ones it cannot name or load count as missing.
func (r *Replayer) resolve(ctx context.Context, rin *memory.RecordedInput) ([]*memory.Record, error) {
	ids := rin.PendingIDs
	if !rin.Complete() {
		if known := r.pending[rin.Candidate.SlotID]; len(known) == rin.PendingCount && endsWith(known, ids) {
			ids = known
		}
	}
	out := make([]*memory.Record, 0, len(ids))
	for _, id := range ids {
		rec, err := r.record(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("load pending write %s: %w", id, err)
		}
		if rec != nil {
			out = append(out, memory.AsPending(rec, rin.Candidate))
		}
	}
	r.report.PendingResolved += len(out)
	r.report.PendingMissing += rin.PendingCount - len(out)
	return out, nil
}

// record loads a record, nil if it is not there; a pending write the log
// follows is loaded once.
func (r *Replayer) record(ctx context.Context, id string) (*memory.Record, error) {
	if rec, ok := r.loaded[id]; ok {
		return rec, nil
	}
	if r.load == nil {
		return nil, nil
	}
	rec, err := r.load(ctx, id)
	if memory.ErrorCode(err) == memory.ENOTFOUND {
		rec, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, ok := r.slotOf[id]; ok {
		r.loaded[id] = rec
	}
	return rec, nil
}

// follow updates the pending writes of ev's slot: from its input when that
// names them all (or disagrees with what was followed), then by its type.
func (r *Replayer) follow(ev *memory.Event, rin *memory.RecordedInput) {
	if ev == nil {
		return
	}
	if rin != nil {
		slot := rin.Candidate.SlotID
		known := r.pending[slot]
		switch {
		case rin.Complete():
			if !slices.Equal(known, rin.PendingIDs) {
				r.setPending(slot, rin.PendingIDs)
			}
		case len(known) != rin.PendingCount || !endsWith(known, rin.PendingIDs):
			r.setPending(slot, nil) // unknown until an event names them all
		}
	}
	switch ev.Type {
	case memory.EventParked:
		if ev.SlotID != "" && ev.RecordID != "" {
			r.addPending(ev.SlotID, ev.RecordID)
		}
	case memory.EventApproved, memory.EventDenied:
		r.dropPending(ev.RecordID)
	}
}

func (r *Replayer) setPending(slot string, ids []string) {
	for _, id := range r.pending[slot] {
		delete(r.slotOf, id)
		delete(r.loaded, id)
	}
	delete(r.pending, slot)
	for _, id := range ids {
		r.addPending(slot, id)
	}
}

func (r *Replayer) addPending(slot, id string) {
	if _, ok := r.slotOf[id]; ok {
		return
	}
	ids := r.pending[slot]
	i, _ := slices.BinarySearch(ids, id)
	r.pending[slot] = slices.Insert(ids, i, id)
	r.slotOf[id] = slot
}

func (r *Replayer) dropPending(id string) {
	slot, ok := r.slotOf[id]
	if !ok {
		return
	}
	delete(r.slotOf, id)
	delete(r.loaded, id)
	ids := r.pending[slot]
	if i, found := slices.BinarySearch(ids, id); found {
		ids = slices.Delete(ids, i, i+1)
	}
	if len(ids) == 0 {
		delete(r.pending, slot)
	} else {
		r.pending[slot] = ids
	}
}

// redacted reports whether a recorded input's candidate is the stored,
// redacted record of a rejected write rather than the write as it was
// decided: memory redacts every rejected candidate (its summary becomes a
// fingerprint, its value, metadata and excerpt are dropped) and records
// that form, so as not to keep a secret in the log.
func redacted(rin *memory.RecordedInput) bool {
	c := rin.Candidate
	return c.Status == memory.StatusRejected && strings.HasPrefix(c.Summary, "[redacted")
}

// endsWith reports whether s ends with suffix.
func endsWith(s, suffix []string) bool {
	return len(suffix) <= len(s) && slices.Equal(s[len(s)-len(suffix):], suffix)
}

func (r *ReplayReport) fail(ev *memory.Event, err error) {
	r.Errors++
	r.Failures = append(r.Failures, ReplayFailure{EventID: ev.ID, RecordID: ev.RecordID, Error: err.Error()})
}

func outcomeOf(d memory.Decision) ReplayOutcome {
	rules := make([]string, len(d.Reasons))
	for i, reason := range d.Reasons {
		rules[i] = reason.Rule
	}
	cats := d.Categories
	if cats == nil {
		cats = []string{}
	}
	return ReplayOutcome{Action: d.Action, Risk: d.Risk, Categories: cats, Rules: rules, Revision: d.Revision}
}
