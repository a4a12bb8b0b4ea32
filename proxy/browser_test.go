package proxy_test

// Adversarial tests of RefuseBrowsers and of strict JSON, over real HTTP on
// loopback through the real handlers of both listeners (native, Mem0, MCP;
// admin), wrapped as cmd/sidecar wraps them.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	memgatemcp "github.com/memgate/memgate/proxy/mcp"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
)

type guarded struct {
	agent, admin *httptest.Server
	gov          *memory.Governor
	slackHits    int
}

// newGuarded serves the native, Mem0 and MCP dialects and the admin API,
// each listener behind RefuseBrowsers with policy p (SignedPaths and
// RPCPaths as the sidecar sets them), on a Badger store in a temp dir.
func newGuarded(t *testing.T, p proxy.BrowserPolicy) *guarded {
	t.Helper()
	st := badgertest.New(t)
	g := &guarded{gov: memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(parkPolicy)})}
	agentMux, adminMux := http.NewServeMux(), http.NewServeMux()
	index := search.New(st, search.Options{})
	(&proxy.Native{Gov: g.gov, Search: index, Log: discard()}).Register(agentMux)
	mem0.New(mem0.Options{Gov: g.gov, Events: mem0.NewEventLog(st), Search: index, Logger: discard()}).Register(agentMux)
	mcpSrv := memgatemcp.NewServer(g.gov, memgatemcp.Options{Logger: discard(), HostChecked: true})
	mcpSrv.Register(agentMux)
	(&proxy.Admin{Gov: g.gov, Log: discard(), Token: token}).Register(adminMux)
	adminMux.HandleFunc("POST /slack/interactions", func(w http.ResponseWriter, r *http.Request) {
		g.slackHits++ // stands in for the signed Slack handler
		w.WriteHeader(http.StatusOK)
	})
	agentPolicy, adminPolicy := p, p
	agentPolicy.RPCPaths = []string{"/mcp"}
	adminPolicy.SignedPaths = []string{"/slack/interactions"}
	g.agent = httptest.NewServer(proxy.RefuseBrowsers(proxy.JSONRoutes(agentMux), agentPolicy))
	g.admin = httptest.NewServer(proxy.RefuseBrowsers(proxy.JSONRoutes(adminMux), adminPolicy))
	t.Cleanup(g.agent.Close)
	t.Cleanup(g.admin.Close)
	t.Cleanup(mcpSrv.Close)
	return g
}

// answer is a decoded response.
type answer struct {
	status int
	header http.Header
	raw    []byte
	obj    map[string]any
}

// code is the error code of any of the three error shapes: native and
// admin {"error": {"code"}}, Mem0 {"error": "...", "code"}, JSON-RPC
// {"error": {"code": -32xxx}} (as a string).
func (a answer) code() string {
	switch e := a.obj["error"].(type) {
	case map[string]any:
		if c, ok := e["code"].(string); ok {
			return c
		}
		if c, ok := e["code"].(float64); ok {
			return fmt.Sprint(int(c))
		}
	case string:
		c, _ := a.obj["code"].(string)
		return c
	}
	return ""
}

func (a answer) message() string {
	switch e := a.obj["error"].(type) {
	case map[string]any:
		m, _ := e["message"].(string)
		return m
	case string:
		return e
	}
	return ""
}

// send makes one request; header pairs set headers ("Host" sets the Host).
func send(t *testing.T, method, url, body string, header ...string) answer {
	t.Helper()
	status, raw, h := testkit.Send(t, method, url, body, header...)
	a := answer{status: status, header: h, raw: raw}
	if strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		a.raw = sseData(a.raw)
	}
	_ = json.Unmarshal(a.raw, &a.obj)
	return a
}

// sseData is the data of the first event of an SSE body.
func sseData(b []byte) []byte {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return []byte(d)
		}
	}
	return nil
}

