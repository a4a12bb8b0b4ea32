package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// keyedServer serves MCP with alice's and bob's tenant-bound keys.
func keyedServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	keys, err := proxy.ParseAgentKeys("ka@user=alice,kb@user=bob")
	if err != nil {
		t.Fatal(err)
	}
	return newLimitedServer(t, Options{Version: "test", Keys: proxy.NewAgentKeys(keys)})
}

func connectWithKey(t *testing.T, hs *httptest.Server, key string) (*mcp.ClientSession, error) {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tenant", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: headerRoundTripper(h)},
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestMCPNeedsAKeyAndConfinesToItsTenant(t *testing.T) {
	_, hs := keyedServer(t)
	// No key, a wrong key: 401 as a JSON-RPC error.
	for _, key := range []string{"", "nope"} {
		req := mcpRequest(t, t.Context(), hs, "", strings.NewReader(initializeBody))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, b := do(t, req)
		wantRPCError(t, "initialize with key "+key, resp, b, http.StatusUnauthorized)
		if _, err := connectWithKey(t, hs, key); err == nil {
			t.Fatalf("an SDK client with key %q connected", key)
		}
	}
	alice, err := connectWithKey(t, hs, "ka")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := connectWithKey(t, hs, "kb")
	if err != nil {
		t.Fatal(err)
	}
	// Alice writes without naming herself: the key names her.
	var added writeAnswer
	decode(t, mustOK(t, alice, "add_memory", map[string]any{"text": "I keep bees on the roof"}), &added)
	if len(added.Results) != 1 {
		t.Fatalf("add_memory: %+v", added)
	}
	id := added.Results[0].ID
	// Bob reads, searches, updates and deletes nothing of hers; he cannot
	// write for her either.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_memory", map[string]any{"memory_id": id}},
		{"update_memory", map[string]any{"memory_id": id, "text": "alice keeps no bees"}},
		{"delete_memory", map[string]any{"memory_id": id}},
		{"add_memory", map[string]any{"text": "alice hates bees", "user_id": "alice"}},
	} {
		if res := call(t, bob, c.tool, c.args); !res.IsError {
			t.Fatalf("bob's %s on alice's memory succeeded: %s", c.tool, text(res))
		}
	}
	for _, args := range []map[string]any{{"query": "bees"}, {"query": "bees", "user_id": "alice"}, {"query": "bees", "filters": map[string]any{"OR": []any{map[string]any{"user_id": "alice"}}}}} {
		res := call(t, bob, "search_memories", args)
		if strings.Contains(text(res), "bees") {
			t.Fatalf("bob's search %v found alice's memory: %s", args, text(res))
		}
	}
	if strings.Contains(text(mustOK(t, bob, "read_graph", map[string]any{})), "bees") {
		t.Fatal("bob's read_graph shows alice's memory")
	}
	// Alice still reads it.
	if got := text(mustOK(t, alice, "get_memory", map[string]any{"memory_id": id})); !strings.Contains(got, "bees") {
		t.Fatalf("alice's get_memory: %s", got)
	}
}

// A session is bound to the key that opened it: another key presenting
// its id is refused, so bob cannot ride alice's session.
func TestMCPSessionIsBoundToItsKey(t *testing.T) {
	_, hs := keyedServer(t)
	req := mcpRequest(t, t.Context(), hs, "", strings.NewReader(initializeBody))
	req.Header.Set("Authorization", "Bearer ka")
	resp, b := do(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's initialize: %d %s", resp.StatusCode, b)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	req = mcpRequest(t, t.Context(), hs, session, strings.NewReader(list))
	req.Header.Set("Authorization", "Bearer kb")
	resp, b = do(t, req)
	wantRPCError(t, "bob in alice's session", resp, b, http.StatusForbidden)
}

func TestTenantOfAToolCallComesFromTheKeyOnly(t *testing.T) {
	// The confine middleware reads the tenant from the SDK's token info,
	// which only the bearer middleware sets: no header can name one.
	called := false
	h := confine(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		called = true
		if memory.TenantOf(ctx).Bound() {
			t.Fatal("a request without token info runs with a tenant")
		}
		return nil, nil
	})
	if _, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: http.Header{"X-Memgate-User-Id": {"alice"}}}}); err != nil || !called {
		t.Fatal(err)
	}
}
