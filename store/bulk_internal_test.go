package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

func TestLeadingSlotID(t *testing.T) {
	enc := func(r memory.Record) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name   string
		b      []byte
		id     string
		want   string
		wantOK bool
	}{
		{"a keyed slot", enc(memory.Record{ID: "01KA", SlotID: "slot_0123abcd", Summary: `say "hi"`}), "01KA", "slot_0123abcd", true},
		{"a slot of its own", enc(memory.Record{ID: "01KB", SlotID: "01KB"}), "01KB", "01KB", true},
		{"another record's bytes", enc(memory.Record{ID: "01KC", SlotID: "slot_1"}), "01KD", "", false},
		{"an escaped slot id", enc(memory.Record{ID: "01KE", SlotID: "a<b"}), "01KE", "", false},
		{"fields in another order", []byte(`{"slotId":"slot_1","id":"01KF"}`), "01KF", "", false},
		{"cut short", []byte(`{"id":"01KG","slotId":"slot_`), "01KG", "", false},
		{"empty", nil, "01KH", "", false},
	} {
		got, ok := leadingSlotID(c.b, c.id)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: got %q, %v; want %q, %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
}

// TestScanActorSlotsAgreesWithScanByActor: the fast scan quarantine uses
// lists the same records, in the same order, in the same slots as the
// decoding scan, whether it reads them on one goroutine or several, also
// for a record moved to a slot of its own and one stored in another field
// order (which it decodes).
func TestScanActorSlotsAgreesWithScanByActor(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t)
	park := func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
		if in.Candidate.Summary == "park" {
			return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview}, nil
		}
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	}
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(park)})
	for _, n := range []int{3, 3 * minPerReader} {
		run := fmt.Sprintf("run-%d", n)
		actor := memory.Actor{AgentID: "agent", RunID: run}
		for i := range n {
			if res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s",
				FactType: fmt.Sprintf("f%d.%d", n, i%(n/2+1)), Summary: fmt.Sprint(i), Actor: actor}); err != nil || res.Outcome != memory.OutcomeApplied {
				t.Fatal(res.Outcome, err)
			}
		}
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: "moved", Summary: "park", Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gov.Approve(ctx, res.Record.ID, memory.Review{By: "rev", Mode: memory.ModeAppend}); err != nil {
			t.Fatal(err)
		}
		// A record stored with its fields in another order.
		odd := memory.Record{ID: fmt.Sprintf("01ODD%05d", n), SlotID: "slot_odd", Layer: memory.LayerKnowledge, SubjectID: "s",
			Status: memory.StatusActive, Actor: actor, CreatedAt: time.Now()}
		if err := st.Update(ctx, func(mtx memory.Tx) error {
			t := mtx.(*tx)
			if err := t.PutRecord(&odd); err != nil {
				return err
			}
			return t.set(key("r/", odd.ID), []byte(`{"slotId":"slot_odd","id":"`+odd.ID+`","status":"active"}`))
		}); err != nil {
			t.Fatal(err)
		}

		type pair struct{ id, slot string }
		var want, got []pair
		err = st.View(ctx, func(rtx memory.ReadTx) error {
			if err := rtx.ScanByActor("run", run, func(r *memory.Record) bool {
				want = append(want, pair{r.ID, r.SlotID})
				return true
			}); err != nil {
				return err
			}
			return rtx.(memory.ActorSlotScanner).ScanActorSlots("run", run, func(id, slot string) bool {
				got = append(got, pair{id, slot})
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != n+2 || !slices.Equal(got, want) {
			t.Fatalf("%d records: ScanActorSlots gave %d pairs, ScanByActor %d (want %d), or they differ", n, len(got), len(want), n+2)
		}
		if !slices.Contains(got, pair{res.Record.ID, res.Record.ID}) || !slices.Contains(got, pair{odd.ID, "slot_odd"}) {
			t.Fatalf("%d records: the moved or the reordered record is missing from %v", n, got[len(got)-3:])
		}
	}
	err := st.View(ctx, func(rtx memory.ReadTx) error {
		n := 0
		err := rtx.(memory.ActorSlotScanner).ScanActorSlots("run", "run-3", func(string, string) bool { n++; return n < 2 })
		if n != 2 {
			t.Fatalf("the scan went on after fn returned false: %d calls", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