const (
	nativeBody = `{"layer":"checkpoint","subjectId":"task-1","factType":"step","summary":"step 1 done"}`
	mem0Body   = `{"messages":[{"role":"user","content":"I like green tea"}],"user_id":"alice","infer":false}`
	quarBody   = `{"runId":"run-9","reason":"test"}`
	mcpInit    = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
)

var mcpAccept = []string{"Accept", "application/json, text/event-stream"}

// target is one write route of one listener with a body it accepts.
type target struct {
	name, method, path, body string
	admin, mcp               bool
	ok                       int // the status of an accepted request
}

var writeTargets = []target{
	{"native", "POST", "/api/v1/memories", nativeBody, false, false, http.StatusCreated},
	{"mem0", "POST", "/v1/memories/", mem0Body, false, false, http.StatusOK},
	{"admin", "POST", "/admin/v1/quarantine", quarBody, true, false, http.StatusOK},
	{"mcp", "POST", "/mcp", mcpInit, false, true, http.StatusOK},
}

func (g *guarded) url(tg target) string {
	if tg.admin {
		return g.admin.URL + tg.path
	}
	return g.agent.URL + tg.path
}

func (tg target) headers(extra ...string) []string {
	h := []string{"Authorization", "Bearer " + token}
	if tg.mcp {
		h = append(h, mcpAccept...)
	}
	return append(h, extra...)
}

// wantRefused checks a refusal: its status, its code and its shape (a
// JSON-RPC error on /mcp, the JSON error shape elsewhere).
func wantRefused(t *testing.T, tg target, a answer, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d: %s", tg.name, a.status, status, a.raw)
	}
	if tg.mcp {
		if a.obj["jsonrpc"] != "2.0" || a.obj["id"] != nil || a.code() == "" || a.message() == "" {
			t.Fatalf("%s: want a JSON-RPC error with a null id, got %s", tg.name, a.raw)
		}
		return
	}
	if a.code() != code || a.message() == "" {
		t.Fatalf("%s: want {error: {code: %q, message}}, got %s", tg.name, code, a.raw)
	}
}

func TestNonJSONWritesAre415(t *testing.T) {
	g := newGuarded(t, proxy.BrowserPolicy{})
	types := []struct{ name, ctype, body string }{
		{"text/plain", "text/plain;charset=UTF-8", "%s"},
		{"form", "application/x-www-form-urlencoded", "x=%s"},
		{"multipart", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n%s\r\n--b--\r\n"},
		{"no type", "", "%s"},
		{"utf-16 json", "application/json; charset=utf-16", "%s"},
		{"+json", "application/merge-patch+json", "%s"},
		{"garbage", "application/json; =", "%s"},
	}
	for _, tg := range writeTargets {
		for _, ct := range types {
			t.Run(tg.name+"/"+ct.name, func(t *testing.T) {
				body := strings.Replace(ct.body, "%s", tg.body, 1)
				h := tg.headers()
				if ct.ctype != "" {
					h = append(h, "Content-Type", ct.ctype)
				}
				wantRefused(t, tg, send(t, tg.method, g.url(tg), body, h...), http.StatusUnsupportedMediaType, proxy.CodeUnsupportedMedia)
			})
		}
	}
	if evs, err := g.gov.Events(context.Background(), "", 0); err != nil || len(evs) != 0 {
		t.Fatalf("refused writes recorded %d events (%v)", len(evs), err)
	}
	// JSON in its spellings passes, as the SDKs and the CLI send it.
	for i, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\""} {
		for _, tg := range writeTargets {
			body := strings.Replace(tg.body, "task-1", "task-"+string(rune('a'+i)), 1)
			if a := send(t, tg.method, g.url(tg), body, tg.headers("Content-Type", ct)...); a.status != tg.ok {
				t.Errorf("%s with %q: %d, want %d: %s", tg.name, ct, a.status, tg.ok, a.raw)
			}
		}
	}
	// A write without a body needs no type: DELETE, and an admin POST
	// whose body is optional.
	a := send(t, "DELETE", g.agent.URL+"/api/v1/memories/nope", "")
	if a.status == http.StatusUnsupportedMediaType || a.status == http.StatusForbidden {
		t.Fatalf("DELETE without a body: %d %s", a.status, a.raw)
	}
	a = send(t, "POST", g.admin.URL+"/admin/v1/reviews/nope/approve", "", "Authorization", "Bearer "+token)
	if a.status != http.StatusNotFound {
		t.Fatalf("empty approve: %d %s", a.status, a.raw)
	}
	// Slack's signed form POST is not held to the JSON rule.
	a = send(t, "POST", g.admin.URL+"/slack/interactions", "payload=%7B%7D", "Content-Type", "application/x-www-form-urlencoded")
	if a.status != http.StatusOK || g.slackHits != 1 {
		t.Fatalf("Slack interactions: %d %s", a.status, a.raw)
	}
}

