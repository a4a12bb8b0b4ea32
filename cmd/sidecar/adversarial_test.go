package main

// The attacks of issue 14, run as an attacker on loopback would run them:
// against the real binary, wired as it ships, with agent keys bound to two
// tenants. Each sub-test names the promise of SECURITY.md it checks.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/testkit"
)

// hit sends a raw request and returns the status and the body.
func hit(t *testing.T, method, url, body string, header ...string) (int, []byte, http.Header) {
	t.Helper()
	return testkit.Send(t, method, url, body, header...)
}

// wantJSONError checks an error answer: the status, and a JSON body with an
// error (the native shape, Mem0's, or a JSON-RPC error object).
func wantJSONError(t *testing.T, what string, status int, body []byte, want int) {
	t.Helper()
	if status != want {
		t.Fatalf("%s: %d, want %d: %s", what, status, want, body)
	}
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil || len(v.Error) == 0 {
		t.Fatalf("%s: the error is not JSON with an error member: %q", what, body)
	}
}

const jsonCT = "application/json"

func TestAdversarialAgentListener(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p := startSidecar(t, t.TempDir(), "MEMGATE_AGENT_KEYS=ka@user=alice,kb@user=bob", "MEMGATE_MCP_MAX_SESSIONS=3")
	alice := []string{"Content-Type", jsonCT, "Authorization", "Token ka"}
	bob := []string{"Content-Type", jsonCT, "Authorization", "Token kb"}

	// Alice's memories: a plain fact and a parked policy.
	code, b, _ := hit(t, "POST", p.Agent+"/api/v1/memories", `{"subjectId": "project-alpha", "factType": "editor.theme", "layer": "preference", "summary": "alice likes the dark theme"}`, alice...)
	if code != http.StatusCreated {
		t.Fatalf("alice's write: %d %s", code, b)
	}
	var fact struct{ ID, SlotID string }
	json.Unmarshal(b, &fact)
	code, b, _ = hit(t, "POST", p.Agent+"/v3/memories/add/", `{"messages": [{"role": "user", "content": "I keep bees on the roof"}], "infer": false}`, alice...)
	if code != http.StatusOK {
		t.Fatalf("alice's Mem0 add: %d %s", code, b)
	}
	var added struct {
		EventID string `json:"event_id"`
		Results []struct{ ID string }
	}
	json.Unmarshal(b, &added)
	if len(added.Results) != 1 {
		t.Fatalf("alice's Mem0 add: %s", b)
	}
	bees := added.Results[0].ID

	t.Run("every route of every dialect needs a key", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/api/v1/memories?userId=alice", ""},
			{"POST", "/api/v1/memories", `{"subjectId": "x", "summary": "y"}`},
			{"GET", "/api/v1/memories/" + fact.ID, ""},
			{"GET", "/v1/memories/?user_id=alice", ""},
			{"POST", "/v2/memories/search/", `{"query": "bees", "filters": {"user_id": "alice"}}`},
			{"DELETE", "/v1/memories/" + bees + "/", ""},
			{"POST", "/search", `{"query": "bees", "user_id": "alice"}`},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`},
		} {
			for _, key := range []string{"", "Token wrong", "Bearer wrong"} {
				h := []string{"Content-Type", jsonCT, "Accept", "application/json, text/event-stream"}
				if key != "" {
					h = append(h, "Authorization", key)
				}
				code, b, _ := hit(t, r.method, p.Agent+r.path, r.body, h...)
				wantJSONError(t, fmt.Sprintf("%s %s with %q", r.method, r.path, key), code, b, http.StatusUnauthorized)
			}
		}
	})

	t.Run("tenants cannot cross", func(t *testing.T) {
		for _, path := range []string{"/api/v1/memories/" + fact.ID, "/api/v1/memories/" + fact.SlotID, "/v1/memories/" + bees + "/",
			"/v1/memories/" + bees + "/history/", "/v1/event/" + added.EventID + "/"} {
			code, b, _ := hit(t, "GET", p.Agent+path, "", bob...)
			wantJSONError(t, "bob GET "+path, code, b, http.StatusNotFound)
		}
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/api/v1/memories?userId=alice", ""},
			{"GET", "/api/v1/memories?subjectId=project-alpha", ""},
			{"GET", "/v1/memories/?user_id=alice", ""},
			{"POST", "/v2/memories/search/", `{"query": "bees dark theme", "filters": {"user_id": "*"}}`},
			{"POST", "/v2/memories/search/", `{"query": "bees dark theme", "filters": {"OR": [{"user_id": "alice"}, {"user_id": "bob"}]}}`},
			{"POST", "/v2/memories/", `{"filters": {"AND": [{"user_id": "alice"}]}}`},
			{"POST", "/search", `{"query": "bees", "user_id": "alice"}`},
		} {
			code, b, _ := hit(t, r.method, p.Agent+r.path, r.body, bob...)
			if code != http.StatusOK && code != http.StatusBadRequest {
				t.Fatalf("bob %s %s: %d %s", r.method, r.path, code, b)
			}
			if bytes.Contains(b, []byte("bees")) || bytes.Contains(b, []byte("dark theme")) {
				t.Fatalf("bob %s %s sees alice's memories: %s", r.method, r.path, b)
			}
		}
		for _, r := range []struct {
			method, path, body string
			want               int
		}{
			{"DELETE", "/api/v1/memories/" + fact.SlotID, "", http.StatusNotFound},
			{"DELETE", "/v1/memories/" + bees + "/?user_id=bob", "", http.StatusNotFound},
			{"PUT", "/v1/memories/" + bees + "/", `{"text": "alice keeps no bees"}`, http.StatusNotFound},
			{"DELETE", "/v1/memories/?user_id=*", "", http.StatusBadRequest},
			{"POST", "/api/v1/memories", `{"subjectId": "project-alpha", "factType": "editor.theme", "summary": "light", "scope": {"userId": "alice"}}`, http.StatusForbidden},
		} {
			code, b, _ := hit(t, r.method, p.Agent+r.path, r.body, bob...)
			wantJSONError(t, fmt.Sprintf("bob %s %s", r.method, r.path), code, b, r.want)
		}
		// Bob stating the same fact gets a slot of his own; alice's stands.
		code, b, _ := hit(t, "POST", p.Agent+"/api/v1/memories", `{"subjectId": "project-alpha", "factType": "editor.theme", "layer": "preference", "summary": "bob likes the light theme"}`, bob...)
		if code != http.StatusCreated {
			t.Fatalf("bob's own fact: %d %s", code, b)
		}
		for _, id := range []string{fact.SlotID, bees} {
			var r wireRecord
			if code := p.do("GET", p.Admin+"/admin/v1/memories/"+id, nil, &r); code != http.StatusOK || r.Status != "active" {
				t.Fatalf("alice's %s after bob's attempts: %d %+v", id, code, r)
			}
		}
	})

	t.Run("only JSON, only from agents", func(t *testing.T) {
		body := `{"subjectId": "x", "summary": "y"}`
		for _, c := range []struct {
			name   string
			url    string
			header []string
			want   int
		}{
			{"text/plain write", p.Agent + "/api/v1/memories", []string{"Content-Type", "text/plain", "Authorization", "Token ka"}, http.StatusUnsupportedMediaType},
			{"form write", p.Agent + "/v1/memories/", []string{"Content-Type", "application/x-www-form-urlencoded", "Authorization", "Token ka"}, http.StatusUnsupportedMediaType},
			{"browser origin", p.Agent + "/api/v1/memories", append([]string{"Origin", "https://evil.example"}, alice...), http.StatusForbidden},
			{"cross-site fetch", p.Agent + "/api/v1/memories", append([]string{"Sec-Fetch-Site", "cross-site"}, alice...), http.StatusForbidden},
			{"rebound host", p.Agent + "/api/v1/memories", append([]string{"Host", "evil.example"}, alice...), http.StatusForbidden},
			{"admin browser origin", p.Admin + "/admin/v1/quarantine", []string{"Content-Type", jsonCT, "Authorization", "Bearer " + testToken, "Origin", "https://evil.example"}, http.StatusForbidden},
			{"admin text/plain", p.Admin + "/admin/v1/quarantine", []string{"Content-Type", "text/plain", "Authorization", "Bearer " + testToken}, http.StatusUnsupportedMediaType},
		} {
			code, b, _ := hit(t, "POST", c.url, body, c.header...)
			wantJSONError(t, c.name, code, b, c.want)
		}
	})

	t.Run("strict JSON and inert text", func(t *testing.T) {
		deep := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
		for name, body := range map[string]string{
			"duplicate key":      `{"subjectId": "x", "summary": "y", "summary": "z"}`,
			"case mismatch":      `{"subjectId": "x", "Summary": "y"}`,
			"invalid UTF-8":      "{\"subjectId\": \"x\", \"summary\": \"y\xff\"}",
			"deep value":         `{"subjectId": "x", "summary": "y", "value": ` + deep + `}`,
			"terminal escape":    `{"subjectId": "x", "summary": "ok\u001b]0;pwned\u0007"}`,
			"NUL in summary":     `{"subjectId": "x", "summary": "a\u0000b"}`,
			"overflowing number": `{"subjectId": "x", "summary": "y", "value": 1e999999}`,
		} {
			code, b, _ := hit(t, "POST", p.Agent+"/api/v1/memories", body, alice...)
			wantJSONError(t, name, code, b, http.StatusBadRequest)
		}
		code, b, _ := hit(t, "GET", p.Agent+"/no/such/route", "", alice...)
		wantJSONError(t, "unknown route", code, b, http.StatusNotFound)
		code, b, _ = hit(t, "PATCH", p.Agent+"/api/v1/memories", `{}`, alice...)
		wantJSONError(t, "unknown method", code, b, http.StatusMethodNotAllowed)
	})

	t.Run("the audit log stays linear", func(t *testing.T) {
		const n = 120
		text := strings.Repeat("publishing needs a human sign-off first. ", 12) // ~500 bytes
		for i := range n {
			body := fmt.Sprintf(`{"subjectId": "project-alpha", "factType": "publish.auto", "layer": "policy", "summary": %q}`, fmt.Sprintf("%d: %s", i, text))
			code, b, _ := hit(t, "POST", p.Agent+"/api/v1/memories", body, alice...)
			if code != http.StatusAccepted {
				t.Fatalf("parked write %d: %d %s", i, code, b)
			}
		}
		var page struct {
			Events []json.RawMessage `json:"events"`
			Next   string            `json:"next"`
		}
		var parked []int
		after := ""
		for {
			var pg = page
			pg.Events, pg.Next = nil, ""
			code := p.do("GET", p.Admin+"/admin/v1/events?limit=10000&after="+after, nil, &pg)
			if code != http.StatusOK {
				t.Fatalf("events: %d", code)
			}
			for _, ev := range pg.Events {
				if bytes.Contains(ev, []byte(`"type":"parked"`)) && bytes.Contains(ev, []byte("sign-off")) {
					parked = append(parked, len(ev))
				}
			}
			if pg.Next == "" {
				break
			}
			after = pg.Next
		}
		if len(parked) != n {
			t.Fatalf("%d parked events, want %d", len(parked), n)
		}
		first, last := parked[0], parked[len(parked)-1]
		t.Logf("parked event bytes: first %d, last %d (after %d writes waiting in the slot)", first, last, n-1)
		if last > 2*first {
			t.Fatalf("the last parked event is %d bytes, the first %d: events grow with the queue", last, first)
		}
	})

	t.Run("MCP sessions are bounded", func(t *testing.T) {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
		h := []string{"Content-Type", jsonCT, "Accept", "application/json, text/event-stream", "Authorization", "Bearer kb"}
		for i := range 3 {
			code, b, hd := hit(t, "POST", p.Agent+"/mcp", init, h...)
			if code != http.StatusOK || hd.Get("Mcp-Session-Id") == "" {
				t.Fatalf("session %d: %d %s", i, code, b)
			}
			sid := hd.Get("Mcp-Session-Id")
			code, b, _ = hit(t, "POST", p.Agent+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				append([]string{"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18"}, h...)...)
			if code != http.StatusAccepted {
				t.Fatalf("initialized %d: %d %s", i, code, b)
			}
		}
		code, b, hd := hit(t, "POST", p.Agent+"/mcp", init, h...)
		wantJSONError(t, "a session past the cap", code, b, http.StatusServiceUnavailable)
		if hd.Get("Retry-After") == "" {
			t.Fatal("a refused session names no Retry-After")
		}
	})
}
