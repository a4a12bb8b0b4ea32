package facts_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/search"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// applyAll applies every write, as a low-risk policy would.
var applyAll = memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
})

// parkOverrides parks every write that would replace an active version:
// the rule that an override is policy's to decide.
var parkOverrides = memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if in.Current != nil {
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStateOverride}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
})

// counter is an Observer counting what the matcher found.
type counter struct {
	memory.NopObserver
	mu sync.Mutex
	n  map[memory.MatchKind]int
}

func (c *counter) FactMatched(k memory.MatchKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[memory.MatchKind]int{}
	}
	c.n[k]++
}

func (c *counter) get(k memory.MatchKind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// badger is a governor with the matcher on a Badger store on disk.
func badger(t *testing.T, cls memory.Classifier, obs memory.Observer) *memory.Governor {
	t.Helper()
	st := badgertest.New(t)
	idx := search.New(st, search.Options{})
	t.Cleanup(func() { idx.Close() }) // before the store's, registered earlier
	return memory.NewGovernor(memory.Options{Store: st, Classifier: cls, Active: idx, Observer: obs,
		Facts: &facts.Matcher{Index: idx}})
}

// postgres is a governor with the matcher on one PostgreSQL database;
// call it twice with one url for two instances of a fleet.
func postgres(t *testing.T, url string, cls memory.Classifier) *memory.Governor {
	t.Helper()
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := search.Open(ctx, st, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close(); st.Close() })
	return memory.NewGovernor(memory.Options{Store: st, Classifier: cls, Active: idx, Facts: &facts.Matcher{Index: idx}})
}

func write(t *testing.T, g *memory.Governor, user, text string) *memory.SubmitResult {
	t.Helper()
	res, err := g.Submit(context.Background(), memory.Candidate{Summary: text, Scope: memory.Scope{UserID: user}})
	if err != nil {
		t.Fatalf("submit %q: %v", text, err)
	}
	return res
}

