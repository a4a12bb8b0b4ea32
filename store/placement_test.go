package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
)

// placingPolicy is testkit.Rules plus a placement: text about auto-publishing
// goes to the policy layer's publish.auto slot of project-alpha. It keeps
// the candidates its Classify saw.
type placingPolicy struct {
	fail    bool
	mu      sync.Mutex
	decided []memory.Record
	placed  int
}

func (p *placingPolicy) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	p.mu.Lock()
	p.decided = append(p.decided, *in.Candidate)
	p.mu.Unlock()
	d, err := testkit.Rules(ctx, in)
	// Slot fields in a decision are not used when the classifier places.
	d.Layer, d.FactType, d.SubjectID = memory.LayerCheckpoint, "wrong", "wrong"
	return d, err
}

func (p *placingPolicy) Place(_ context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	p.mu.Lock()
	p.placed++
	p.mu.Unlock()
	if p.fail {
		return memory.Placement{}, errors.New("placement broke")
	}
	if !strings.Contains(strings.ToLower(in.Candidate.Summary), "auto-publish") {
		return memory.Placement{Layer: memory.LayerKnowledge}, nil
	}
	return memory.Placement{Layer: memory.LayerPolicy, FactType: "publish.auto", SubjectID: "project-alpha",
		Value: json.RawMessage(`{"enabled":false}`)}, nil
}

func TestGovernorPlacesFreeTextWithAPlacer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fail        bool
		cand        memory.Candidate
		wantPlaced  int
		wantLayer   memory.Layer
		wantFact    string
		wantSubject string
		wantValue   string
		wantStatus  memory.Status
	}{
		{name: "free text is placed, then decided as placed",
			cand:       memory.Candidate{Summary: "Auto-publish is off for alpha", Scope: memory.Scope{UserID: "u1"}},
			wantPlaced: 1, wantLayer: memory.LayerPolicy, wantFact: "publish.auto", wantSubject: "project-alpha",
			wantValue: `{"enabled":false}`, wantStatus: memory.StatusPending},
		{name: "the writer's slot fields win, its layer only rises",
			cand: memory.Candidate{Summary: "auto-publish notes", Layer: memory.LayerKnowledge, SubjectID: "docs",
				Value: json.RawMessage(`"x"`)},
			wantPlaced: 1, wantLayer: memory.LayerPolicy, wantFact: "publish.auto", wantSubject: "docs",
			wantValue: `"x"`, wantStatus: memory.StatusPending},
		{name: "a structured write is placed for its inferred layer",
			cand:       memory.Candidate{Summary: "step 3 done", Layer: memory.LayerCheckpoint, SubjectID: "run-1", FactType: "task.progress"},
			wantPlaced: 1, wantLayer: memory.LayerKnowledge, wantFact: "task.progress", wantSubject: "run-1", wantStatus: memory.StatusActive},
		{name: "a declared layer above the inferred one stays",
			cand:       memory.Candidate{Summary: "stage is beta", Layer: memory.LayerState, SubjectID: "run-1", FactType: "stage"},
			wantPlaced: 1, wantLayer: memory.LayerState, wantFact: "stage", wantSubject: "run-1", wantStatus: memory.StatusActive},
		{name: "a failed placement leaves the writer's fields and still decides",
			fail:       true,
			cand:       memory.Candidate{Summary: "Auto-publish is off for alpha", Scope: memory.Scope{UserID: "u1"}},
			wantPlaced: 1, wantLayer: memory.LayerKnowledge, wantFact: "", wantSubject: "u1", wantStatus: memory.StatusActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := &placingPolicy{fail: tc.fail}
			e := newEnvWith(t, pol)
			res := e.submit(tc.cand)
			rec := res.Record
			if pol.placed != tc.wantPlaced {
				t.Errorf("placed %d times, want %d", pol.placed, tc.wantPlaced)
			}
			if rec.Layer != tc.wantLayer || rec.FactType != tc.wantFact || rec.SubjectID != tc.wantSubject {
				t.Errorf("record in %s/%q/%q, want %s/%q/%q", rec.Layer, rec.FactType, rec.SubjectID, tc.wantLayer, tc.wantFact, tc.wantSubject)
			}
			if string(rec.Value) != tc.wantValue {
				t.Errorf("value %s, want %s", rec.Value, tc.wantValue)
			}
			if rec.Status != tc.wantStatus {
				t.Errorf("status %s, want %s", rec.Status, tc.wantStatus)
			}
			if len(pol.decided) != 1 || pol.decided[0].Layer != tc.wantLayer || pol.decided[0].FactType != tc.wantFact {
				t.Errorf("the decision saw %+v, want the placed candidate", pol.decided)
			}
			if tc.wantFact != "" && rec.SlotID != memory.KeyedSlotID(tc.wantSubject, tc.wantFact) {
				t.Errorf("slot %s, want the keyed slot of %s/%s", rec.SlotID, tc.wantSubject, tc.wantFact)
			}
		})
	}
}
