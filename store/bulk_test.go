package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
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

// plainStore hides the store's bulk extensions (memory.RecordReplacer,
// memory.ActorSlotScanner) behind the plain memory.Tx, so quarantine takes
// the path any Store gets.
type plainStore struct{ st *store.Store }

type plainTx struct{ memory.Tx }

type plainReadTx struct{ memory.ReadTx }

func (s plainStore) Update(ctx context.Context, fn func(memory.Tx) error) error {
	return s.st.Update(ctx, func(tx memory.Tx) error { return fn(plainTx{tx}) })
}

func (s plainStore) View(ctx context.Context, fn func(memory.ReadTx) error) error {
	return s.st.View(ctx, func(tx memory.ReadTx) error { return fn(plainReadTx{tx}) })
}

// bulkPolicy parks what says "park" and applies the rest.
func bulkPolicy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if strings.Contains(in.Candidate.Summary, "park") {
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStrategy},
			Reasons: []memory.Reason{{Rule: "park", Message: "asked to park"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply, Reasons: []memory.Reason{{Rule: "low_risk", Message: "low risk"}}}, nil
}

// bulkWorld is a store with every shape of slot a quarantine meets. It
// records what each shape's records are called.
type bulkWorld struct {
	st  *store.Store
	gov *memory.Governor
	ids map[string]string // name -> record id
}

