package memory

import (
	"context"
	"testing"
)

// Policy decides a write from a snapshot of its slot, before the
// transaction; the transaction keeps that decision while the slot is at
// the revision it was made at. These tests count the evaluations.

// countingPolicy parks overrides of an active state and applies the rest,
// counting its calls and keeping the inputs it saw.
type countingPolicy struct {
	inputs []PolicyInput
	// during, if set, runs inside the n-th evaluation (1-based).
	during func(n int)
}

func (p *countingPolicy) Classify(_ context.Context, in *PolicyInput) (Decision, error) {
	p.inputs = append(p.inputs, *in)
	if p.during != nil {
		p.during(len(p.inputs))
	}
	if in.Current != nil && !in.Current.SameContent(in.Candidate) {
		return Decision{Risk: RiskHigh, Action: ActionReview, Categories: []string{CategoryStateOverride},
			Reasons: []Reason{{Rule: "override", Message: "overrides a key fact"}}}, nil
	}
	return Decision{Risk: RiskLow, Action: ActionApply, Reasons: []Reason{{Rule: "low", Message: "low risk"}}}, nil
}

func stateWrite(summary string) Candidate {
	return Candidate{Layer: LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: summary}
}

func TestOneEvaluationPerUncontendedWrite(t *testing.T) {
	cases := []struct {
		name  string
		retry bool // the store runs every transaction twice, as after a conflict
		cands []Candidate
		want  []Outcome
	}{
		{"a new slot", false, []Candidate{stateWrite("beta")}, []Outcome{OutcomeApplied}},
		{"an override that parks, then a repeat", false,
			[]Candidate{stateWrite("beta"), stateWrite("ga"), stateWrite("beta")},
			[]Outcome{OutcomeApplied, OutcomeParked, OutcomeUnchanged}},
		{"a transaction retried after a conflict", true,
			[]Candidate{stateWrite("beta"), stateWrite("ga")}, []Outcome{OutcomeApplied, OutcomeParked}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStore()
			st.retry = tc.retry
			pol := &countingPolicy{}
			g := NewGovernor(Options{Store: st, Classifier: pol})
			for i, c := range tc.cands {
				before, updates := len(pol.inputs), st.updates
				res, err := g.Submit(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome != tc.want[i] {
					t.Fatalf("write %d: %s, want %s", i, res.Outcome, tc.want[i])
				}
				if n := len(pol.inputs) - before; n != 1 {
					t.Fatalf("write %d: %d evaluations over %d transaction attempts, want 1", i, n, st.updates-updates)
				}
			}
		})
	}
}

// A write to the slot that commits between the snapshot and the
// transaction makes the transaction decide again, against the new state:
// the decision is the one for the state it commits on.
func TestAConcurrentWriteBetweenSnapshotAndTransactionIsDecidedAgain(t *testing.T) {
	st := newMemStore()
	pol := &countingPolicy{}
	g := NewGovernor(Options{Store: st, Classifier: pol})
	ctx := context.Background()
	var racer *SubmitResult
	pol.during = func(n int) {
		if n != 1 {
			return
		}
		// Policy runs before the slot is locked: another writer gets in.
		var err error
		if racer, err = g.Submit(ctx, stateWrite("beta")); err != nil {
			t.Error(err)
		}
	}
	res, err := g.Submit(ctx, stateWrite("ga"))
	if err != nil {
		t.Fatal(err)
	}
	if racer == nil || racer.Outcome != OutcomeApplied {
		t.Fatalf("the racing write: %+v", racer)
	}
	// 1: ga against the empty slot; 2: the racer; 3: ga again, against beta.
	if len(pol.inputs) != 3 {
		t.Fatalf("%d evaluations, want 3", len(pol.inputs))
	}
	if pol.inputs[0].Current != nil {
		t.Fatalf("first evaluation saw %v, want the empty slot", pol.inputs[0].Current)
	}
	again := pol.inputs[2]
	if again.Candidate.ID != res.Record.ID || again.Current == nil || again.Current.ID != racer.Record.ID {
		t.Fatalf("the second evaluation of the write saw current %v, want the racer %s", again.Current, racer.Record.ID)
	}
	// Decided against beta, ga is an override: parked, expecting beta.
	if res.Outcome != OutcomeParked || res.Record.ExpectedHead != racer.Record.ID || res.Replaced.ID != racer.Record.ID {
		t.Fatalf("got %s expecting %q replacing %v, want parked against %s", res.Outcome, res.Record.ExpectedHead, res.Replaced, racer.Record.ID)
	}
}
