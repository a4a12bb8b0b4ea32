package mem0

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

func wantSameJSON(t *testing.T, what string, api, rest any) {
	t.Helper()
	a, r := testkit.AsJSON(t, api), testkit.AsJSON(t, rest)
	if ab, rb := mustJSON(t, a), mustJSON(t, r); ab != rb {
		t.Errorf("%s:\n API  %s\n REST %s", what, ab, rb)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every read of the API answers what the REST route answers for it.
func TestAPIReadsAsTheRESTRoutes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tea := e.addApplied("Alice prefers green tea", "metadata", map[string]any{"topic": "drinks"})
	e.addApplied("Alice rides a green bike", "agent_id", "planner")
	parked := e.add("Never publish without a human check")
	e.call("PUT", "/v1/memories/"+tea+"/", map[string]any{"text": "Alice prefers jasmine tea"}, http.StatusOK)
	threshold := 0.0
	compared := 0 // search results compared, so the test is not vacuous

	searches := []struct {
		filters string
		rest    map[string]any
	}{
		{`{"user_id":"alice"}`, map[string]any{"filters": map[string]any{"user_id": "alice"}}},
		{`{"AND":[{"user_id":"alice"},{"OR":[{"agent_id":"planner"},{"metadata":{"topic":"drinks"}}]}]}`, map[string]any{"filters": map[string]any{
			"AND": []any{map[string]any{"user_id": "alice"}, map[string]any{"OR": []any{
				map[string]any{"agent_id": "planner"}, map[string]any{"metadata": map[string]any{"topic": "drinks"}}}}}}}},
	}
	for _, s := range searches {
		for _, q := range []string{"green", "tea", "what does alice ride?"} {
			got, err := e.h.Search(ctx, SearchRequest{Query: q, Filters: json.RawMessage(s.filters), Threshold: &threshold})
			if err != nil {
				t.Fatal(err)
			}
			body := map[string]any{"query": q, "threshold": 0}
			for k, v := range s.rest {
				body[k] = v
			}
			wantSameJSON(t, "search "+q+" "+s.filters, got, e.call("POST", "/v3/memories/search/", body, http.StatusOK).obj()["results"])
			compared += len(got)
		}
		list, total, err := e.h.List(ctx, ListRequest{Filters: json.RawMessage(s.filters), PageSize: 1, Page: 2})
		if err != nil {
			t.Fatal(err)
		}
		env := e.call("POST", "/v3/memories/", map[string]any{"filters": s.rest["filters"], "page": 2, "page_size": 1}, http.StatusOK).obj()
		wantSameJSON(t, "list "+s.filters, list, env["results"])
		if float64(total) != env["count"] {
			t.Errorf("list %s: count %d, REST %v", s.filters, total, env["count"])
		}
	}

	if compared == 0 {
		t.Fatal("no search found anything")
	}
	m, err := e.h.Get(ctx, tea)
	if err != nil {
		t.Fatal(err)
	}
	wantSameJSON(t, "get", m, e.call("GET", "/v1/memories/"+tea+"/", nil, http.StatusOK).body)
	h, err := e.h.History(ctx, tea)
	if err != nil {
		t.Fatal(err)
	}
	wantSameJSON(t, "history", h, e.call("GET", "/v1/memories/"+tea+"/history/", nil, http.StatusOK).body)
	ev, err := e.h.Event(ctx, parked["event_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	wantSameJSON(t, "event", ev, e.call("GET", "/v1/event/"+parked["event_id"].(string)+"/", nil, http.StatusOK).body)
}

// Reads are scoped as REST scopes them, with a default for callers that
// have one (MCP's session user).
func TestAPIReadScopes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.addApplied("Alice prefers green tea")
	bad := 1.5
	for _, c := range []struct {
		name    string
		req     SearchRequest
		want    int
		wantErr string
	}{
		{"filters name alice", SearchRequest{Query: "tea", Filters: json.RawMessage(`{"user_id":"alice"}`)}, 1, ""},
		{"scope names alice", SearchRequest{Query: "tea", Scope: memory.Scope{UserID: "alice"}}, 1, ""},
		{"default alice", SearchRequest{Query: "tea", Default: memory.Scope{UserID: "alice"}}, 1, ""},
		{"filters override the default", SearchRequest{Query: "tea", Filters: json.RawMessage(`{"user_id":"bob"}`), Default: memory.Scope{UserID: "alice"}}, 0, ""},
		{"scope and filters are ANDed", SearchRequest{Query: "tea", Filters: json.RawMessage(`{"user_id":"bob"}`), Scope: memory.Scope{UserID: "alice"}}, 0, ""},
		{"unscoped", SearchRequest{Query: "tea"}, 0, "filters must name at least one"},
		{"unscoped filters", SearchRequest{Query: "tea", Filters: json.RawMessage(`{"NOT":[{"user_id":"bob"}]}`)}, 0, "filters must name at least one"},
		{"no query", SearchRequest{Filters: json.RawMessage(`{"user_id":"alice"}`)}, 0, "query is required"},
		{"blank query", SearchRequest{Query: " \t", Filters: json.RawMessage(`{"user_id":"alice"}`)}, 0, "query is required"},
		{"threshold", SearchRequest{Query: "tea", Scope: memory.Scope{UserID: "alice"}, Threshold: &bad}, 0, "threshold"},
		{"top_k", SearchRequest{Query: "tea", Scope: memory.Scope{UserID: "alice"}, TopK: MaxTopK + 1}, 0, "top_k"},
		{"bad filters", SearchRequest{Query: "tea", Filters: json.RawMessage(`{"user_id":{"gt":1}}`)}, 0, "filters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := e.h.Search(ctx, c.req)
			if c.wantErr != "" {
				if memory.ErrorCode(err) != memory.EINVALID || !strings.Contains(memory.ErrorMessage(err), c.wantErr) {
					t.Fatalf("err %v, want EINVALID %q", err, c.wantErr)
				}
				return
			}
			if err != nil || len(got) != c.want {
				t.Fatalf("got %d results (%v), want %d", len(got), err, c.want)
			}
		})
	}
	if _, _, err := e.h.List(ctx, ListRequest{Scope: memory.Scope{UserID: "alice"}, PageSize: MaxPageSize + 1}); memory.ErrorCode(err) != memory.EINVALID {
		t.Fatalf("page_size past the bound: %v", err)
	}
}

// Writes are governed Mem0 writes with events; an update keeps the
// memory's scope and metadata; a parked write's notice says how to poll in
// the caller's words.
func TestAPIWrites(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	actor := memory.Actor{Dialect: "mcp", UserID: "alice"}
	poll := WriteOptions{Poll: func(id string) string { return "check " + id }}

	add, err := e.h.Add(ctx, memory.Candidate{Summary: "Alice prefers green tea", Scope: memory.Scope{UserID: "alice"},
		Metadata: map[string]any{"topic": "drinks"}, Actor: actor, CandidateSource: memory.SourceTool}, poll)
	if err != nil {
		t.Fatal(err)
	}
	if add.Status != StatusSucceeded || len(add.Applied) != 1 || len(add.Results) != 1 || add.Results[0].Event != eventAdd {
		t.Fatalf("add: %+v", add)
	}
	id := add.Results[0].ID
	if ev := e.call("GET", "/v1/event/"+add.EventID+"/", nil, http.StatusOK).obj(); ev["status"] != StatusSucceeded || ev["event_type"] != eventAdd {
		t.Fatalf("the add's event over REST: %v", ev)
	}

	upd, err := e.h.Update(ctx, id, memory.Candidate{Summary: "Alice prefers jasmine tea", Actor: actor}, poll)
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.h.Get(ctx, id)
	if err != nil || upd.Results[0].Event != eventUpdate || m.Memory != "Alice prefers jasmine tea" || m.Metadata["topic"] != "drinks" ||
		m.UserID == nil || *m.UserID != "alice" {
		t.Fatalf("update: %+v; now %+v (%v)", upd, m, err)
	}

	parked, err := e.h.Add(ctx, memory.Candidate{Summary: "Never publish on Fridays", Scope: memory.Scope{UserID: "alice"}, Actor: actor}, poll)
	if err != nil {
		t.Fatal(err)
	}
	if parked.Status != StatusPending || len(parked.Parked) != 1 || parked.Results[0].Event != proxy.EventPendingReview ||
		!strings.HasSuffix(parked.Results[0].Memory, "Status: check "+parked.EventID+".") || parked.Results[0].Data.Memory != parked.Results[0].Memory {
		t.Fatalf("parked add: %+v", parked)
	}

	refused, err := e.h.Add(ctx, memory.Candidate{Summary: "my password is hunter2", Scope: memory.Scope{UserID: "alice"}, Actor: actor}, WriteOptions{})
	if err != nil || len(refused.Refused) != 1 || refused.Results[0].Event != proxy.EventRefused || strings.Contains(refused.Results[0].Memory, "hunter2") {
		t.Fatalf("refused add: %+v (%v)", refused, err)
	}

	del, err := e.h.Delete(ctx, id, memory.Candidate{Summary: "ignored", Actor: actor}, WriteOptions{})
	if err != nil || del.Results[0].Event != eventDelete || del.Results[0].Memory != "Alice prefers jasmine tea" {
		t.Fatalf("delete: %+v (%v)", del, err)
	}
	if _, err := e.h.Get(ctx, id); memory.ErrorCode(err) != memory.ENOTFOUND {
		t.Fatalf("deleted memory: %v", err)
	}
	for name, err := range map[string]error{
		"update": func() error {
			_, err := e.h.Update(ctx, id, memory.Candidate{Summary: "x"}, WriteOptions{})
			return err
		}(),
		"delete": func() error {
			_, err := e.h.Delete(ctx, "no-such-memory", memory.Candidate{}, WriteOptions{})
			return err
		}(),
	} {
		if memory.ErrorCode(err) != memory.ENOTFOUND {
			t.Errorf("%s of a memory that is gone: %v", name, err)
		}
	}
	if _, err := e.h.Add(ctx, memory.Candidate{Summary: " ", Scope: memory.Scope{UserID: "alice"}}, WriteOptions{}); memory.ErrorCode(err) != memory.EINVALID {
		t.Fatalf("empty add: %v", err)
	}
}

// A record id is an event of one version, with the statuses a logged
// event of that version would have.
func TestAPIEventOfAVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	parked := e.add("Never publish on Fridays")["results"].([]any)[0].(map[string]any)["record_id"].(string)
	refused := e.add("my password is hunter2")["refused"].([]any)[0].(map[string]any)["record_id"].(string)
	applied := e.add("Alice likes tea")["results"].([]any)[0].(map[string]any)["record_id"].(string)
	for _, c := range []struct {
		id, status, typ string
		decide          func()
	}{
		{parked, StatusPending, eventAdd, nil},
		{refused, StatusSucceeded, eventAdd, nil}, // refused on arrival: nothing changed, nothing failed
		{applied, StatusSucceeded, eventAdd, nil},
		{parked, StatusFailed, eventAdd, func() {
			if _, err := e.gov.Reject(ctx, parked, memory.Review{By: "rev"}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		if c.decide != nil {
			c.decide()
		}
		ev, err := e.h.Event(ctx, c.id)
		if err != nil || ev.ID != c.id || ev.Status != c.status || ev.EventType != c.typ {
			t.Errorf("event of version %s: %+v (%v), want %s %s", c.id, ev, err, c.status, c.typ)
		}
	}
	for _, id := range []string{"no-such-event", strings.Repeat("e", memory.MaxIDLen+1)} {
		if _, err := e.h.Event(ctx, id); memory.ErrorCode(err) != memory.ENOTFOUND {
			t.Errorf("event %.20s…: %v", id, err)
		}
	}
}

// Without an event log, a write's event is its version.
func TestAPIWithoutEventLog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := New(Options{Gov: e.gov})
	res, err := h.Add(ctx, memory.Candidate{Summary: "Never publish on Fridays", Scope: memory.Scope{UserID: "alice"}}, WriteOptions{})
	if err != nil || res.EventID != res.Parked[0].ID {
		t.Fatalf("add: %+v (%v)", res, err)
	}
	if _, err := e.gov.Approve(ctx, res.EventID, memory.Review{By: "rev"}); err != nil {
		t.Fatal(err)
	}
	ev, err := h.Event(ctx, res.EventID)
	if err != nil || ev.Status != StatusSucceeded || len(ev.Results) != 1 || ev.Results[0].ID != res.Parked[0].SlotID {
		t.Fatalf("event: %+v (%v)", ev, err)
	}
}
