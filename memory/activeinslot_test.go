package memory

import (
	"context"
	"testing"
)

// A free-text slot's id is its first record's id: after an edit, Get of
// that id answers the superseded first version, ActiveInSlot the slot's
// active one. The guard asks the latter (issue 30).
func TestActiveInSlotAnswersBySlotIDOnly(t *testing.T) {
	ctx := context.Background()
	apply := ClassifierFunc(func(context.Context, *PolicyInput) (Decision, error) {
		return Decision{Risk: RiskLow, Action: ActionApply, Reasons: []Reason{{Rule: "low", Message: "low risk"}}}, nil
	})
	g := NewGovernor(Options{Store: newMemStore(), Classifier: apply})
	first, err := g.Submit(ctx, Candidate{SubjectID: "ws", Summary: "The user likes tea."})
	if err != nil || first.Outcome != OutcomeApplied {
		t.Fatalf("first version: %+v %v", first, err)
	}
	slot := first.Record.SlotID
	if slot != first.Record.ID {
		t.Fatalf("a free-text slot's id is %q, want its first record's id %q (the confusion this test is about)", slot, first.Record.ID)
	}
	edit, err := g.Submit(ctx, Candidate{SubjectID: "ws", SlotID: slot, Summary: "The user likes green tea."})
	if err != nil || edit.Outcome != OutcomeApplied {
		t.Fatalf("the edit: %+v %v", edit, err)
	}
	if r, err := g.Get(ctx, slot); err != nil || r.Status != StatusSuperseded {
		t.Fatalf("Get(slot id) = %+v %v: want the superseded first version (which is why ActiveInSlot exists)", r, err)
	}

	other := WithTenant(ctx, Tenant{UserID: "mallory"})
	cases := []struct {
		name string
		ctx  context.Context
		id   string
		want string // record id, "" for ENOTFOUND
	}{
		{"the slot's active version", ctx, slot, edit.Record.ID},
		{"a record id that is not a slot id", ctx, edit.Record.ID, ""},
		{"an unknown id", ctx, "no-such-slot", ""},
		{"another tenant's slot", other, slot, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := g.ActiveInSlot(tc.ctx, tc.id)
			if tc.want == "" {
				if ErrorCode(err) != ENOTFOUND {
					t.Fatalf("got %+v %v, want ENOTFOUND", r, err)
				}
				return
			}
			if err != nil || r.ID != tc.want || r.Status != StatusActive {
				t.Fatalf("got %+v %v, want active %s", r, err, tc.want)
			}
		})
	}

	// A slot whose version was deleted has no active version.
	if res, err := g.Submit(ctx, Candidate{Op: OpDelete, SlotID: slot}); err != nil || res.Outcome != OutcomeApplied {
		t.Fatalf("delete: %+v %v", res, err)
	}
	if r, err := g.ActiveInSlot(ctx, slot); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("after the delete: %+v %v, want ENOTFOUND", r, err)
	}
}
