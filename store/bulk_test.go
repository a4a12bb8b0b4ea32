package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/memgate/memgate/memory"
)

// retryingStore runs every update twice, as a store does after a write
// conflict: the first attempt's transaction is thrown away.
type retryingStore struct{ memory.Store }

var errThrownAway = errors.New("attempt thrown away")

func (s retryingStore) Update(ctx context.Context, fn func(memory.Tx) error) error {
	err := s.Store.Update(ctx, func(tx memory.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errThrownAway
	})
	if !errors.Is(err, errThrownAway) {
		return err
	}
	return s.Store.Update(ctx, fn)
}

// TestBulkCountsARetriedBatchOnce: a quarantine whose transactions are
// retried reports each undone version once, and undoes it once.
func TestBulkCountsARetriedBatchOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := memory.Actor{AgentID: "agent-x", RunID: "run-bad"}
	var wrote []string
	for i := range 5 {
		r := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha",
			FactType: fmt.Sprintf("fact.%d", i), Summary: "x", Actor: bad}).Record
		wrote = append(wrote, r.ID)
	}
	gov := memory.NewGovernor(memory.Options{Store: retryingStore{e.st}, Classifier: e.cls, Now: e.clock.Now, Outbox: true})
	res, err := gov.Quarantine(ctx, "run", "run-bad", "test", "ops")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(wrote)
	if !slices.Equal(res.RolledBack, wrote) || len(res.Retracted) != 0 || len(res.Rejected) != 0 {
		t.Fatalf("quarantine result %+v, want exactly %v rolled back", res, wrote)
	}
	for _, id := range wrote {
		if got := e.get(id).Status; got != memory.StatusRolledBack {
			t.Fatalf("%s is %s, want rolled_back", id, got)
		}
	}
}

// TestBulkAcrossManyBatches quarantines a run spread over more slots than
// several batches hold, so the batches run on concurrent workers: every
// version is undone once, the result lists each once in order, and no slot
// ends with two active versions.
func TestBulkAcrossManyBatches(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := memory.Actor{AgentID: "agent-x", RunID: "run-bad"}
	good := memory.Actor{AgentID: "agent-y", RunID: "run-good"}
	var want []string
	for i := range 60 {
		fact := fmt.Sprintf("fact.%d", i)
		if i%3 == 0 {
			e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: fact, Summary: "good", Actor: good})
		}
		want = append(want, e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: fact,
			Summary: "bad", Actor: bad}).Record.ID)
	}
	gov := memory.NewGovernor(memory.Options{Store: e.st, Classifier: e.cls, Now: e.clock.Now, Outbox: true, BatchSlots: 4})
	res, err := gov.Quarantine(ctx, "run", "run-bad", "test", "ops")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(res.RolledBack, want) {
		t.Fatalf("rolled back %d versions, want the %d the run wrote, once each, in order", len(res.RolledBack), len(want))
	}
	for i := range 60 {
		head := checkOneActive(t, e, "s", fmt.Sprintf("fact.%d", i))
		if i%3 == 0 && (head == nil || head.Summary != "good") {
			t.Fatalf("fact.%d: head %v, want good's version restored", i, head)
		}
		if i%3 != 0 && head != nil {
			t.Fatalf("fact.%d: head %s, want none", i, head.ID)
		}
	}
}
