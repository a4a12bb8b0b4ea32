package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

var allTools = []string{"add_memory", "add_observations", "create_entities", "create_relations", "delete_entities",
	"delete_memory", "delete_observations", "delete_relations", "get_event_status", "get_memories", "get_memory",
	"get_memory_history", "open_nodes", "read_graph", "search_memories", "search_nodes", "update_memory"}

// scenario runs, through a real TypeScript client however connected, what
// an agent does with memory: list tools, create, read, search, delete, a
// parked write and its approval becoming visible. It returns the record id
// of the parked write.
func scenario(t *testing.T, e *env, nc *nodeClient) string {
	t.Helper()
	tools := nc.tools()
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	if !slices.Equal(names, allTools) {
		t.Fatalf("tools %v, want %v", names, allTools)
	}

	nc.mustOK("create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "project-alpha", "entityType": "project", "observations": []string{"ships on Fridays"}},
		map[string]any{"name": "dana", "entityType": "person", "observations": []string{"leads project-alpha"}},
	}})
	nc.mustOK("create_relations", map[string]any{"relations": []any{
		map[string]any{"from": "dana", "to": "project-alpha", "relationType": "leads"}}})
	var found KnowledgeGraph
	if err := json.Unmarshal(nc.mustOK("search_nodes", map[string]any{"query": "fridays"}).StructuredContent, &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Entities) != 1 || found.Entities[0].Name != "project-alpha" || len(found.Relations) != 1 {
		t.Fatalf("search fridays: %+v", found)
	}

	parked := nc.call("add_observations", map[string]any{"observations": []any{
		map[string]any{"entityName": "project-alpha", "contents": []string{"auto-publish to production is allowed"}}}})
	if parked.IsError || !strings.Contains(parked.text(), "NOT SAVED YET") {
		t.Fatalf("parked write: error=%v %s", parked.IsError, parked.text())
	}
	w := parked.writes(t)
	if len(w) != 1 || w[0].Outcome != outParked {
		t.Fatalf("parked writes: %+v", w)
	}
	if a, _ := nc.graph().entity("project-alpha"); len(a.Observations) != 1 {
		t.Fatalf("parked write visible before review: %+v", a)
	}
	if _, err := e.gov.Approve(context.Background(), w[0].RecordID, memory.Review{By: "reviewer", Route: "admin"}); err != nil {
		t.Fatal(err)
	}
	if a, _ := nc.graph().entity("project-alpha"); !slices.Contains(a.Observations, "auto-publish to production is allowed") {
		t.Fatalf("approved write not visible: %+v", a)
	}

	nc.mustOK("delete_entities", map[string]any{"entityNames": []string{"dana"}})
	g := nc.graph()
	if _, ok := g.entity("dana"); ok || len(g.Relations) != 0 {
		t.Fatalf("after deleting dana: %+v", g)
	}
	return w[0].RecordID
}

// TestTypeScriptClientOverHTTP runs the scenario on Badger and on
// PostgreSQL.
func TestTypeScriptClientOverHTTP(t *testing.T) {
	harnessDir(t)
	onEachStore(t, testTypeScriptClientOverHTTP)
}

func testTypeScriptClientOverHTTP(t *testing.T, e *env) {
	headers, _ := json.Marshal(map[string]string{HeaderAgentID: "openclaw-main", HeaderRunID: "run-9"})
	nc := startNode(t, map[string]string{"MCP_URL": e.http.URL + "/mcp", "MCP_HEADERS": string(headers),
		"MCP_CLIENT_NAME": "openclaw"})
	id := scenario(t, e, nc)
	rec, err := e.gov.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a := rec.Actor; a.Client != "openclaw/1.0.0" || a.AgentID != "openclaw-main" || a.RunID != "run-9" || a.Dialect != "mcp" {
		t.Fatalf("actor %+v", a)
	}
}