func active(t *testing.T, g *memory.Governor, user string) []*memory.Record {
	t.Helper()
	recs, err := g.List(context.Background(), memory.ListFilter{Scope: memory.Scope{UserID: user}})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestOneFactFreeText follows the story through the governor on
// Badger: a repeat is a no-op, a near miss stays apart and is named, a new
// value replaces the old one in its slot, and rollback brings it back.
func TestOneFactFreeText(t *testing.T) {
	obs := &counter{}
	g := badger(t, applyAll, obs)
	ctx := context.Background()
	first := write(t, g, "alice", "Alice prefers window seats on flights.")
	if first.Outcome != memory.OutcomeApplied {
		t.Fatalf("first write: %s", first.Outcome)
	}
	slot := first.Record.SlotID
	for _, text := range []string{"Alice prefers window seats on flights.", "alice prefers window seats on flights",
		"ALICE PREFERS WINDOW SEATS ON FLIGHTS!", "Alice prefers w\u0456ndow seats on flights", "Alice likes window seats on flights."} {
		res := write(t, g, "alice", text)
		if res.Outcome != memory.OutcomeUnchanged || res.Record.ID != first.Record.ID {
			t.Errorf("%q: got %s %s, want unchanged with the first memory %s", text, res.Outcome, res.Record.ID, first.Record.ID)
		}
	}
	if got := obs.get(memory.MatchRepeat); got != 5 {
		t.Errorf("repeats counted: %d, want 5", got)
	}
	other := write(t, g, "bob", "Alice prefers window seats on flights.")
	if other.Outcome != memory.OutcomeApplied || other.Record.SlotID == slot {
		t.Errorf("another user's memory is another scope: got %s in %s", other.Outcome, other.Record.SlotID)
	}
	trains := write(t, g, "alice", "Alice prefers window seats on trains.")
	if trains.Outcome != memory.OutcomeApplied || trains.Record.SlotID == slot {
		t.Fatalf("a near miss must stay apart: %s in %s", trains.Outcome, trains.Record.SlotID)
	}
	if m := trains.Record.FactMatch; m == nil || m.Kind != memory.MatchPossible || m.SlotID != slot {
		t.Errorf("the near miss names the possible conflict: %+v", m)
	}
	ex, err := g.Explain(ctx, trains.Record.ID)
	if err != nil || ex.Record.FactMatch == nil || ex.Record.FactMatch.RecordID != first.Record.ID {
		t.Errorf("explain names the possible conflict: %+v, %v", ex, err)
	}
	upd := write(t, g, "alice", "Alice now prefers aisle seats on flights.")
	if upd.Outcome != memory.OutcomeApplied || upd.Record.SlotID != slot || upd.Replaced == nil || upd.Replaced.ID != first.Record.ID {
		t.Fatalf("a new value goes to the memory's slot and replaces it: %+v", upd)
	}
	if len(active(t, g, "alice")) != 2 {
		t.Errorf("active memories of alice: %d, want 2 (aisle seats on flights, window seats on trains)", len(active(t, g, "alice")))
	}
	hist, err := g.History(ctx, slot)
	if err != nil || len(hist) != 2 || hist[0].Status != memory.StatusSuperseded {
		t.Errorf("history of the slot: %v, %v", hist, err)
	}
	if _, err := g.Rollback(ctx, upd.Record.ID, false, "wrong_inference", "test"); err != nil {
		t.Fatal(err)
	}
	got, err := g.ActiveInSlot(ctx, slot)
	if err != nil || got.ID != first.Record.ID {
		t.Errorf("rollback restores the old value: %v, %v", got, err)
	}
}

// TestUpdateIsPolicysToDecide: a matched update is an override like any
// other: policy sees the memory as current and parks it; the review
// shows what it replaces, and approval supersedes it.
func TestUpdateIsPolicysToDecide(t *testing.T) {
	g := badger(t, parkOverrides, nil)
	ctx := context.Background()
	first := write(t, g, "ops", "The staging database is postgres-stg-2.")
	upd := write(t, g, "ops", "The staging database moved to postgres-stg-3.")
	if upd.Outcome != memory.OutcomeParked || upd.Replaced == nil || upd.Replaced.ID != first.Record.ID ||
		upd.Record.ExpectedHead != first.Record.ID {
		t.Fatalf("the update is parked against the memory it replaces: %+v", upd)
	}
	item, err := g.Review(ctx, upd.Record.ID)
	if err != nil || item.Current == nil || item.Current.ID != first.Record.ID {
		t.Fatalf("the review shows what it replaces: %+v, %v", item, err)
	}
	if _, err := g.Approve(ctx, upd.Record.ID, memory.Review{By: "reviewer"}); err != nil {
		t.Fatal(err)
	}
	recs := active(t, g, "ops")
	if len(recs) != 1 || recs[0].ID != upd.Record.ID {
		t.Errorf("after approval one active memory, the new value: %v", recs)
	}
}

// TestConcurrentRepeatsMakeOneMemory: writers stating one fact at once
// (in forms that normalise alike) leave exactly one memory, on Badger and
// on a PostgreSQL fleet of two instances.
func TestConcurrentRepeatsMakeOneMemory(t *testing.T) {
	texts := []string{"Bob lives in Porto.", "bob lives in porto", "BOB LIVES IN PORTO!", "Bob lives in  Porto"}
	run := func(t *testing.T, govs ...*memory.Governor) {
		for round := range 3 {
			user := fmt.Sprint("u", round)
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					g := govs[i%len(govs)]
					if _, err := g.Submit(context.Background(), memory.Candidate{Summary: texts[i%len(texts)], Scope: memory.Scope{UserID: user}}); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			for _, g := range govs {
				if recs := active(t, g, user); len(recs) != 1 {
					t.Errorf("round %d: %d active memories, want 1", round, len(recs))
				}
			}
		}
	}
	t.Run("badger", func(t *testing.T) { run(t, badger(t, applyAll, nil)) })
	t.Run("postgres fleet", func(t *testing.T) {
		url := pgtest.New(t)
		run(t, postgres(t, url, applyAll), postgres(t, url, applyAll))
	})
}

// TestLongRepeatsAreNoOps: a write far longer than a search query takes
// (English and Chinese, up to the 16 KiB a summary may hold) is searched
// for by its beginning, and its repeat is still a no-op.
func TestLongRepeatsAreNoOps(t *testing.T) {
	g := badger(t, applyAll, nil)
	for _, text := range []string{strings.Repeat("Alice keeps notes about every meeting she attends. ", 300),
		strings.Repeat("用户每次开会都会记录会议内容和待办事项。", 250)} {
		first := write(t, g, "long", text)
		if again := write(t, g, "long", strings.ToUpper(text)); again.Outcome != memory.OutcomeUnchanged || again.Record.ID != first.Record.ID {
			t.Errorf("a repeat of a %d-byte text: %s", len(text), again.Outcome)
		}
	}
	if n := len(active(t, g, "long")); n != 2 {
		t.Errorf("%d active memories, want 2", n)
	}
}
