package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// searchByList is the search as it was before it scored from the index of
// active records: list and decode every record in scope, tokenize each,
// score, sort everything (search.Rank). TestSearchMatchesTheListedSearch
// holds search to its results.
func searchByList(ctx context.Context, gov *memory.Governor, p searchParams) ([]memoryJSON, error) {
	recs, err := gov.List(ctx, memory.ListFilter{Scope: p.filter.scope()})
	if err != nil {
		return nil, err
	}
	return toHits(search.Rank(recs, search.Query{Text: p.query, Filter: p.filter.ast, TopK: p.topK, Threshold: p.threshold})), nil
}

// TestSearchMatchesTheListedSearch compares search with searchByList on a
// random corpus made for ties (repeated texts, equal times, approvals that
// activate later than they were created), words tokenize treats specially
// (stopwords, plurals, possessives, case, non-ASCII and CJK text), summaries
// too long for the index, superseded versions, and filters on index fields
// and on fields only the record holds.
func TestSearchMatchesTheListedSearch(t *testing.T) {
	ctx := context.Background()
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		if rng.IntN(3) == 0 {
			now = now.Add(time.Second) // otherwise equal times: ids decide
		}
		return now
	}
	park := memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
		if strings.Contains(in.Candidate.Summary, "wait") {
			return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview}, nil
		}
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: park, Now: clock})
	h := New(Options{Gov: gov, Events: NewEventLog(st), Search: search.New(st, search.Options{})})

	vocab := []string{"tea", "teas", "Tea", "cities", "city", "glass", "bus", "the", "a", "user's", "don't", "s",
		"ramen", "RAMEN", "hiking", "alps", "café", "naïve", "项目", "猫", "wait", "v2", "2026", "it’s", "ramen,", "(tea)"}
	text := func() string {
		n := 1 + rng.IntN(6)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	var texts []string
	var parked []string
	for i := range 300 {
		s := text()
		if len(texts) > 0 && rng.IntN(4) == 0 {
			s = texts[rng.IntN(len(texts))] // the same text again: equal scores
		}
		if i%40 == 7 {
			s += " " + strings.Repeat("long ", 500) // beyond what the index keeps
		}
		texts = append(texts, s)
		c := memory.Candidate{Layer: []memory.Layer{memory.LayerKnowledge, memory.LayerPreference}[rng.IntN(2)],
			Scope: memory.Scope{UserID: fmt.Sprintf("u%d", rng.IntN(2)), AgentID: []string{"", "ag"}[rng.IntN(2)]}, Summary: s}
		if rng.IntN(5) == 0 {
			c.Metadata = map[string]any{"k": "v"}
		}
		if rng.IntN(10) == 0 {
			c.SubjectID, c.FactType = "shared", fmt.Sprintf("fact-%d", rng.IntN(3)) // superseded versions
		}
		res, err := gov.Submit(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == memory.OutcomeParked {
			parked = append(parked, res.Record.ID)
		}
		if len(parked) > 0 && rng.IntN(8) == 0 {
			if _, err := gov.Approve(ctx, parked[0], memory.Review{By: "r"}); err != nil && memory.ErrorCode(err) != memory.ESTALE {
				t.Fatal(err)
			}
			parked = parked[1:]
		}
	}

	filters := []string{
		`{"user_id": "u0"}`,
		`{"AND": [{"user_id": "u1"}, {"categories": {"in": ["preference"]}}]}`,
		`{"user_id": "u0", "agent_id": "ag"}`,
		`{"OR": [{"user_id": "u0"}, {"user_id": "u1"}]}`,
		`{"user_id": "u1", "keywords": {"icontains": "tea"}}`,
		`{"user_id": "u0", "metadata": {"k": "v"}}`,
		`{"AND": [{"user_id": "u1"}, {"NOT": [{"created_at": {"gte": "2026-12-01"}}]}]}`,
	}
	queries := []string{"tea", "cities", "ramen tea", "RAMEN hiking alps", "the", "zebra", "项目 猫", "café", "user",
		"tea tea glass bus v2 2026 hiking alps ramen city wait long"}
	compared := 0
	for _, fs := range filters {
		f, err := parseFilters([]byte(fs))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			// searchByList sorts everything, then skips what is under the
			// threshold and stops at topK: its answer to any threshold and
			// topK is a cut of its full ranking.
			ranking, err := searchByList(ctx, gov, searchParams{query: q, filter: f, topK: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			for _, cut := range []struct {
				th float64
				k  int
			}{{0, 1}, {0, 10}, {thresholdV3, 1000}, {thresholdV2, 3}, {thresholdV3, 10}} {
				got, err := h.search(ctx, searchParams{query: q, filter: f, topK: cut.k, threshold: cut.th})
				if err != nil {
					t.Fatal(err)
				}
				want := []memoryJSON{}
				for _, m := range ranking {
					if len(want) < cut.k && *m.Score >= cut.th {
						want = append(want, m)
					}
				}
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				if string(g) != string(w) {
					t.Fatalf("filters %s, query %q, threshold %v, top %d:\n got %s\nwant %s", fs, q, cut.th, cut.k, g, w)
				}
				compared += len(want)
			}
		}
	}
	if compared == 0 {
		t.Fatal("no search returned anything: the test compares nothing")
	}
}
