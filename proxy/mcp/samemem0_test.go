package mcp

// One Mem0 shape: the Mem0 REST API (real HTTP on loopback) and the MCP
// Mem0 tools (the SDK client over Streamable HTTP) are driven over the
// same data, and every answer about the same memory or event must agree
// field by field: ids, text, categories, timestamps, scores, statuses.
// A field that drifts in either dialect fails here with its JSON path.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// rest sends a JSON request to the Mem0 REST routes and decodes the answer.
func (e *env) rest(t *testing.T, method, path string, body any, want int) any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return out
}

// tool calls an MCP tool that must succeed and returns its structured
// content as generic JSON, as the client received it.
func tool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	decode(t, mustOK(t, cs, name, args), &out)
	return out
}

// same fails the test with every JSON path where the two answers differ.
func same(t *testing.T, what string, rest, viaMCP any) {
	t.Helper()
	var diffs []string
	diffJSON("", rest, viaMCP, &diffs)
	if len(diffs) > 0 {
		t.Errorf("%s: REST and MCP differ:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

func diffJSON(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		union := maps.Clone(av)
		maps.Copy(union, bv)
		for _, k := range keysOf(union) {
			x, inA := av[k]
			y, inB := bv[k]
			if inA != inB {
				*out = append(*out, fmt.Sprintf("%s.%s: REST has it: %v, MCP has it: %v", path, k, inA, inB))
				continue
			}
			diffJSON(path+"."+k, x, y, out)
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, fmt.Sprintf("%s: REST %v, MCP %v", path, a, b))
	}
}

func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func strAt(v any, path ...any) string {
	s, _ := field(v, path...).(string)
	return s
}

func TestRESTAndMCPGiveOneMem0Shape(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("mem0-client", nil)
	ctx := context.Background()

	// Memories of alice written over both dialects, one of bob's, one
	// that waits for review, one that policy refuses.
	restAdd := func(text string, user string, metadata map[string]any) map[string]any {
		body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "user_id": user, "infer": false}
		if metadata != nil {
			body["metadata"] = metadata
		}
		return e.rest(t, "POST", "/v3/memories/add/", body, http.StatusOK).(map[string]any)
	}
	tea := restAdd("Alice prefers green tea in the morning", "alice", map[string]any{"topic": "drinks"})
	coffee := tool(t, cs, "add_memory", map[string]any{"text": "Alice drinks coffee after lunch", "user_id": "alice",
		"metadata": map[string]any{"topic": "drinks"}})
	bike := tool(t, cs, "add_memory", map[string]any{"text": "Alice rides a green bike to work", "user_id": "alice", "agent_id": "planner"})
	restAdd("Bob prefers black tea", "bob", nil)
	parkedREST := restAdd("Never publish a draft without a human check", "alice", nil)
	parkedMCP := tool(t, cs, "add_memory", map[string]any{"text": "auto-publish every draft at noon", "user_id": "alice"})
	refused := call(t, cs, "add_memory", map[string]any{"text": "my password is swordfish", "user_id": "alice"})

	teaID, coffeeID, bikeID := strAt(tea, "results", 0, "id"), strAt(coffee, "results", 0, "id"), strAt(bike, "results", 0, "id")
	if teaID == "" || coffeeID == "" || bikeID == "" {
		t.Fatalf("adds: %v / %v / %v", tea, coffee, bike)
	}

	// The write answers: the same results entries, key for key, and the
	// same statuses; only the ids and the words on how to poll differ.
	for _, c := range []struct {
		name     string
		rest     map[string]any
		mcp      map[string]any
		status   string
		event    string
		restPoll string
	}{
		{"applied add", tea, coffee, "SUCCEEDED", "ADD", ""},
		{"parked add", parkedREST, parkedMCP, "PENDING", proxy.EventPendingReview, "GET /v1/event/"},
	} {
		r, m := field(c.rest, "results", 0).(map[string]any), field(c.mcp, "results", 0).(map[string]any)
		if c.rest["status"] != c.status || c.mcp["status"] != c.status || r["event"] != c.event || m["event"] != c.event {
			t.Errorf("%s: REST %v, MCP %v", c.name, c.rest, c.mcp)
		}
		if !slices.Equal(keysOf(r), keysOf(m)) {
			t.Errorf("%s: REST result keys %v, MCP result keys %v", c.name, keysOf(r), keysOf(m))
		}
		if c.event == proxy.EventPendingReview && (!strings.Contains(strAt(r, "memory"), c.restPoll) ||
			!strings.Contains(strAt(m, "memory"), "get_event_status with event_id "+strAt(c.mcp, "event_id"))) {
			t.Errorf("%s: poll hints: REST %q, MCP %q", c.name, strAt(r, "memory"), strAt(m, "memory"))
		}
	}
	if !refused.IsError || !strings.Contains(text(refused), "secrets are never remembered") {
		t.Fatalf("refused add: %s", text(refused))
	}

	// Every memory reads the same by id, whichever dialect wrote it; by
	// its memory id or the id of its version.
	for _, id := range []string{teaID, coffeeID, bikeID, strAt(tea, "results", 0, "record_id")} {
		same(t, "get "+id, e.rest(t, "GET", "/v1/memories/"+id+"/", nil, http.StatusOK), tool(t, cs, "get_memory", map[string]any{"memory_id": id}))
	}
	got := tool(t, cs, "get_memory", map[string]any{"memory_id": coffeeID})
	if strAt(got, "categories", 0) != strAt(got, "memgate", "layer") || !strings.HasSuffix(strAt(got, "created_at"), "Z") ||
		strAt(got, "memory") != "Alice drinks coffee after lunch" || strAt(got, "metadata", "topic") != "drinks" {
		t.Fatalf("memory shape: %v", got)
	}

	// Searches: the same results in the same order with the same scores,
	// under Mem0 filters of every kind.
	layer := strAt(got, "memgate", "layer")
	for _, c := range []struct {
		query   string
		filters map[string]any
	}{
		{"what does alice drink?", map[string]any{"user_id": "alice"}},
		{"green", map[string]any{"OR": []any{map[string]any{"user_id": "alice"}, map[string]any{"user_id": "bob"}}}},
		{"tea", map[string]any{"AND": []any{map[string]any{"user_id": "*"}, map[string]any{"categories": map[string]any{"in": []any{layer}}}}}},
		{"drinks coffee tea", map[string]any{"user_id": "alice", "metadata": map[string]any{"topic": "drinks"}}},
		{"green bike", map[string]any{"AND": []any{map[string]any{"user_id": "alice"}, map[string]any{"NOT": []any{map[string]any{"agent_id": "planner"}}}}}},
		{"alice", map[string]any{"user_id": "alice", "created_at": map[string]any{"gte": "2020-01-01"}, "keywords": map[string]any{"icontains": "ALICE"}}},
	} {
		for _, threshold := range []float64{0, 0.1, 0.5} {
			what := fmt.Sprintf("search %q %v threshold %v", c.query, c.filters, threshold)
			rest := e.rest(t, "POST", "/v3/memories/search/", map[string]any{"query": c.query, "filters": c.filters, "top_k": 3, "threshold": threshold}, http.StatusOK)
			viaMCP := tool(t, cs, "search_memories", map[string]any{"query": c.query, "filters": c.filters, "limit": 3, "threshold": threshold})
			same(t, what, rest, viaMCP)
			if threshold == 0 && len(field(rest, "results").([]any)) == 0 {
				t.Errorf("%s: found nothing, so compared nothing", what)
			}
		}
	}
	// Without a threshold both use v3's default.
	same(t, "search at the default threshold",
		e.rest(t, "POST", "/v3/memories/search/", map[string]any{"query": "green tea", "filters": map[string]any{"user_id": "alice"}}, http.StatusOK),
		tool(t, cs, "search_memories", map[string]any{"query": "green tea", "user_id": "alice"}))

	// Lists: the same page of the same memories, newest first, and count.
	for _, c := range []struct {
		filters        map[string]any
		page, pageSize int
	}{{map[string]any{"user_id": "alice"}, 1, 100}, {map[string]any{"user_id": "alice"}, 2, 1},
		{map[string]any{"OR": []any{map[string]any{"user_id": "bob"}, map[string]any{"agent_id": "planner"}}}, 1, 10}} {
		rest := e.rest(t, "POST", "/v3/memories/", map[string]any{"filters": c.filters, "page": c.page, "page_size": c.pageSize}, http.StatusOK)
		viaMCP := tool(t, cs, "get_memories", map[string]any{"filters": c.filters, "page": c.page, "page_size": c.pageSize})
		what := fmt.Sprintf("list %v page %d of %d", c.filters, c.page, c.pageSize)
		same(t, what, field(rest, "count"), field(viaMCP, "count"))
		same(t, what, field(rest, "results"), field(viaMCP, "results"))
	}

	// Updates over either dialect, then history and the update events.
	updMCP := tool(t, cs, "update_memory", map[string]any{"memory_id": teaID, "text": "Alice prefers jasmine tea in the morning"})
	updREST := e.rest(t, "PUT", "/v1/memories/"+coffeeID+"/", map[string]any{"text": "Alice drinks espresso after lunch"}, http.StatusOK).(map[string]any)
	for _, id := range []string{teaID, coffeeID} {
		same(t, "get after update "+id, e.rest(t, "GET", "/v1/memories/"+id+"/", nil, http.StatusOK), tool(t, cs, "get_memory", map[string]any{"memory_id": id}))
		rest := e.rest(t, "GET", "/v1/memories/"+id+"/history/", nil, http.StatusOK)
		viaMCP := tool(t, cs, "get_memory_history", map[string]any{"memory_id": id})
		same(t, "history "+id, rest, field(viaMCP, "results"))
		if n := len(rest.([]any)); n != 2 {
			t.Errorf("history %s: %d versions, want 2", id, n)
		}
	}
	if strAt(updMCP, "status") != "SUCCEEDED" || strAt(updMCP, "results", 0, "event") != "UPDATE" || strAt(updREST, "event") != "UPDATE" {
		t.Fatalf("updates: MCP %v, REST %v", updMCP, updREST)
	}

	// Deletes over either dialect: gone from both.
	delMCP := tool(t, cs, "delete_memory", map[string]any{"memory_id": bikeID})
	e.rest(t, "DELETE", "/v1/memories/"+coffeeID+"/", nil, http.StatusOK)
	for _, id := range []string{bikeID, coffeeID} {
		e.rest(t, "GET", "/v1/memories/"+id+"/", nil, http.StatusNotFound)
		if res := call(t, cs, "get_memory", map[string]any{"memory_id": id}); !res.IsError || !strings.Contains(text(res), "Memory not found!") {
			t.Errorf("deleted %s over MCP: %s", id, text(res))
		}
		same(t, "history after delete "+id, e.rest(t, "GET", "/v1/memories/"+id+"/history/", nil, http.StatusOK),
			field(tool(t, cs, "get_memory_history", map[string]any{"memory_id": id}), "results"))
	}

	// Events, whichever dialect wrote them, read the same in both: while
	// they wait, and after a reviewer approved one and rejected the other.
	events := map[string]string{"REST add": strAt(tea, "event_id"), "MCP add": strAt(coffee, "event_id"),
		"REST parked add": strAt(parkedREST, "event_id"), "MCP parked add": strAt(parkedMCP, "event_id"),
		"MCP update": strAt(updMCP, "event_id"), "REST update": strAt(updREST, "event_id"), "MCP delete": strAt(delMCP, "event_id")}
	compareEvents := func(stage string) {
		for name, id := range events {
			if id == "" {
				t.Fatalf("%s: no event id", name)
			}
			same(t, stage+": event of the "+name, e.rest(t, "GET", "/v1/event/"+id+"/", nil, http.StatusOK),
				tool(t, cs, "get_event_status", map[string]any{"event_id": id}))
		}
	}
	compareEvents("waiting")
	if s := strAt(tool(t, cs, "get_event_status", map[string]any{"event_id": events["MCP parked add"]}), "status"); s != "PENDING" {
		t.Fatalf("parked MCP event is %s", s)
	}
	if _, err := e.gov.Approve(ctx, strAt(parkedREST, "results", 0, "record_id"), memory.Review{By: "rev"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gov.Reject(ctx, strAt(parkedMCP, "results", 0, "record_id"), memory.Review{By: "rev", Note: "no"}); err != nil {
		t.Fatal(err)
	}
	compareEvents("decided")
	for name, want := range map[string]string{"REST parked add": "SUCCEEDED", "MCP parked add": "FAILED"} {
		if s := strAt(e.rest(t, "GET", "/v1/event/"+events[name]+"/", nil, http.StatusOK), "status"); s != want {
			t.Errorf("%s after review: %s, want %s", name, s, want)
		}
	}
	// The approved memory reads the same too.
	same(t, "search after approval",
		e.rest(t, "POST", "/v3/memories/search/", map[string]any{"query": "publish draft", "filters": map[string]any{"user_id": "alice"}}, http.StatusOK),
		tool(t, cs, "search_memories", map[string]any{"query": "publish draft", "filters": map[string]any{"user_id": "alice"}}))
}

func keysOf(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
