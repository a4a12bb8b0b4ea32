package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

// auditLog decides every realistic write with the default policy and keeps
// the events the governor would: the input decided on and the decision.
func auditLog(t *testing.T) []*memory.Event {
	t.Helper()
	ctx := context.Background()
	p := compileDefault(t)
	var events []*memory.Event
	for i, w := range realisticWrites {
		d, in := submit(ctx, t, p, w)
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		typ := map[memory.Action]memory.EventType{memory.ActionApply: memory.EventApplied,
			memory.ActionReview: memory.EventParked, memory.ActionReject: memory.EventRejected}[d.Action]
		events = append(events, &memory.Event{ID: fmt.Sprintf("ev%03d", i), Type: typ, RecordID: fmt.Sprintf("rec%03d", i),
			At: time.Date(2026, 12, 1, 9, 0, i, 0, time.UTC), Input: raw, Decision: &d})
	}
	return events
}

func TestReplaySamePolicyChangesNothing(t *testing.T) {
	events := auditLog(t)
	r, err := Replay(context.Background(), compileDefault(t), events)
	if err != nil {
		t.Fatal(err)
	}
	if r.Evaluated != len(events) || r.Same != len(events) || r.Changed != 0 || r.Errors != 0 || len(r.Changes) != 0 {
		t.Fatalf("replaying the deciding policy changed something: %+v", r)
	}
	if r.Revision != DefaultFiles().Revision() {
		t.Errorf("revision %s", r.Revision)
	}
}

func TestReplayReportsChanges(t *testing.T) {
	ctx := context.Background()
	events := auditLog(t)
	approved := &memory.Event{ID: "ev-approved", Type: memory.EventApproved, RecordID: "rec000"}
	corrupt := &memory.Event{ID: "ev-corrupt", Type: memory.EventApplied, RecordID: "rec-x",
		Input: json.RawMessage(`{"candidate": 7}`), Decision: &memory.Decision{Action: memory.ActionApply}}
	events = append(events, approved, corrupt)

	strict, err := Compile(ctx, withoutTests(withRule(t, "checkpoint", "action", "review")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(ctx, strict, events)
	if err != nil {
		t.Fatal(err)
	}
	checkpoints := 0
	for _, w := range realisticWrites {
		if w.want.layer == memory.LayerCheckpoint && w.want.action == memory.ActionApply {
			checkpoints++
		}
	}
	if checkpoints < 3 {
		t.Fatalf("only %d checkpoint writes to replay", checkpoints)
	}
	if r.Evaluated != len(events)-1 || r.Skipped != 1 || r.Errors != 1 || r.Changed != checkpoints ||
		r.Same+r.Changed+r.Errors != r.Evaluated {
		t.Fatalf("report totals %+v, want %d changed checkpoints", r, checkpoints)
	}
	if r.Transitions["apply->review"] != checkpoints || r.Transitions["review->review"] == 0 || r.Transitions["reject->reject"] == 0 {
		t.Errorf("transitions %v", r.Transitions)
	}
	for _, ch := range r.Changes {
		if ch.Old.Action != memory.ActionApply || ch.New.Action != memory.ActionReview ||
			!slices.Contains(ch.New.Rules, "checkpoint") || ch.RecordID == "" || ch.Summary == "" ||
			ch.New.Revision != strict.Revision() || ch.Old.Revision != DefaultFiles().Revision() {
			t.Errorf("change %+v", ch)
		}
	}
	if len(r.Failures) != 1 || r.Failures[0].EventID != "ev-corrupt" {
		t.Errorf("failures %+v", r.Failures)
	}
}

func TestReplayStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Replay(ctx, compileDefault(t), auditLog(t))
	if !errors.Is(err, context.Canceled) || r == nil || r.Evaluated != 0 {
		t.Fatalf("report %+v, error %v", r, err)
	}
}

// A rejected write is recorded redacted: its text is gone, so replay keeps
// its recorded decision instead of deciding a fingerprint, and counts it.
func TestReplayKeepsTheDecisionOfARedactedWrite(t *testing.T) {
	rejected := func(id, summary string, status memory.Status) *memory.Event {
		in := &memory.PolicyInput{Op: memory.OpWrite, Pending: []*memory.Record{}, Dialect: "mem0",
			Candidate: &memory.Record{ID: id, SlotID: id, Op: memory.OpWrite, Layer: memory.LayerKnowledge, SubjectID: "u2",
				Summary: summary, Status: status, Evidence: memory.Evidence{SourceRef: "mem0:infer:u2#0"}}}
		raw, err := memory.RecordInput(in)
		if err != nil {
			t.Fatal(err)
		}
		return &memory.Event{ID: "ev-" + id, Type: memory.EventRejected, RecordID: id, Input: raw,
			Decision: &memory.Decision{Action: memory.ActionReject, Risk: memory.RiskLow, Reasons: []memory.Reason{{Rule: "not_a_memory"}}}}
	}
	events := []*memory.Event{
		rejected("r1", "[redacted: 3 bytes rejected by policy, sha256 82e0b92772bc0da5]", memory.StatusRejected),
		rejected("r2", "Hi!", ""), // as decided: evaluated again
	}
	r, err := Replay(context.Background(), compileDefault(t), events)
	if err != nil {
		t.Fatal(err)
	}
	if r.Evaluated != 2 || r.Same != 2 || r.Redacted != 1 || r.Changed != 0 || r.Transitions["reject->reject"] != 2 {
		t.Fatalf("report %+v", r)
	}
	r, err = Replay(context.Background(), compileDefault(t), events[:1])
	if err != nil || r.Redacted != 1 || r.Same != 1 {
		t.Fatalf("report %+v, error %v", r, err)
	}
}
