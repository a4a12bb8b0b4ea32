package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// TestSearchFollowsWrites interleaves writes (new memories, overrides of a
// shared slot, rollbacks) with searches and holds each search to
// searchByList: the store's cached part of the index, and the term counts
// kept with it, follow every change.
func TestSearchFollowsWrites(t *testing.T) {
	for _, tc := range []struct {
		name           string
		preload, steps int
	}{
		{"a part of one chunk", 0, 150},
		{"a part of several chunks", 800, 16}, // the store's chunks hold 256 to 512 entries
	} {
		t.Run(tc.name, func(t *testing.T) { searchFollowsWrites(t, tc.preload, tc.steps) })
	}
}

func searchFollowsWrites(t *testing.T, preload, steps int) {
	ctx := context.Background()
	gov, h := applyingHandler(t, store.Options{NoSync: true})
	rng := rand.New(rand.NewPCG(5, 6))
	vocab := []string{"tea", "teas", "ramen", "hiking", "alps", "city", "cities", "glass", "the", "café", "猫"}
	text := func() string {
		ws := make([]string, 1+rng.IntN(5))
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	var applied []string
	for range preload {
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, Scope: memory.Scope{UserID: "u0"}, Summary: text()})
		if err != nil {
			t.Fatal(err)
		}
		applied = append(applied, res.Record.ID)
	}
	filters := []string{`{"user_id": "u0"}`, `{"user_id": "u1", "agent_id": "ag"}`, `{"AND": [{"user_id": "u0"}, {"categories": {"in": ["preference"]}}]}`}
	for step := range steps {
		c := memory.Candidate{Layer: []memory.Layer{memory.LayerKnowledge, memory.LayerPreference}[rng.IntN(2)],
			Scope: memory.Scope{UserID: fmt.Sprintf("u%d", rng.IntN(2)), AgentID: []string{"", "ag"}[rng.IntN(2)]}, Summary: text()}
		switch rng.IntN(4) {
		case 0:
			c.SubjectID, c.FactType = "shared", fmt.Sprintf("fact-%d", rng.IntN(3)) // overrides
			fallthrough
		case 1, 2:
			res, err := gov.Submit(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			applied = append(applied, res.Record.ID)
		case 3:
			if len(applied) == 0 {
				continue
			}
			id := applied[rng.IntN(len(applied))]
			if _, err := gov.Rollback(ctx, id, false, "t", "t"); err != nil && memory.ErrorCode(err) != memory.EINVALID &&
				memory.ErrorCode(err) != memory.ECONFLICT {
				t.Fatal(err)
			}
		}
		fs := filters[step%len(filters)]
		f, err := parseFilters([]byte(fs))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"tea", "ramen alps", "cities glass", "猫"} {
			for _, cut := range []struct {
				th float64
				k  int
			}{{0, 3}, {thresholdV3, 5}} {
				p := searchParams{query: q, filter: f, topK: cut.k, threshold: cut.th}
				got, err := h.search(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				want, err := searchByList(ctx, gov, p)
				if err != nil {
					t.Fatal(err)
				}
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				if string(g) != string(w) {
					t.Fatalf("step %d, filters %s, query %q, threshold %v, top %d:\n got %s\nwant %s", step, fs, q, cut.th, cut.k, g, w)
				}
			}
		}
	}
}

// TestSearchReturnsOnlyActiveUnderWriters searches while writers override
// and roll back memories of the same user: every memory a search returns
// is active, and every search finds the memories that never change.
func TestSearchReturnsOnlyActiveUnderWriters(t *testing.T) {
	ctx := context.Background()
	gov, h := applyingHandler(t, store.Options{GroupCommit: true})
	scope := memory.Scope{UserID: "u"}
	for i := range 3 {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, Scope: scope, Summary: fmt.Sprintf("steady fact %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := parseFilters([]byte(`{"user_id": "u"}`))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var searchers sync.WaitGroup
	for range 2 {
		searchers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, q := range []string{"steady", "changing value"} {
					out, err := h.search(ctx, searchParams{query: q, filter: f, topK: 10, threshold: thresholdV3})
					if err != nil {
						t.Error(err)
						return
					}
					for _, m := range out {
						if m.LifecycleState != string(memory.StatusActive) {
							t.Errorf("search %q returned %s, %s", q, m.ID, m.LifecycleState)
						}
					}
					if q == "steady" && len(out) != 3 {
						t.Errorf("search %q found %d of the 3 steady facts", q, len(out))
					}
				}
			}
		})
	}
	var writers sync.WaitGroup
	for w := range 3 {
		writers.Go(func() {
			for i := range 20 {
				res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerState, Scope: scope, SubjectID: "u",
					FactType: fmt.Sprintf("w%d", w), Summary: fmt.Sprintf("changing value %d", i)})
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 == 2 {
					if _, err := gov.Rollback(ctx, res.Record.ID, false, "t", "t"); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	searchers.Wait()
}

// applyingHandler opens a store on a temporary directory with o and
// serves a Handler over it whose governor applies every write; the store
// closes when the test ends.
func applyingHandler(tb testing.TB, o store.Options) (*memory.Governor, *Handler) {
	tb.Helper()
	st := badgertest.NewWith(tb, o)
	apply := memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: apply})
	return gov, New(Options{Gov: gov, Events: NewEventLog(st), Search: search.New(st, search.Options{})})
}

// TestHandlerWithoutIndexAnswersAlike: a Handler built with a governor
// only (no store to index, as the MCP server may build one) lists through
// the governor and ranks what it listed, and answers what a Handler
// reading through the index does.
func TestHandlerWithoutIndexAnswersAlike(t *testing.T) {
	ctx := context.Background()
	gov, indexed := applyingHandler(t, store.Options{NoSync: true})
	bare := New(Options{Gov: gov})
	if bare.index != nil {
		t.Fatal("a handler without a store has an index")
	}
	for i, s := range []string{"likes green tea", "tea in the morning", "hiking the alps", "tea and alps", "ramen"} {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, Scope: memory.Scope{UserID: fmt.Sprintf("u%d", i%2)}, Summary: s}); err != nil {
			t.Fatal(err)
		}
	}
	compared := 0
	for _, fs := range []string{`{"user_id": "u0"}`, `{"OR": [{"user_id": "u0"}, {"user_id": "u1"}]}`, `{"user_id": "u1", "keywords": "tea"}`} {
		f, err := parseFilters([]byte(fs))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"tea", "alps", "zebra"} {
			p := searchParams{query: q, filter: f, topK: 10}
			got, err1 := bare.search(ctx, p)
			want, err2 := indexed.search(ctx, p)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if err1 != nil || err2 != nil || string(g) != string(w) {
				t.Fatalf("filters %s, query %q: without an index %s (%v), with %s (%v)", fs, q, g, err1, w, err2)
			}
			compared += len(want)
		}
		got, err1 := bare.list(ctx, f)
		want, err2 := indexed.list(ctx, f)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if err1 != nil || err2 != nil || string(g) != string(w) {
			t.Fatalf("list %s: without an index %s (%v), with %s (%v)", fs, g, err1, w, err2)
		}
	}
	if compared == 0 {
		t.Fatal("no search found anything: nothing compared")
	}
}
