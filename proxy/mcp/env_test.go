package mcp

// Test environment: a real Governor on a real Badger database in a temp dir
// (or on a fresh PostgreSQL database, newPostgresEnv),
// the MCP handler on a real loopback HTTP server, and the official Go SDK
// client talking to it. Decisions come from testPolicy, which states the
// policy each test relies on.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
)

// testPolicy: texts about publishing are strategy (policy layer) and wait
// for review, as do deletions of them; anything mentioning a password is
// rejected; everything else applies.
func testPolicy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	c := in.Candidate
	text := strings.ToLower(c.Summary)
	switch {
	case strings.Contains(text, "password"):
		return testkit.Reject("secret_detected", "secrets are never remembered"), nil
	case strings.Contains(text, "publish") || c.Layer == memory.LayerPolicy:
		d := testkit.Review(memory.CategoryStrategy, "strategy_constraint", "strategy constraints need a human", "publishing")
		d.Layer = memory.LayerPolicy
		return d, nil
	}
	return testkit.Apply(), nil
}

// env serves the Mem0 REST routes and MCP from one mem0.Handler on one
// loopback server, as the sidecar does.
type env struct {
	t    testing.TB
	gov  *memory.Governor
	srv  *Server
	http *httptest.Server
}

// newEnv runs the env on Badger in a temp dir.
func newEnv(t testing.TB) *env {
	t.Helper()
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	index := search.New(st, search.Options{})
	t.Cleanup(func() { index.Close() })
	return serveEnv(t, gov, mem0.New(mem0.Options{Gov: gov, Events: mem0.NewEventLog(st), Search: index}))
}

// newPostgresEnv runs the env on a fresh PostgreSQL database as serve runs
// a shared store: the governor on pgstore, search scanning it per query
// (it has no commit feed), Mem0's events in its KV area.
func newPostgresEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	pg, err := pgstore.Open(ctx, pgstore.Options{URL: pgtest.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	index, err := search.Open(ctx, pg, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(index.Close)
	gov := memory.NewGovernor(memory.Options{Store: pg, Classifier: memory.ClassifierFunc(testPolicy), Active: index})
	return serveEnv(t, gov, mem0.New(mem0.Options{Gov: gov, Events: mem0.NewEventLog(pg), Search: index}))
}

// serveEnv serves MCP and m0's routes for gov on loopback.
func serveEnv(t testing.TB, gov *memory.Governor, m0 *mem0.Handler) *env {
	t.Helper()
	srv := NewServer(gov, Options{Version: "test", Mem0: m0})
	mux := http.NewServeMux()
	srv.Register(mux)
	m0.Register(mux)
	hs := httptest.NewServer(mux) // binds 127.0.0.1
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return &env{t: t, gov: gov, srv: srv, http: hs}
}

// onEachStore runs fn on an env over Badger and on one over PostgreSQL.
func onEachStore(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, on := range []struct {
		name string
		env  func(testing.TB) *env
	}{{"badger", newEnv}, {"postgres", newPostgresEnv}} {
		t.Run(on.name, func(t *testing.T) { fn(t, on.env(t)) })
	}
}

// headerRoundTripper sends fixed headers with every request.
type headerRoundTripper http.Header

func (h headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session over Streamable HTTP as the named client,
// sending the given headers.
func (e *env) connect(name string, headers map[string]string) *mcp.ClientSession {
	e.t.Helper()
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: headerRoundTripper(h)}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// inProcess connects an SDK client to the server over an in-memory
// transport: the same server and handlers without HTTP, for fuzzing.
func (e *env) inProcess() *mcp.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.srv.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fuzzer", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		cs.Close()
		ss.Close()
	})
	return cs
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// mustOK calls a tool that must succeed.
func mustOK(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res := call(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s answered an error: %s", tool, text(res))
	}
	return res
}

// text joins a result's text blocks.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// decode reads a result's structured content into v.
func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// writesOf reads the per-write outcomes from a result's _meta.
func writesOf(t *testing.T, res *mcp.CallToolResult) []writeResult {
	t.Helper()
	var m struct {
		Memgate struct {
			Writes []writeResult `json:"writes"`
		} `json:"memgate"`
	}
	b, _ := json.Marshal(res.Meta)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("_meta %s: %v", b, err)
	}
	return m.Memgate.Writes
}

func readGraphOf(t *testing.T, cs *mcp.ClientSession) KnowledgeGraph {
	t.Helper()
	var g KnowledgeGraph
	decode(t, mustOK(t, cs, "read_graph", map[string]any{}), &g)
	return g
}

func (g KnowledgeGraph) entity(name string) (Entity, bool) {
	for _, e := range g.Entities {
		if e.Name == name {
			return e, true
		}
	}
	return Entity{}, false
}
