package mem0

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/memgate/memgate/memory"
)

// seedSearch writes memories for alice and bob: applied, superseded,
// parked and refused ones.
func seedSearch(t *testing.T, e *env) (hikingID string) {
	t.Helper()
	hikingID = e.addApplied("I love hiking in the Swiss Alps", "agent_id", "travel")
	e.addApplied("My favourite food is ramen", "agent_id", "chef")
	e.addApplied("I went hiking once and hated the rain", "agent_id", "travel", "run_id", "r2")
	e.call("POST", "/v3/memories/add/", map[string]any{"messages": "Bob loves hiking too", "user_id": "bob", "infer": false}, http.StatusOK)
	// An older version superseded by an update, a parked write and a refused one.
	old := e.addApplied("I went skiing in the Alps in 2020")
	e.call("PUT", "/v1/memories/"+old+"/", map[string]any{"text": "I went snowboarding in 2021"}, http.StatusOK)
	e.add("Never auto-publish hiking posts in the Alps")
	e.add("my hiking password is alps123")
	return hikingID
}

func TestSearchRanksTheActiveLayerLexically(t *testing.T) {
	e := newEnv(t)
	hikingID := seedSearch(t, e)
	ans := e.call("POST", "/v3/memories/search/", map[string]any{"query": "hiking in the Alps", "filters": map[string]any{"user_id": "alice"}}, http.StatusOK).obj()
	results := ans["results"].([]any)
	got := texts(results, "memory")
	want := []string{"I love hiking in the Swiss Alps", "I went hiking once and hated the rain"}
	if !slices.Equal(got, want) {
		t.Fatalf("results %q, want %q (never superseded, pending, refused or another user's)", got, want)
	}
	first := results[0].(map[string]any)
	if first["id"] != hikingID || first["score"].(float64) <= results[1].(map[string]any)["score"].(float64) || first["score"].(float64) > 1 {
		t.Fatalf("scores rank in [0, 1]: %v", results)
	}
}

