package mcp

import (
	"testing"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// newFactsEnv is newEnv with free text matched with the active memories,
// as the sidecar wires it (facts.Matcher over the search index).
func newFactsEnv(t testing.TB) *env {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	index := search.New(st, search.Options{})
	t.Cleanup(func() { index.Close(); st.Close() })
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
