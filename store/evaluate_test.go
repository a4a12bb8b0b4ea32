package store_test

// The governor decides a write from a snapshot of its slot and keeps the
// decision only if the slot is still at that revision when the Badger
// transaction reads it. On disk, with real conflicts.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
)

// Concurrent writers of different values race for an empty state slot,
// each deciding from a snapshot of the empty slot (policy holds every
// first evaluation until all writers have made theirs). The policy applies
// into an empty slot and parks an override, so exactly one write must
// apply and every other park against it: a decision kept after another
// write changed the slot would apply a second version over the first.
func TestRacingWritesAreDecidedOnTheStateTheyCommitOn(t *testing.T) {
	const writers = 16
	var evaluations, arrived atomic.Int64
	var cut atomic.Bool
	all := make(chan struct{})
	cls := memory.ClassifierFunc(func(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
		if evaluations.Add(1) <= writers {
			if arrived.Add(1) == writers {
				close(all)
			}
			// A writer that found its slot's lock taken decides inside its
			// transaction, holding the lock the others wait for: it must
			// not wait for them for long.
			select {
			case <-all:
			case <-time.After(2 * time.Second):
				cut.Store(true)
			}
		}
		return testkit.Rules(ctx, in)
	})
	e := newEnvWith(t, cls)
	// The first evaluations wait for each other; under -race on a busy
	// runner that can outlast the default policy timeout, after which a
	// write would be parked as a policy error and decided again.
	e.gov = memory.NewGovernor(memory.Options{Store: e.st, Classifier: cls, Now: e.clock.Now, Outbox: true, PolicyTimeout: time.Minute})
	results := make([]*memory.SubmitResult, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			res, err := e.gov.Submit(context.Background(), state("project-alpha", "stage", fmt.Sprintf("stage %d", i)))
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	var applied []*memory.SubmitResult
	for _, r := range results {
		if r != nil && r.Outcome == memory.OutcomeApplied {
			applied = append(applied, r)
		}
	}
	if len(applied) != 1 {
		t.Fatalf("%d writes applied, want 1", len(applied))
	}
	head := applied[0].Record.ID
	for _, r := range results {
		if r != nil && r.Outcome == memory.OutcomeParked && r.Record.ExpectedHead != head {
			t.Fatalf("%s parked against %q, want %s", r.Record.ID, r.Record.ExpectedHead, head)
		}
	}
	checkOneActive(t, e, "project-alpha", "stage")
	// Every write but the first to commit found the slot changed since its
	// snapshot and was evaluated once more; a write that decided inside its
	// transaction (the barrier was cut) was evaluated once.
	n := evaluations.Load()
	switch {
	case !cut.Load() && n != 2*writers-1:
		t.Fatalf("%d evaluations for %d writes, want %d", n, writers, 2*writers-1)
	case n < writers || n > 2*writers-1:
		t.Fatalf("%d evaluations for %d writes, want %d to %d", n, writers, writers, 2*writers-1)
	}
}

// Uncontended, a write is evaluated once. A write that commits to the
// slot between the snapshot and the transaction (here from inside the
// first evaluation) makes it evaluate once more, against the new state;
// one that changes nothing of the slot (a repeat of the active version)
// does not.
func TestPolicyEvaluationsPerWrite(t *testing.T) {
	cases := []struct {
		name    string
		racer   string // written while the write is first evaluated
		outcome memory.Outcome
		evals   int // of the write and the racer together
		pending int // what the write's last evaluation saw pending
	}{
		{"no racer", "", memory.OutcomeParked, 1, 1},
		{"a racer that repeats the active version", "beta", memory.OutcomeUnchanged, 2, 1},
		{"a racer that parks beside it", "paused", memory.OutcomeParked, 3, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var inputs []memory.PolicyInput
			var during func(n int)
			e := newEnvWith(t, memory.ClassifierFunc(func(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
				inputs = append(inputs, *in)
				if during != nil {
					during(len(inputs))
				}
				return testkit.Rules(ctx, in)
			}))
			first := e.submit(state("project-alpha", "stage", "beta"))
			e.submit(state("project-alpha", "stage", "ga"))
			if len(inputs) != 2 {
				t.Fatalf("%d evaluations for 2 uncontended writes", len(inputs))
			}
			inputs = nil
			during = func(n int) {
				if n == 1 && tc.racer != "" {
					if r := e.submit(state("project-alpha", "stage", tc.racer)); r.Outcome != tc.outcome {
						t.Errorf("racer %s, want %s", r.Outcome, tc.outcome)
					}
				}
			}
			res := e.submit(state("project-alpha", "stage", "cancelled"))
			if len(inputs) != tc.evals {
				t.Fatalf("%d evaluations, want %d", len(inputs), tc.evals)
			}
			var last memory.PolicyInput
			for _, in := range inputs {
				if in.Candidate.ID == res.Record.ID {
					last = in
				}
			}
			if len(last.Pending) != tc.pending {
				t.Fatalf("the write's last evaluation saw %d pending, want %d", len(last.Pending), tc.pending)
			}
			if res.Outcome != memory.OutcomeParked || res.Record.ExpectedHead != first.Record.ID {
				t.Fatalf("%s expecting %q", res.Outcome, res.Record.ExpectedHead)
			}
		})
	}
}
