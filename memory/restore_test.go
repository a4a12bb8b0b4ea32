package memory

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Restore goes back by undoing what was applied after its time; a version
// active at that time that was rolled back since stays rolled back, and
// the result names it.
func TestRestoreNamesVersionsItDoesNotReapply(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(time.Minute); return clock }
	g := NewGovernor(Options{Store: newMemStore(), Classifier: &countingPolicy{}, Now: tick})
	write := func(fact, summary string) *Record {
		t.Helper()
		res, err := g.Submit(ctx, Candidate{Layer: LayerKnowledge, SubjectID: "alpha", FactType: fact, Summary: summary})
		if err != nil || res.Outcome != OutcomeApplied {
			t.Fatalf("%s: %v %v", summary, res, err)
		}
		return res.Record
	}
	kept := write("owner", "alice owns alpha")
	undone := write("stage", "alpha is in beta")
	at := clock.Add(30 * time.Second)
	if _, err := g.Rollback(ctx, undone.ID, false, "wrong", "ops"); err != nil {
		t.Fatal(err)
	}
	later := write("region", "alpha runs in eu-west")

	res, err := g.Restore(ctx, "alpha", at, "back to the morning", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.RolledBack, []string{later.ID}) || !slices.Equal(res.KeptRolledBack, []string{undone.ID}) {
		t.Fatalf("rolled back %v (want %s), kept rolled back %v (want %s)", res.RolledBack, later.ID, res.KeptRolledBack, undone.ID)
	}
	for id, want := range map[string]Status{kept.ID: StatusActive, undone.ID: StatusRolledBack, later.ID: StatusRolledBack} {
		r, err := g.Get(ctx, id)
		if err != nil || r.Status != want {
			t.Fatalf("%s: %v %v, want %s", id, r.Status, err, want)
		}
	}
}