func TestBrowserRequestsAre403(t *testing.T) {
	g := newGuarded(t, proxy.BrowserPolicy{AllowedOrigins: []string{"https://app.example.com", "null"}})
	cases := []struct {
		name   string
		header []string
		code   string
	}{
		{"foreign origin", []string{"Origin", "https://evil.example"}, proxy.CodeForbiddenOrigin},
		{"loopback origin", []string{"Origin", "http://127.0.0.1:7600"}, proxy.CodeForbiddenOrigin},
		{"opaque origin", []string{"Origin", "null"}, proxy.CodeForbiddenOrigin},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, proxy.CodeForbiddenOrigin},
		{"same-site fetch", []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "no-cors"}, proxy.CodeForbiddenOrigin},
		{"rebound host", []string{"Host", "evil.example:7600"}, proxy.CodeForbiddenHost},
		{"rebound host, no port", []string{"Host", "attacker.test"}, proxy.CodeForbiddenHost},
		{"loopback-looking name", []string{"Host", "127.0.0.1.nip.io"}, proxy.CodeForbiddenHost},
		{"localhost subdomain of another", []string{"Host", "localhost.evil.example"}, proxy.CodeForbiddenHost},
	}
	for _, tg := range writeTargets {
		for _, tc := range cases {
			t.Run(tg.name+"/"+tc.name, func(t *testing.T) {
				h := tg.headers(append([]string{"Content-Type", "application/json"}, tc.header...)...)
				wantRefused(t, tg, send(t, tg.method, g.url(tg), tg.body, h...), http.StatusForbidden, tc.code)
				// Reads are refused too: DNS rebinding is a way to read.
				if !tg.mcp {
					read := g.agent.URL + "/api/v1/memories?subjectId=task-1"
					if tg.admin {
						read = g.admin.URL + "/admin/v1/reviews"
					}
					rt := target{name: tg.name + " read"}
					wantRefused(t, rt, send(t, "GET", read, "", tg.headers(tc.header...)...), http.StatusForbidden, tc.code)
				}
			})
		}
	}
	// Slack's callback comes through a tunnel under a public name, but
	// never from a browser.
	a := send(t, "POST", g.admin.URL+"/slack/interactions", "payload=x", "Host", "memgate.example.com", "Content-Type", "application/x-www-form-urlencoded")
	if a.status != http.StatusOK {
		t.Fatalf("Slack through a tunnel: %d %s", a.status, a.raw)
	}
	a = send(t, "POST", g.admin.URL+"/slack/interactions", "payload=x", "Origin", "https://evil.example", "Content-Type", "application/x-www-form-urlencoded")
	wantRefused(t, target{name: "slack"}, a, http.StatusForbidden, proxy.CodeForbiddenOrigin)
	if evs, err := g.gov.Events(context.Background(), "", 0); err != nil || len(evs) != 0 {
		t.Fatalf("refused requests recorded %d events (%v)", len(evs), err)
	}
}

