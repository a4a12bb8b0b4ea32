package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/proxy"
)

// nulRequests are requests naming an id, or an id-like filter value, that
// holds a NUL byte: every one is bad input (400), on every store.
var nulRequests = []struct{ method, path, body string }{
	// native
	{"GET", "/api/v1/memories/ab%00cd", ""},
	{"DELETE", "/api/v1/memories/ab%00cd", ""},
	{"GET", "/api/v1/subjects/al%00ice/facts/tea/history", ""},
	{"GET", "/api/v1/subjects/alice/facts/te%00a/history", ""},
	{"GET", "/api/v1/memories?subjectId=al%00ice", ""},
	{"GET", "/api/v1/memories?userId=al%00ice", ""},
	{"GET", "/api/v1/memories?agentId=al%00ice", ""},
	{"GET", "/api/v1/memories?appId=al%00ice", ""},
	{"GET", "/api/v1/memories?runId=al%00ice", ""},
	{"POST", "/api/v1/memories", `{"subjectId":"al\u0000ice","summary":"likes tea"}`},
	{"POST", "/api/v1/memories", `{"subjectId":"alice","factType":"te\u0000a","summary":"likes tea"}`},
	// Mem0 platform
	{"GET", "/v1/memories/ab%00cd/", ""},
	{"GET", "/v1/memories/ab%00cd/history/", ""},
	{"PUT", "/v1/memories/ab%00cd/", `{"text":"likes coffee"}`},
	{"DELETE", "/v1/memories/ab%00cd/", ""},
	{"GET", "/v1/memories/?user_id=al%00ice", ""},
	{"GET", "/v1/memories/?agent_id=al%00ice", ""},
	{"DELETE", "/v1/memories/?user_id=al%00ice", ""},
	{"GET", "/v1/event/ab%00cd/", ""},
	{"POST", "/v2/memories/", `{"filters":{"user_id":"al\u0000ice"}}`},
	{"POST", "/v2/memories/", `{"filters":{"AND":[{"user_id":"alice"},{"run_id":{"in":["r\u0000"]}}]}}`},
	{"POST", "/v3/memories/", `{"filters":{"app_id":"al\u0000ice"}}`},
	{"POST", "/v2/memories/search/", `{"query":"tea","filters":{"user_id":"al\u0000ice"}}`},
	{"POST", "/v1/memories/search/", `{"query":"tea","user_id":"al\u0000ice"}`},
	{"POST", "/v1/memories/", `{"messages":[{"role":"user","content":"I like tea"}],"user_id":"al\u0000ice"}`},
	// Mem0 open source
	{"GET", "/memories?user_id=al%00ice", ""},
	{"GET", "/memories/ab%00cd", ""},
	{"GET", "/memories/ab%00cd/history", ""},
	{"DELETE", "/memories/ab%00cd", ""},
	{"POST", "/search", `{"query":"tea","user_id":"al\u0000ice"}`},
}

// TestNULInAnIdIs400 sends each of nulRequests over real HTTP on loopback
// to the agent listener (native, Mem0 platform and open-source routes), and
// each of nulAdminRequests to the admin listener, on Badger and on
// PostgreSQL: each is a 400 in its dialect's error shape,
// never a 404 on one store and a 500 on the other.
// nulAdminRequests are the admin routes that take an id or a cursor.
var nulAdminRequests = []struct{ method, path, body string }{
	{"GET", "/admin/v1/reviews/ab%00cd", ""},
	{"GET", "/admin/v1/reviews?after=ab%00cd", ""},
	{"POST", "/admin/v1/reviews/ab%00cd/approve", `{}`},
	{"POST", "/admin/v1/reviews/ab%00cd/reject", `{"reason":"no"}`},
	{"GET", "/admin/v1/memories/ab%00cd", ""},
	{"GET", "/admin/v1/memories/ab%00cd/explain", ""},
	{"GET", "/admin/v1/memories/ab%00cd/history", ""},
	{"POST", "/admin/v1/memories/ab%00cd/rollback", `{"reason":"x"}`},
	{"POST", "/admin/v1/quarantine", `{"runId":"r\u0000","reason":"x"}`},
	{"POST", "/admin/v1/restore", `{"subjectId":"al\u0000ice","at":"2024-01-01T00:00:00Z","reason":"x"}`},
	{"GET", "/admin/v1/events?after=ab%00cd", ""},
	{"GET", "/admin/v1/shadow?after=ab%00cd", ""},
}

func TestNULInAnIdIs400(t *testing.T) {
	for _, st := range []struct {
		name string
		open func(*testing.T) dialectStore
	}{{"badger", openBadgerDialectStore}, {"postgres", openPostgresDialectStore}} {
		t.Run(st.name, func(t *testing.T) {
			s := newDialectStack(t, st.open)
			adminMux := http.NewServeMux()
			(&proxy.Admin{Gov: s.gov, Log: discard(), Token: token}).Register(adminMux)
			admin := httptest.NewServer(adminMux)
			t.Cleanup(admin.Close)
			type target struct{ base, method, path, body string }
			var all []target
			for _, rq := range nulRequests {
				all = append(all, target{s.srv.URL, rq.method, rq.path, rq.body})
			}
			for _, rq := range nulAdminRequests {
				all = append(all, target{admin.URL, rq.method, rq.path, rq.body})
			}
			for _, rq := range all {
				req, _ := http.NewRequest(rq.method, rq.base+rq.path, strings.NewReader(rq.body))
				if rq.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := s.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var body map[string]any
				if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &body) != nil || !strings.Contains(string(b), `"invalid"`) {
					t.Errorf("%s %s: %d %s, want 400 with code invalid", rq.method, rq.path, resp.StatusCode, b)
				}
			}
		})
	}
}
