package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	memgatemcp "github.com/memgate/memgate/proxy/mcp"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// unreachableMsg is what the store says while its database is down.
const unreachableMsg = "the database does not answer: dial tcp 10.0.0.5:5432: connection refused"

// flakyStore is a store whose database can stop answering, as a shared
// database does on a restart or a lost connection: every transaction then
// fails with EUNAVAILABLE.
type flakyStore struct {
	*store.Store
	down atomic.Bool
}

func (f *flakyStore) Update(ctx context.Context, fn func(memory.Tx) error) error {
	if f.down.Load() {
		return memory.Errorf(memory.EUNAVAILABLE, unreachableMsg)
	}
	return f.Store.Update(ctx, fn)
}

func (f *flakyStore) View(ctx context.Context, fn func(memory.ReadTx) error) error {
	if f.down.Load() {
		return memory.Errorf(memory.EUNAVAILABLE, unreachableMsg)
	}
	return f.Store.View(ctx, fn)
}

// TestWritesAnswerUnavailableOnEveryDialect: while the store's database
// does not answer, a write in any dialect answers 503 with a JSON error
// whose code is unavailable (native, Mem0) or a tool error saying so (MCP,
// whose HTTP answer is a JSON-RPC result), and nothing is written.
func TestWritesAnswerUnavailableOnEveryDialect(t *testing.T) {
	ctx := context.Background()
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	flaky := &flakyStore{Store: st}
	applyAll := memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	index := search.New(st, search.Options{})
	gov := memory.NewGovernor(memory.Options{Store: flaky, Classifier: applyAll, Logger: discard(), Active: index,
		PolicyTimeout: time.Minute})
	mux := http.NewServeMux()
	(&proxy.Native{Gov: gov, Search: index, Log: discard()}).Register(mux)
	m0 := mem0.New(mem0.Options{Gov: gov, Events: mem0.NewEventLog(st), Search: index, Logger: discard()})
	m0.Register(mux)
	mcpSrv := memgatemcp.NewServer(gov, memgatemcp.Options{Logger: discard(), Mem0: m0})
	mcpSrv.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(mcpSrv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "unavailable", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// A memory written while the database answered, for the edits below.
	res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPreference, SubjectID: "alice", FactType: "editor.theme",
		Summary: "alice prefers dark mode", Scope: memory.Scope{UserID: "alice"}})
	if err != nil || res.Outcome != memory.OutcomeApplied {
		t.Fatalf("the first write: %v %v", res, err)
	}
	slot := res.Record.SlotID
	countEvents := func() int {
		n := 0
		err := st.View(ctx, func(tx memory.ReadTx) error {
			return tx.ScanEvents("", func(*memory.Event) bool { n++; return true })
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := countEvents()
	flaky.down.Store(true)

	httpWrites := []struct {
		name, method, path, body string
		codeField                string // where the error's code is: "error.code" (native) or "code" (Mem0)
	}{
		{"native create", "POST", "/api/v1/memories", `{"layer":"preference","subjectId":"alice","summary":"alice prefers light mode"}`, "error.code"},
		{"mem0 v1 add", "POST", "/v1/memories/", `{"messages":[{"role":"user","content":"I prefer light mode"}],"user_id":"alice","infer":false}`, "code"},
		{"mem0 v3 add", "POST", "/v3/memories/add/", `{"messages":[{"role":"user","content":"I prefer light mode"}],"user_id":"alice","infer":false}`, "code"},
		{"mem0 oss add", "POST", "/memories", `{"messages":[{"role":"user","content":"I prefer light mode"}],"user_id":"alice","infer":false}`, "code"},
		{"mem0 update", "PUT", "/v1/memories/" + slot + "/", `{"text":"alice prefers light mode"}`, "code"},
		{"mem0 delete", "DELETE", "/v1/memories/" + slot + "/", ``, "code"},
	}
	for _, tt := range httpWrites {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("%d, not JSON: %v", resp.StatusCode, err)
			}
			code := body["code"]
			if tt.codeField == "error.code" {
				e, _ := body["error"].(map[string]any)
				code = e["code"]
			}
			if resp.StatusCode != http.StatusServiceUnavailable || code != memory.EUNAVAILABLE ||
				!strings.Contains(toJSON(body), "does not answer") {
				t.Fatalf("%d %s; want 503 with code %q and the store's message", resp.StatusCode, toJSON(body), memory.EUNAVAILABLE)
			}
		})
	}
	tools := []struct {
		name string
		args map[string]any
	}{
		{"add_memory", map[string]any{"text": "I prefer light mode", "user_id": "alice"}},
		{"update_memory", map[string]any{"memory_id": slot, "text": "alice prefers light mode"}},
		{"delete_memory", map[string]any{"memory_id": slot}},
		{"create_entities", map[string]any{"entities": []map[string]any{{"name": "alice", "entityType": "person", "observations": []string{"prefers light mode"}}}}},
	}
	for _, tt := range tools {
		t.Run("mcp "+tt.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.name, Arguments: tt.args})
			if err != nil {
				t.Fatalf("a protocol error: %v; want a tool error", err)
			}
			var text []string
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text = append(text, tc.Text)
				}
			}
			if !res.IsError || !strings.Contains(strings.Join(text, "\n"), "does not answer") {
				t.Fatalf("isError %v, %q; want a tool error with the store's message", res.IsError, text)
			}
		})
	}
	flaky.down.Store(false)
	if n := countEvents(); n != before {
		t.Fatalf("%d audit events written while the database was down", n-before)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