func TestAgentsAndAllowedOriginsPass(t *testing.T) {
	g := newGuarded(t, proxy.BrowserPolicy{AllowedOrigins: []string{"https://App.Example.com/"}, AllowedHosts: []string{"memgate.internal", "proxy.internal:8443"}})
	cases := []struct {
		name   string
		header []string
	}{
		{"no origin", nil},
		{"allowed origin", []string{"Origin", "https://app.example.com", "Sec-Fetch-Site", "cross-site"}},
		{"typed url", []string{"Sec-Fetch-Site", "none"}},
		{"same origin", []string{"Sec-Fetch-Site", "same-origin"}},
		{"localhost, another port (port-forward)", []string{"Host", "localhost:9999"}},
		{"ipv6 loopback", []string{"Host", "[::1]:7600"}},
		{"loopback without port", []string{"Host", "127.0.0.1"}},
		{"other loopback address", []string{"Host", "127.0.0.2:80"}},
		{"upper-case localhost", []string{"Host", "LOCALHOST:7600"}},
		{"allowed host, any port", []string{"Host", "memgate.internal:1234"}},
		{"allowed host and port", []string{"Host", "proxy.internal:8443"}},
	}
	for i, tc := range cases {
		for _, tg := range writeTargets {
			t.Run(tc.name+"/"+tg.name, func(t *testing.T) {
				body := strings.Replace(tg.body, "task-1", "task-"+string(rune('a'+i)), 1)
				a := send(t, tg.method, g.url(tg), body, tg.headers(append([]string{"Content-Type", "application/json"}, tc.header...)...)...)
				if a.status != tg.ok {
					t.Fatalf("%d, want %d: %s", a.status, tg.ok, a.raw)
				}
			})
		}
	}
	a := send(t, "GET", g.agent.URL+"/api/v1/memories", "", "Host", "proxy.internal:9000")
	wantRefused(t, target{name: "allowed host, other port"}, a, http.StatusForbidden, proxy.CodeForbiddenHost)

	// An allowed origin gets CORS answers, preflight included.
	a = send(t, "GET", g.agent.URL+"/api/v1/memories?subjectId=task-a", "", "Origin", "https://app.example.com")
	if a.status != http.StatusOK || a.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("allowed origin: %d %v", a.status, a.header)
	}
	a = send(t, "OPTIONS", g.agent.URL+"/mcp", "", "Origin", "https://app.example.com",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type, mcp-session-id")
	if a.status != http.StatusNoContent || a.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		a.header.Get("Access-Control-Allow-Headers") != "content-type, mcp-session-id" {
		t.Fatalf("preflight: %d %v", a.status, a.header)
	}
	a = send(t, "OPTIONS", g.agent.URL+"/mcp", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if a.status != http.StatusForbidden || a.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from a foreign origin: %d %v", a.status, a.header)
	}
}

// The Host rule on a connection that arrived at a routable address: any
// Host unless AllowedHosts is set, then those and the address itself.
// (httptest listens on loopback only, so the connection's address is set
// as the server would set it.)
func TestHostRuleOnRoutableAddress(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	local := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 7600}
	cases := []struct {
		allowed []string
		host    string
		want    int
	}{
		{nil, "anything.example:7600", http.StatusOK},
		{nil, "10.1.2.3:7600", http.StatusOK},
		{[]string{"memgate.svc"}, "memgate.svc:7600", http.StatusOK},
		{[]string{"memgate.svc"}, "10.1.2.3:7600", http.StatusOK}, // kubelet probes use the pod's address
		{[]string{"memgate.svc"}, "evil.example:7600", http.StatusForbidden},
		{[]string{"memgate.svc"}, "10.9.9.9", http.StatusForbidden},
		{[]string{"memgate.svc"}, "localhost:7600", http.StatusForbidden},
		{[]string{"*"}, "evil.example", http.StatusOK},
	}
	for _, tc := range cases {
		h := proxy.RefuseBrowsers(ok, proxy.BrowserPolicy{AllowedHosts: tc.allowed})
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = tc.host
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("allowed %v, Host %q: %d, want %d: %s", tc.allowed, tc.host, rec.Code, tc.want, rec.Body)
		}
	}
}
