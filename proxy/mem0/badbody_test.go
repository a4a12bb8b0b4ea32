package mem0

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// Every route answers bad input with a 4xx in Mem0's error shape and
// writes nothing.
func TestBadInputOnEveryRoute(t *testing.T) {
	e := newEnv(t)
	id := e.addApplied("I read science fiction")
	huge := `{"messages": "` + strings.Repeat("x", proxy.MaxBodyBytes) + `", "user_id": "alice"}`
	longText := strings.Repeat("word ", memory.MaxSummaryBytes/4)
	generic := []string{``, `null`, `[]`, `"text"`, `{`, `{"user_id": "alice"} {"x": 1}`, `42`}
	tests := []struct {
		method, path string
		bodies       []string
	}{
		{"POST", "/v3/memories/add/", []string{
			`{"messages": 5, "user_id": "alice"}`,
			`{"messages": [{"role": 5, "content": "x"}], "user_id": "alice"}`,
			`{"messages": [{"role": "user", "content": 7}], "user_id": "alice"}`,
			`{"messages": [{"role": "user", "content": [{"type": "text", "text": 7}]}], "user_id": "alice"}`,
			`{"messages": [3], "user_id": "alice"}`,
			`{"messages": "x", "user_id": 5}`,
			`{"messages": "x", "user_id": "alice", "infer": "no"}`,
			`{"messages": "x", "user_id": "alice", "metadata": [1]}`,
			`{"messages": "x", "user_id": "alice", "deduced_memories": "x"}`,
			`{"messages": [], "user_id": "alice"}`,
			`{"messages": "x"}`,
			`{"messages": "x", "user_id": "al\u0000ice"}`,
			`{"messages": "x", "user_id": "` + strings.Repeat("u", memory.MaxIDLen+1) + `"}`,
			`{"messages": "` + longText + `", "user_id": "alice", "infer": false}`,
		}},
		{"POST", "/v1/memories/", []string{`{"messages": {"role": "user"}, "user_id": "alice"}`, `{"messages": "x"}`}},
		{"POST", "/memories", []string{`{"messages": [{"role": "user", "content": "x"}]}`, `{"messages": null, "user_id": "alice"}`}},
		{"POST", "/v3/memories/search/", []string{
			`{"query": 5, "filters": {"user_id": "alice"}}`,
			`{"query": "x", "filters": "alice"}`,
			`{"query": "x", "filters": {"user_id": "alice"}, "top_k": "5"}`,
			`{"query": "x", "filters": {"user_id": {"in": "alice"}}}`,
		}},
		{"POST", "/v2/memories/search/", []string{`{"query": "x", "filters": {"created_at": {"gte": "soon"}, "user_id": "alice"}}`}},
		{"POST", "/v1/memories/search/", []string{`{"query": "x"}`}},
		{"POST", "/search", []string{`{"query": "x", "user_id": "alice", "limit": -1}`}},
		{"POST", "/v3/memories/", []string{
			`{"filters": 5}`, `{"filters": {"user_id": "alice"}, "page": -1}`, `{"filters": {"user_id": "alice"}, "page_size": 5000}`,
			`{"filters": {"user_id": "alice"}, "start_date": "last week"}`, `{}`,
		}},
		{"POST", "/v2/memories/", []string{`{"filters": {"user_id": "alice"}, "page": "one"}`}},
		{"PUT", "/v1/memories/" + id + "/", []string{`{"text": 5}`, `{"metadata": "x"}`, `{}`, `{"text": "   "}`}},
		{"PUT", "/memories/" + id, []string{`{"data": 5}`}},
	}
	for _, tt := range tests {
		bodies := tt.bodies
		if tt.method == "POST" {
			bodies = append(bodies, generic...)
		} else {
			bodies = append(bodies, ``, `[]`, `{`, `42`)
		}
		for _, body := range bodies {
			resp := e.do(tt.method, tt.path, []byte(body))
			if resp.status < 400 || resp.status >= 500 {
				t.Errorf("%s %s %.60q: status %d, want 4xx: %s", tt.method, tt.path, body, resp.status, resp.raw)
				continue
			}
			wantErrorShape(t, resp, resp.status, memory.EINVALID)
		}
		resp := e.do(tt.method, tt.path, []byte(huge))
		wantErrorShape(t, resp, http.StatusRequestEntityTooLarge, memory.ETOOLARGE)
	}
	for _, path := range []string{"/v1/memories/?user_id=alice&page=x", "/v1/memories/?user_id=alice&limit=500",
		"/v1/memories/", "/v1/events/?page_size=0", "/memories", "/memories?user_id=alice&limit=x"} {
		wantErrorShape(t, e.do("GET", path, nil), http.StatusBadRequest, memory.EINVALID)
	}
	wantErrorShape(t, e.do("DELETE", "/memories", nil), http.StatusBadRequest, memory.EINVALID)

	// Nothing but the first memory was written, and it is unchanged.
	if recs := e.active(); len(recs) != 1 || recs[0].Summary != "I read science fiction" {
		t.Fatalf("bad input changed the active layer: %+v", recs)
	}
	if q := e.pending(); len(q) != 0 {
		t.Fatalf("bad input parked %d writes", len(q))
	}
	if _, n, err := e.h.events.List(context.Background(), 0, 10); err != nil || n != 1 {
		t.Fatalf("bad input recorded events: %d, %v", n, err)
	}
}