func TestSearchHonoursTopKThresholdAndFilters(t *testing.T) {
	e := newEnv(t)
	seedSearch(t, e)
	tests := []struct {
		name string
		path string
		body map[string]any
		want []string
	}{
		{"top_k", "/v3/memories/search/", map[string]any{"query": "hiking", "top_k": 1, "filters": map[string]any{"user_id": "alice"}},
			[]string{"I love hiking in the Swiss Alps"}},
		{"threshold excludes weak matches", "/v3/memories/search/", map[string]any{"query": "hiking rain", "threshold": 0.8,
			"filters": map[string]any{"user_id": "alice"}}, []string{"I went hiking once and hated the rain"}},
		{"threshold 0 returns everything in scope", "/v3/memories/search/", map[string]any{"query": "zebra", "threshold": 0,
			"filters": map[string]any{"user_id": "alice"}},
			[]string{"I went snowboarding in 2021", "I went hiking once and hated the rain", "My favourite food is ramen", "I love hiking in the Swiss Alps"}},
		{"AND with in", "/v3/memories/search/", map[string]any{"query": "hiking food", "filters": map[string]any{"AND": []any{
			map[string]any{"user_id": "alice"}, map[string]any{"agent_id": map[string]any{"in": []any{"chef"}}}}}},
			[]string{"My favourite food is ramen"}},
		{"OR across users", "/v3/memories/search/", map[string]any{"query": "hiking", "filters": map[string]any{"OR": []any{
			map[string]any{"user_id": "bob"}, map[string]any{"AND": []any{map[string]any{"user_id": "alice"}, map[string]any{"run_id": "r2"}}}}}},
			[]string{"Bob loves hiking too", "I went hiking once and hated the rain"}},
		{"NOT", "/v3/memories/search/", map[string]any{"query": "hiking", "filters": map[string]any{"user_id": "alice",
			"NOT": []any{map[string]any{"run_id": "r2"}}}}, []string{"I love hiking in the Swiss Alps"}},
		{"camelCase keys as the JS SDK sends them", "/v3/memories/search/", map[string]any{"query": "ramen",
			"filters": map[string]any{"userId": "alice"}}, []string{"My favourite food is ramen"}},
		{"wildcard", "/v3/memories/search/", map[string]any{"query": "loves hiking", "filters": map[string]any{"user_id": "*"}},
			[]string{"Bob loves hiking too", "I love hiking in the Swiss Alps", "I went hiking once and hated the rain"}},
		{"created_at range", "/v3/memories/search/", map[string]any{"query": "ramen", "filters": map[string]any{"user_id": "alice",
			"created_at": map[string]any{"gte": "2026-12-01", "lte": "2026-12-01"}}}, []string{"My favourite food is ramen"}},
		{"created_at outside", "/v3/memories/search/", map[string]any{"query": "ramen", "filters": map[string]any{"user_id": "alice",
			"created_at": map[string]any{"gt": "2026-12-01"}}}, []string{}},
		{"open-source top-level ids", "/search", map[string]any{"query": "hiking", "user_id": "bob"}, []string{"Bob loves hiking too"}},
		{"v1 top-level ids", "/v1/memories/search/", map[string]any{"query": "ramen", "user_id": "alice"}, []string{"My favourite food is ramen"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.call("POST", tt.path, tt.body, http.StatusOK)
			items := resp.arr()
			if m := resp.obj(); m != nil {
				items = m["results"].([]any)
			}
			got := texts(items, "memory")
			if got == nil {
				got = []string{}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("results %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSearchV2AnswersABareArrayWithItsDefaultThreshold(t *testing.T) {
	e := newEnv(t)
	seedSearch(t, e)
	items := e.call("POST", "/v2/memories/search/", map[string]any{"query": "hiking", "filters": map[string]any{"user_id": "alice"}}, http.StatusOK).arr()
	if len(items) != 2 {
		t.Fatalf("v2 answers an array: %v", items)
	}
	for _, it := range items {
		if s := it.(map[string]any)["score"].(float64); s < thresholdV2 {
			t.Fatalf("score %v under v2's default threshold", s)
		}
	}
}

func TestSearchNeverSeesAParkedWriteUntilApproved(t *testing.T) {
	e := newEnv(t)
	e.add("Never auto-publish travel photos")
	q := map[string]any{"query": "auto-publish travel photos", "filters": map[string]any{"user_id": "alice"}}
	if got := e.call("POST", "/v3/memories/search/", q, http.StatusOK).obj()["results"].([]any); len(got) != 0 {
		t.Fatalf("a parked write is searchable: %v", got)
	}
	e.approveAll()
	if got := texts(e.call("POST", "/v3/memories/search/", q, http.StatusOK).obj()["results"].([]any), "memory"); !slices.Equal(got, []string{"Never auto-publish travel photos"}) {
		t.Fatalf("after approval: %q", got)
	}
	// Rejected and rolled-back versions stay invisible too.
	rec := e.active()[0]
	if _, err := e.gov.Rollback(context.Background(), rec.ID, false, "test", "operator"); err != nil {
		t.Fatal(err)
	}
	if got := e.call("POST", "/v3/memories/search/", q, http.StatusOK).obj()["results"].([]any); len(got) != 0 {
		t.Fatalf("a rolled-back version is searchable: %v", got)
	}
	if rec := e.record(rec.ID); rec.Status != memory.StatusRolledBack {
		t.Fatalf("status %s", rec.Status)
	}
}

func TestSearchRequiresQueryAndScope(t *testing.T) {
	e := newEnv(t)
	for _, body := range []string{
		`{"filters": {"user_id": "alice"}}`,
		`{"query": "  ", "filters": {"user_id": "alice"}}`,
		`{"query": "x"}`,
		`{"query": "x", "filters": {"OR": [{"user_id": "alice"}, {"keywords": "x"}]}}`,
		`{"query": "x", "filters": {"NOT": [{"user_id": "alice"}]}}`,
		`{"query": "x", "filters": {"user_id": "alice"}, "top_k": 0}`,
		`{"query": "x", "filters": {"user_id": "alice"}, "top_k": 2.5}`,
		`{"query": "x", "filters": {"user_id": "alice"}, "threshold": 1.5}`,
	} {
		wantErrorShape(t, e.do("POST", "/v3/memories/search/", []byte(body)), http.StatusBadRequest, memory.EINVALID)
	}
}