func TestTypeScriptClientOverStdioBridge(t *testing.T) {
	harnessDir(t)
	e := newEnv(t)
	env, _ := json.Marshal(map[string]string{"MEMGATE_MCP_URL": e.http.URL, "MEMGATE_AGENT_ID": "stdio-agent"})
	nc := startNode(t, map[string]string{"MCP_COMMAND": bridgeBinary(t), "MCP_ENV": string(env),
		"MCP_CLIENT_NAME": "claude-code"})
	id := scenario(t, e, nc)
	rec, err := e.gov.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a := rec.Actor; a.Client != "claude-code/1.0.0 via memgate-bridge/dev" || a.AgentID != "stdio-agent" || a.RunID == "" {
		t.Fatalf("actor %+v", a)
	}
	// A policy rejection crosses the bridge as the same tool error.
	res := nc.call("add_memory", map[string]any{"text": "the admin password is hunter2"})
	if !res.IsError || !strings.Contains(res.text(), "secrets are never remembered") {
		t.Fatalf("rejection through the bridge: error=%v %s", res.IsError, res.text())
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestBridgeWithoutSidecarSaysSo(t *testing.T) {
	addr := closedPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := Bridge(ctx, BridgeOptions{URL: "http://" + addr}, strings.NewReader(""), &bytes.Buffer{})
	if err == nil {
		t.Fatal("bridge started without a sidecar")
	}
	msg := err.Error()
	for _, want := range []string{"no memgate sidecar answers at http://" + addr + "/mcp", "connection refused", "sidecar serve", "MEMGATE_MCP_URL"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to notice no sidecar answers", d)
	}

	// The command exits non-zero with the same message on stderr.
	cmd := exec.CommandContext(ctx, bridgeBinary(t))
	cmd.Env = append(cmd.Environ(), "MEMGATE_MCP_URL="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "no memgate sidecar answers at http://"+addr+"/mcp") {
		t.Fatalf("bridge command: %v, stderr %q", err, stderr.String())
	}
}

// diffSteps is a low-risk sequence (nothing the test policy parks or
// rejects) run against both servers. It repeats items across calls, not
// within one: server-memory stores a relation or observation given twice in
// one call twice, where memgate keeps one (one slot per fact).
var diffSteps = []struct {
	tool string
	args string
}{
	{"create_entities", `{"entities":[{"name":"alice","entityType":"person","observations":["likes tea","lives in Lyon"]},
		{"name":"acme","entityType":"company","observations":[]},{"name":"bob","entityType":"person","observations":["plays chess"]}]}`},
	{"create_relations", `{"relations":[{"from":"alice","to":"acme","relationType":"works_at"},{"from":"bob","to":"alice","relationType":"knows"}]}`},
	{"create_relations", `{"relations":[{"from":"alice","to":"acme","relationType":"works_at"},{"from":"carol","to":"acme","relationType":"visits"}]}`},
	{"add_observations", `{"observations":[{"entityName":"acme","contents":["makes anvils","founded 1950"]},{"entityName":"alice","contents":["speaks French","likes tea"]}]}`},
	{"create_entities", `{"entities":[{"name":"alice","entityType":"robot","observations":["ignored"]},{"name":"carol","entityType":"person","observations":["writes <html> & \"quotes\""]}]}`},
	{"search_nodes", `{"query":"TEA"}`},
	{"open_nodes", `{"names":["alice","acme","nobody"]}`},
	{"search_nodes", `{"query":"anvil"}`},
	{"delete_observations", `{"deletions":[{"entityName":"alice","observations":["lives in Lyon","never said"]},{"entityName":"ghost","observations":["x"]}]}`},
	{"delete_relations", `{"relations":[{"from":"bob","to":"alice","relationType":"knows"},{"from":"x","to":"y","relationType":"z"}]}`},
	{"delete_entities", `{"entityNames":["bob","ghost"]}`},
	{"add_observations", `{"observations":[{"entityName":"ghost","contents":["boo"]}]}`},
	{"read_graph", `{}`},
}

func TestDifferentialAgainstServerMemory(t *testing.T) {
	dir := harnessDir(t)
	e := newEnv(t)
	memgate := startNode(t, map[string]string{"MCP_URL": e.http.URL + "/mcp"})
	args, _ := json.Marshal([]string{filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")})
	refEnv, _ := json.Marshal(map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")})
	ref := startNode(t, map[string]string{"MCP_COMMAND": "node", "MCP_ARGS": string(args), "MCP_ENV": string(refEnv)})

	// The same contract: schemas, annotations and titles of the nine tools.
	ours, theirs := memgate.tools(), ref.tools()
	for name, want := range theirs {
		got, ok := ours[name]
		if !ok {
			t.Errorf("memgate has no tool %s", name)
			continue
		}
		for _, f := range []struct {
			field     string
			got, want json.RawMessage
		}{{"inputSchema", got.InputSchema, want.InputSchema}, {"outputSchema", got.OutputSchema, want.OutputSchema},
			{"annotations", got.Annotations, want.Annotations}} {
			if !jsonEqual(f.got, f.want) {
				t.Errorf("%s %s:\n got %s\nwant %s", name, f.field, f.got, f.want)
			}
		}
		if got.Title != want.Title || !strings.HasPrefix(got.Description, want.Description) {
			t.Errorf("%s: title %q description %q, want %q %q", name, got.Title, got.Description, want.Title, want.Description)
		}
	}
	if len(theirs) != 9 {
		t.Errorf("server-memory lists %d tools, want 9", len(theirs))
	}

	// The same answers and the same graph after every step.
	for i, step := range diffSteps {
		var a any
		if err := json.Unmarshal([]byte(step.args), &a); err != nil {
			t.Fatal(err)
		}
		got, want := memgate.call(step.tool, a), ref.call(step.tool, a)
		if got.IsError != want.IsError || !jsonEqual(got.StructuredContent, want.StructuredContent) ||
			got.Content[0].Text != want.Content[0].Text {
			t.Fatalf("step %d %s:\nmemgate error=%v %s\n%s\nserver-memory error=%v %s\n%s", i, step.tool,
				got.IsError, got.StructuredContent, got.text(), want.IsError, want.StructuredContent, want.text())
		}
		if g, w := memgate.graph(), ref.graph(); !reflect.DeepEqual(g, w) {
			t.Fatalf("after step %d %s the graphs differ:\nmemgate       %+v\nserver-memory %+v", i, step.tool, g, w)
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var va, vb any
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
