package mcp

import (
	"slices"
	"testing"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
)

// newFactsEnv is newEnv with free text matched with the active memories,
// as the sidecar wires it (facts.Matcher over the search index).
func newFactsEnv(t testing.TB) *env {
	t.Helper()
	st := badgertest.New(t)
	index := search.New(st, search.Options{})
	t.Cleanup(func() { index.Close() }) // before the store's, registered earlier
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy), Active: index,
		Facts: &facts.Matcher{Index: index}})
	return serveEnv(t, gov, mem0.New(mem0.Options{Gov: gov, Events: mem0.NewEventLog(st), Search: index}))
}

// TestAddMemoryKeepsOneFact: through the MCP tools, a normalised repeat
// changes nothing and names the memory it repeats; a new value of its
// fact updates that memory; an observation stated twice is one.
func TestAddMemoryKeepsOneFact(t *testing.T) {
	e := newFactsEnv(t)
	cs := e.connect("openclaw", nil)
	var first writeAnswer
	decode(t, mustOK(t, cs, "add_memory", map[string]any{"text": "Carol works at Acme Corp.", "user_id": "carol"}), &first)
	if len(first.Results) != 1 || first.Results[0].Event != "ADD" {
		t.Fatalf("first add: %+v", first)
	}
	id := first.Results[0].ID

	res := mustOK(t, cs, "add_memory", map[string]any{"text": "carol works at ACME corp", "user_id": "carol"})
	var again writeAnswer
	decode(t, res, &again)
	ws := writesOf(t, res)
	if len(again.Results) != 0 || len(ws) != 1 || ws[0].Outcome != outUnchanged || ws[0].MemoryID != id {
		t.Fatalf("a repeat changes nothing and names memory %s: %+v %+v", id, again, ws)
	}

	var upd writeAnswer
	decode(t, mustOK(t, cs, "add_memory", map[string]any{"text": "Carol now works at Globex.", "user_id": "carol"}), &upd)
	if len(upd.Results) != 1 || upd.Results[0].ID != id || upd.Results[0].Event != "UPDATE" {
		t.Fatalf("a new employer updates memory %s: %+v", id, upd)
	}
	var list struct {
		Results []mem0.Memory `json:"results"`
	}
	decode(t, mustOK(t, cs, "get_memories", map[string]any{"user_id": "carol"}), &list)
	if len(list.Results) != 1 || list.Results[0].Memory != "Carol now works at Globex." {
		t.Fatalf("one active memory, the new value: %+v", list.Results)
	}

	obs := map[string]any{"observations": []any{map[string]any{"entityName": "carol", "contents": []string{"likes hiking"}}}}
	mustOK(t, cs, "add_observations", obs)
	for _, w := range writesOf(t, mustOK(t, cs, "add_observations", obs)) {
		if w.Outcome != outUnchanged {
			t.Fatalf("an observation stated twice is one: %+v", w)
		}
	}
}

// TestObservationsKeepOneFact: add_observations compares a new
// observation with its entity's others as free text is compared: a
// normalised repeat changes nothing, a new value of an observation's fact
// replaces it in its slot (history kept), and observations that only may
// be one fact, or are near misses, stay apart.
func TestObservationsKeepOneFact(t *testing.T) {
	e := newFactsEnv(t)
	cs := e.connect("openclaw", nil)
	mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "dave", "entityType": "person", "observations": []string{"Dave lives in Paris", "Dave is allergic to peanuts"}}}})
	observe := func(texts ...string) (observationsResult, []writeResult) {
		t.Helper()
		res := mustOK(t, cs, "add_observations", map[string]any{"observations": []any{
			map[string]any{"entityName": "dave", "contents": texts}}})
		var out observationsResult
		decode(t, res, &out)
		return out, writesOf(t, res)
	}
	graph := func() []string {
		t.Helper()
		var g KnowledgeGraph
		decode(t, mustOK(t, cs, "open_nodes", map[string]any{"names": []string{"dave"}}), &g)
		if len(g.Entities) != 1 {
			t.Fatalf("open_nodes dave: %+v", g)
		}
		return g.Entities[0].Observations
	}
	slotOf := func(text string) string {
		t.Helper()
		recs, err := e.gov.List(t.Context(), memory.ListFilter{SubjectID: "dave"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Summary == text {
				return r.SlotID
			}
		}
		t.Fatalf("no active observation %q", text)
		return ""
	}
	paris := slotOf("Dave lives in Paris")

	out, ws := observe("dave lives in PARIS.")
	if len(out.Results) != 1 || len(out.Results[0].AddedObservations) != 0 || len(ws) != 1 ||
		ws[0].Outcome != outUnchanged || ws[0].MemoryID != paris {
		t.Fatalf("a normalised repeat changes nothing and names the observation: %+v %+v", out, ws)
	}

	out, ws = observe("Dave moved to Berlin")
	if len(out.Results[0].AddedObservations) != 1 || len(ws) != 1 || ws[0].Outcome != outApplied || ws[0].MemoryID != paris {
		t.Fatalf("a new city updates the observation's slot %s: %+v %+v", paris, out, ws)
	}
	got := graph()
	if slices.Contains(got, "Dave lives in Paris") || !slices.Contains(got, "Dave moved to Berlin") || len(got) != 2 {
		t.Fatalf("one observation of where Dave lives, the new one: %q", got)
	}
	hist, err := e.gov.History(t.Context(), paris)
	if err != nil || len(hist) != 2 {
		t.Fatalf("the slot keeps both versions: %d, %v", len(hist), err)
	}

	observe("Dave is allergic to penicillin", "Dave likes cats", "Dave likes dogs")
	got = graph()
	for _, want := range []string{"Dave is allergic to peanuts", "Dave is allergic to penicillin", "Dave likes cats", "Dave likes dogs"} {
		if !slices.Contains(got, want) {
			t.Fatalf("near misses and values that hold side by side stay apart: %q lacks %q", got, want)
		}
	}
}
