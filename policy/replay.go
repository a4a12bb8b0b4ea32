package policy

import (
	"context"
	"encoding/json"
	"fmt"
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

// Replay evaluates c on every audit event that carries the policy input a
// write was decided on and its decision (applied, parked and rejected
// writes), and reports where the action would differ. Only a cancelled ctx
// stops it early; it then returns the report so far with ctx's error.
//
// The input replayed is the one recorded: a free-text write keeps the slot
// the old policy gave it.
func Replay(ctx context.Context, c memory.Classifier, events []*memory.Event) (*ReplayReport, error) {
	r := &ReplayReport{Transitions: map[string]int{}, Changes: []ReplayChange{}}
	for _, ev := range events {
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("replay: %w", err)
		}
		r.add(ctx, c, ev)
	}
	return r, nil
}

func (r *ReplayReport) add(ctx context.Context, c memory.Classifier, ev *memory.Event) {
	if ev == nil || len(ev.Input) == 0 || ev.Decision == nil {
		r.Skipped++
		return
	}
	r.Evaluated++
	var in memory.PolicyInput
	if err := json.Unmarshal(ev.Input, &in); err != nil {
		r.fail(ev, fmt.Errorf("decode recorded input: %w", err))
		return
	}
	if in.Candidate == nil {
		r.fail(ev, fmt.Errorf("recorded input has no candidate"))
		return
	}
	d, err := c.Classify(ctx, &in)
	if err != nil {
		r.fail(ev, err)
		return
	}
	if r.Revision == "" {
		r.Revision = d.Revision
	}
	old := *ev.Decision
	r.Transitions[string(old.Action)+"->"+string(d.Action)]++
	if old.Action == d.Action {
		r.Same++
		return
	}
	r.Changed++
	r.Changes = append(r.Changes, ReplayChange{
		EventID: ev.ID, RecordID: ev.RecordID, SubjectID: in.Candidate.SubjectID,
		FactType: in.Candidate.FactType, Summary: in.Candidate.Summary, At: ev.At,
		Old: outcomeOf(old), New: outcomeOf(d),
	})
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