// newBulkWorld builds it with deterministic ids and times, so two worlds
// built alike hold the same keys and values.
func newBulkWorld(t *testing.T, plain bool, batch int) *bulkWorld {
	t.Helper()
	ctx := context.Background()
	st := badgertest.New(t)
	var n atomic.Int64
	newID := func() string { return fmt.Sprintf("01K%023d", n.Add(1)) }
	clk := testkit.NewTicking(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), time.Millisecond)
	var ms memory.Store = st
	if plain {
		ms = plainStore{st}
	}
	w := &bulkWorld{st: st, ids: map[string]string{},
		gov: memory.NewGovernor(memory.Options{Store: ms, Classifier: memory.ClassifierFunc(bulkPolicy), Now: clk.Now,
			NewID: newID, Outbox: true, BatchSlots: batch})}
	bad := memory.Actor{AgentID: "agent-x", RunID: "run-bad"}
	good := memory.Actor{AgentID: "agent-y", RunID: "run-good"}
	write := func(name string, a memory.Actor, fact, summary string) {
		t.Helper()
		c := memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: fact, Summary: summary, Actor: a}
		if name == "delete" {
			c = memory.Candidate{Op: memory.OpDelete, SubjectID: "s", FactType: fact, Actor: a}
		}
		res, err := w.gov.Submit(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w.ids[name+"/"+fact] = res.Record.ID
	}
	for i := range 6 { // repeat the shapes so they span batches
		f := func(shape string) string { return fmt.Sprintf("%s.%d", shape, i) }
		write("b1", bad, f("own"), "v1") // the run's two versions: the slot ends empty
		write("b2", bad, f("own"), "v2")
		write("g1", good, f("over"), "good") // the run overrode good: good comes back
		write("b1", bad, f("over"), "bad")
		write("b1", bad, f("later"), "bad") // good replaced the run: the run's is retracted
		write("g1", good, f("later"), "good")
		write("b1", bad, f("park"), "park bad") // the run's parked write is rejected
		write("g1", good, f("park"), "park good")
		write("b1", bad, f("stale"), "bad") // good parked against the run's head: stays parked
		write("g1", good, f("stale"), "park good")
		write("g1", good, f("delete"), "good") // the run deleted good's fact
		write("delete", bad, f("delete"), "")
		write("b1", bad, f("chain"), "v1") // bad, bad, good, bad: back to good's
		write("b2", bad, f("chain"), "v2")
		write("g1", good, f("chain"), "good")
		write("b3", bad, f("chain"), "v3")
		write("b1", bad, f("append"), "park appended") // approved into a slot of its own
		if _, err := w.gov.Approve(ctx, w.ids["b1/"+f("append")], memory.Review{By: "rev", Mode: memory.ModeAppend}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// dump returns every live key and value of the database; the audit
// chain's salts and the hashes they make are left out (random).
func dump(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.DB().View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			k := string(it.Item().Key())
			if strings.HasPrefix(k, "e/") || k == "ch/head" {
				var m map[string]any
				if err := json.Unmarshal(v, &m); err != nil {
					return err
				}
				for _, f := range []string{"salt", "textHash", "prev", "hash"} {
					delete(m, f)
				}
				if v, err = json.Marshal(m); err != nil {
					return err
				}
			}
			out[k] = string(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkIndexes holds every record's index keys to its status: the active
// index (a/) lists exactly the active records, the pending indexes (sp/,
// q/) exactly the parked ones, and the slot index (sr/) every record in its
// current slot.
func checkIndexes(t *testing.T, kv map[string]string) {
	t.Helper()
	want := map[string]bool{}
	for k, v := range kv {
		if !strings.HasPrefix(k, "r/") {
			continue
		}
		var r memory.Record
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			t.Fatal(err)
		}
		want["sr/"+r.SlotID+"\x00"+r.ID] = true
		switch r.Status {
		case memory.StatusActive:
			want["a/"+r.SubjectID+"\x00"+r.ID] = true
		case memory.StatusPending:
			want["sp/"+r.SlotID+"\x00"+r.ID] = true
			want["q/"+r.ID] = true
		}
	}
	for k := range kv {
		for _, p := range []string{"a/", "sp/", "q/", "sr/"} {
			if strings.HasPrefix(k, p) && !want[k] {
				t.Errorf("index key %q names a record not in that state", k)
			}
		}
	}
	for k := range want {
		if _, ok := kv[k]; !ok {
			t.Errorf("index key %q is missing", k)
		}
	}
}

// TestQuarantineEveryShapeOfSlot quarantines a run across every shape of
// slot and checks the outcome of each; the indexes agree with the records;
// and the store's bulk extensions leave exactly the keys and values the
// plain memory.Tx path leaves.
func TestQuarantineEveryShapeOfSlot(t *testing.T) {
	ctx := context.Background()
	fast, plain := newBulkWorld(t, false, 1000), newBulkWorld(t, true, 1000)
	if !maps.Equal(dump(t, fast.st), dump(t, plain.st)) {
		t.Fatal("the two worlds differ before the quarantine")
	}
	res, err := fast.gov.Quarantine(ctx, "run", "run-bad", "injection", "ops")
	if err != nil {
		t.Fatal(err)
	}
	plainRes, err := plain.gov.Quarantine(ctx, "run", "run-bad", "injection", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, plainRes) {
		t.Fatalf("quarantine results differ:\n%+v\n%+v", res, plainRes)
	}
	after := dump(t, fast.st)
	if plainAfter := dump(t, plain.st); !maps.Equal(after, plainAfter) {
		for k, v := range after {
			if plainAfter[k] != v {
				t.Errorf("key %q:\n fast  %s\n plain %s", k, v, plainAfter[k])
			}
		}
		for k := range plainAfter {
			if _, ok := after[k]; !ok {
				t.Errorf("key %q only on the plain path", k)
			}
		}
		t.FailNow()
	}
	checkIndexes(t, after)

	status := func(name, fact string) memory.Status {
		t.Helper()
		r, err := fast.gov.Get(ctx, fast.ids[name+"/"+fact])
		if err != nil {
			t.Fatalf("%s/%s: %v", name, fact, err)
		}
		return r.Status
	}
	head := func(fact string) string {
		t.Helper()
		hist, err := fast.gov.History(ctx, memory.KeyedSlotID("s", fact))
		if err != nil {
			t.Fatal(err)
		}
		active := ""
		for _, r := range hist {
			if r.Status == memory.StatusActive {
				if active != "" {
					t.Fatalf("%s has two active versions", fact)
				}
				active = r.ID
			}
		}
		return active
	}
	for i := range 6 {
		f := func(shape string) string { return fmt.Sprintf("%s.%d", shape, i) }
		for _, c := range []struct {
			name, fact string
			want       memory.Status
		}{
			{"b1", f("own"), memory.StatusRolledBack}, {"b2", f("own"), memory.StatusRolledBack},
			{"g1", f("over"), memory.StatusActive}, {"b1", f("over"), memory.StatusRolledBack},
			{"b1", f("later"), memory.StatusRolledBack}, {"g1", f("later"), memory.StatusActive},
			{"b1", f("park"), memory.StatusRejected}, {"g1", f("park"), memory.StatusPending},
			{"b1", f("stale"), memory.StatusRolledBack}, {"g1", f("stale"), memory.StatusPending},
			{"g1", f("delete"), memory.StatusActive}, {"delete", f("delete"), memory.StatusRolledBack},
			{"b1", f("chain"), memory.StatusRolledBack}, {"b2", f("chain"), memory.StatusRolledBack},
			{"g1", f("chain"), memory.StatusActive}, {"b3", f("chain"), memory.StatusRolledBack},
			{"b1", f("append"), memory.StatusRolledBack},
		} {
			if got := status(c.name, c.fact); got != c.want {
				t.Errorf("%s/%s is %s, want %s", c.name, c.fact, got, c.want)
			}
		}
		for fact, want := range map[string]string{f("own"): "", f("over"): fast.ids["g1/"+f("over")],
			f("later"): fast.ids["g1/"+f("later")], f("stale"): "", f("delete"): fast.ids["g1/"+f("delete")],
			f("chain"): fast.ids["g1/"+f("chain")]} {
			if got := head(fact); got != want {
				t.Errorf("%s: active version %q, want %q", fact, got, want)
			}
		}
	}
	if len(res.RolledBack) != 6*7 || len(res.Retracted) != 6*3 || len(res.Rejected) != 6 {
		t.Errorf("quarantine: %d rolled back, %d retracted, %d rejected; want %d, %d, %d",
			len(res.RolledBack), len(res.Retracted), len(res.Rejected), 6*7, 6*3, 6)
	}
}

// TestQuarantineOnConcurrentBatchesKeepsIndexes runs the same quarantine
// in small batches on concurrent workers: same outcome, indexes intact.
func TestQuarantineOnConcurrentBatchesKeepsIndexes(t *testing.T) {
	ctx := context.Background()
	w := newBulkWorld(t, false, 2)
	res, err := w.gov.Quarantine(ctx, "run", "run-bad", "injection", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RolledBack) != 6*7 || len(res.Retracted) != 6*3 || len(res.Rejected) != 6 {
		t.Errorf("quarantine: %d rolled back, %d retracted, %d rejected; want %d, %d, %d",
			len(res.RolledBack), len(res.Retracted), len(res.Rejected), 6*7, 6*3, 6)
	}
	checkIndexes(t, dump(t, w.st))
}
