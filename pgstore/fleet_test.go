package pgstore_test

// The rules of DESIGN §1 across instances: several pgstore handles on one
// database, each with a governor of its own (as several memgate processes
// would have), race on the same slots. The governors' slot locks are per
// process, so only the database keeps the rules here.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/internal/slotmodel"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
)

type instance struct {
	st  *pgstore.Store
	gov *memory.Governor
}

// fleet opens n instances on one fresh database.
func fleet(t *testing.T, n int, cls memory.ClassifierFunc) []instance {
	t.Helper()
	url := pgtest.New(t)
	out := make([]instance, n)
	for i := range out {
		st, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, Instance: fmt.Sprint("instance-", i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out[i] = instance{st, memory.NewGovernor(memory.Options{Store: st, Classifier: cls, Outbox: true})}
	}
	return out
}

// checkSlot reads a slot's versions in one snapshot and fails unless at
// most one is active, it is the slot's head, and every applied version
// that replaced another has its rollback point in the same snapshot (the
// point is written in the override's transaction).
func checkSlot(t *testing.T, st *pgstore.Store, slotID string) (active string) {
	t.Helper()
	err := st.View(context.Background(), func(tx memory.ReadTx) error {
		active = ""
		recs, err := tx.SlotRecords(slotID)
		if err != nil {
			return err
		}
		var actives []string
		for _, r := range recs {
			if r.Status == memory.StatusActive {
				actives = append(actives, r.ID)
			}
			if r.RollbackPoint != "" {
				if _, err := tx.RollbackPoint(r.RollbackPoint); err != nil {
					t.Errorf("record %s (%s) names rollback point %s: %v", r.ID, r.Status, r.RollbackPoint, err)
				}
			}
		}
		if len(actives) > 1 {
			t.Errorf("slot %s has %d active versions: %v", slotID, len(actives), actives)
			return nil
		}
		if len(actives) == 1 {
			active = actives[0]
			slot, err := tx.Slot(slotID)
			if err != nil {
				return err
			}
			if slot.Head != active {
				t.Errorf("slot %s: head %s, active %s", slotID, slot.Head, active)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return active
}

// TestFleetKeepsOneActiveVersionPerSlot: writers on three instances race
// for the heads of two slots while a reader checks every slot at every
// read; at the end each slot has one active version and every
// acknowledged write is stored, chained to the one it replaced.
func TestFleetKeepsOneActiveVersionPerSlot(t *testing.T) {
	fl := fleet(t, 3, testkit.ParkPolicies)
	const writersPerInstance, writes = 4, 8
	facts := []string{"owner", "stage"}
	ctx := context.Background()
	var acked sync.Map // record id → slot id
	var wg sync.WaitGroup
	for i, in := range fl {
		for w := range writersPerInstance {
			wg.Go(func() {
				for n := range writes {
					fact := facts[(w+n)%len(facts)]
					res, err := in.gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha",
						FactType: fact, Summary: fmt.Sprintf("%s set by instance %d writer %d, write %d", fact, i, w, n),
						Actor: memory.Actor{AgentID: fmt.Sprint("agent-", i), RunID: fmt.Sprint("run-", i, "-", w)}})
					if err != nil {
						t.Errorf("submit: %v", err)
						return
					}
					if res.Outcome != memory.OutcomeApplied {
						t.Errorf("outcome %s, want applied", res.Outcome)
					}
					acked.Store(res.Record.ID, res.Record.SlotID)
				}
			})
		}
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	reader := sync.WaitGroup{}
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, f := range facts {
				checkSlot(t, fl[int(reads.Load())%len(fl)].st, memory.KeyedSlotID("project-alpha", f))
			}
			reads.Add(1)
		}
	})
	wg.Wait()
	close(stop)
	reader.Wait()
	t.Logf("%d reads during the writes", reads.Load())
	if t.Failed() {
		return
	}
	for _, f := range facts {
		slotID := memory.KeyedSlotID("project-alpha", f)
		if checkSlot(t, fl[0].st, slotID) == "" {
			t.Errorf("slot %s has no active version", f)
		}
		// The versions form one line: each replaced the one before it.
		hist, err := fl[1].gov.History(ctx, slotID)
		if err != nil {
			t.Fatal(err)
		}
		replaced := map[string]int{}
		for _, r := range hist {
			if r.Supersedes != "" {
				replaced[r.Supersedes]++
			}
		}
		for id, n := range replaced {
			if n > 1 {
				t.Errorf("slot %s: version %s was replaced %d times (a lost update)", f, id, n)
			}
		}
	}
	n := 0
	acked.Range(func(id, slot any) bool {
		n++
		r, err := fl[2].gov.Get(ctx, id.(string))
		if err != nil || r.SlotID != slot {
			t.Errorf("acknowledged write %s: %v, %v", id, r, err)
		}
		return true
	})
	if want := len(fl) * writersPerInstance * writes; n != want {
		t.Errorf("%d writes acknowledged, want %d", n, want)
	}
}

// TestFleetApprovalIsDecidedOnce: a parked write approved on two
// instances at once is applied by one; the other is told it was decided
// (or, having read the slot before the winner's commit, that it is stale).
func TestFleetApprovalIsDecidedOnce(t *testing.T) {
	fl := fleet(t, 2, testkit.ParkPolicies)
	ctx := context.Background()
	const rounds = 12
	for round := range rounds {
		res, err := fl[round%2].gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha",
			FactType: "publish.auto", Summary: fmt.Sprintf("auto-publish rule %d", round)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != memory.OutcomeParked {
			t.Fatalf("outcome %s, want parked", res.Outcome)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, in := range fl {
			wg.Go(func() {
				<-start
				_, err := in.gov.Approve(ctx, res.Record.ID, memory.Review{By: fmt.Sprint("reviewer-", i), Mode: memory.ModeOverride})
				switch code := memory.ErrorCode(err); {
				case err == nil:
					wins.Add(1)
				case code == memory.EDECIDED || code == memory.ESTALE:
				default:
					t.Errorf("approve on instance %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d approvals succeeded, want 1", round, wins.Load())
		}
		if active := checkSlot(t, fl[0].st, res.Record.SlotID); active != res.Record.ID {
			t.Fatalf("round %d: active %s, want the approved %s", round, active, res.Record.ID)
		}
		evs := recordEvents(t, fl[1].st, res.Record.ID)
		approvals := 0
		for _, e := range evs {
			if e.Type == memory.EventApproved {
				approvals++
			}
		}
		if approvals != 1 {
			t.Fatalf("round %d: %d approval events, want 1", round, approvals)
		}
	}
}

// TestFleetQuarantineUndoesARunAcrossInstances: a run writes through two
// instances, another run writes over some of it; quarantining the run on a
// third instance undoes exactly what the run wrote, everywhere.
func TestFleetQuarantineUndoesARunAcrossInstances(t *testing.T) {
	fl := fleet(t, 3, testkit.ParkPolicies)
	ctx := context.Background()
	submit := func(in instance, run, fact, summary string, layer memory.Layer) *memory.SubmitResult {
		t.Helper()
		res, err := in.gov.Submit(ctx, memory.Candidate{Layer: layer, SubjectID: "project-alpha", FactType: fact,
			Summary: summary, Actor: memory.Actor{AgentID: "agent", RunID: run}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	good := submit(fl[0], "run-good", "owner", "owner is alice", memory.LayerKnowledge)
	bad1 := submit(fl[0], "run-bad", "owner", "owner is mallory", memory.LayerKnowledge)
	bad2 := submit(fl[1], "run-bad", "stage", "stage is done", memory.LayerKnowledge)
	bad3 := submit(fl[1], "run-bad", "publish.auto", "publish everything", memory.LayerPolicy) // parked
	later := submit(fl[2], "run-good", "stage", "stage is beta", memory.LayerKnowledge)
	if bad3.Outcome != memory.OutcomeParked {
		t.Fatalf("policy write: outcome %s, want parked", bad3.Outcome)
	}
	res, err := fl[2].gov.Quarantine(ctx, "run", "run-bad", "poisoned run", "sre")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(res.RolledBack, res.Retracted, res.Rejected)
	want := fmt.Sprint([]string{bad1.Record.ID}, []string{bad2.Record.ID}, []string{bad3.Record.ID})
	if got != want {
		t.Fatalf("quarantine: rolled back, retracted, rejected = %s, want %s", got, want)
	}
	if active := checkSlot(t, fl[1].st, good.Record.SlotID); active != good.Record.ID {
		t.Errorf("owner: active %s, want the good run's %s restored", active, good.Record.ID)
	}
	if active := checkSlot(t, fl[0].st, later.Record.SlotID); active != later.Record.ID {
		t.Errorf("stage: active %s, want the later write %s kept", active, later.Record.ID)
	}
	for _, id := range []string{bad1.Record.ID, bad2.Record.ID, bad3.Record.ID} {
		r, err := fl[0].gov.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == memory.StatusActive || r.Status == memory.StatusPending {
			t.Errorf("record %s of the quarantined run is still %s", id, r.Status)
		}
	}
	// Quarantine is visible in the shared audit log from every instance.
	for i, in := range fl {
		evs := recordEvents(t, in.st, bad1.Record.ID)
		var types []string
		for _, e := range evs {
			types = append(types, string(e.Type))
		}
		if !strings.Contains(strings.Join(types, ","), string(memory.EventRolledBack)) {
			t.Errorf("instance %d: events of %s are %v, want a rollback", i, bad1.Record.ID, types)
		}
	}
}

// TestFleetSlotHistoriesAreLinearizable runs the slot model's workload
// with the clients of each slot spread over two instances.
func TestFleetSlotHistoriesAreLinearizable(t *testing.T) {
	fl := fleet(t, 2, slotmodel.Policy)
	slotmodel.Check(t, []*memory.Governor{fl[0].gov, fl[1].gov})
}

func recordEvents(t *testing.T, st *pgstore.Store, id string) []*memory.Event {
	t.Helper()
	var evs []*memory.Event
	err := st.View(context.Background(), func(tx memory.ReadTx) error {
		var err error
		evs, err = tx.RecordEvents(id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
