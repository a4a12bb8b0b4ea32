package mcp

// Tests with the real TypeScript MCP client (@modelcontextprotocol/sdk) and
// the real @modelcontextprotocol/server-memory, installed from
// testdata/package-lock.json (npm ci --prefix proxy/mcp/testdata). Without
// them the tests skip, except under CI, where they fail.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Run(m) // the PostgreSQL runs share one throwaway cluster
	if bridgeDir != "" {
		os.RemoveAll(bridgeDir)
	}
	os.Exit(code)
}

// harnessDir returns the npm harness directory, or skips (fails under CI)
// when node or the packages are missing.
func harnessDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed (apt-get install nodejs npm)"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-memory")); err != nil {
		missing = "the npm harness is not installed: run npm ci --prefix proxy/mcp/testdata"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return dir
}

var (
	bridgeOnce sync.Once
	bridgeDir  string
	bridgeBin  string
	bridgeErr  error
)

// bridgeBinary builds internal/bridgecmd once per test run: the stdio bridge
// as `sidecar mcp` runs it, for clients that spawn a command.
func bridgeBinary(t *testing.T) string {
	t.Helper()
	bridgeOnce.Do(func() {
		bridgeDir, bridgeErr = os.MkdirTemp("", "memgate-bridge-")
		if bridgeErr != nil {
			return
		}
		bridgeBin = filepath.Join(bridgeDir, "bridge")
		out, err := exec.Command("go", "build", "-o", bridgeBin, "./internal/bridgecmd").CombinedOutput()
		if err != nil {
			bridgeErr = fmt.Errorf("go build ./internal/bridgecmd: %v\n%s", err, out)
		}
	})
	if bridgeErr != nil {
		t.Fatal(bridgeErr)
	}
	return bridgeBin
}

// nodeClient drives testdata/client.mjs.
type nodeClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     *json.Encoder
	out    *bufio.Scanner
	nextID int
}

// toolResult is a CallToolResult as the TypeScript client returns it.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              json.RawMessage `json:"_meta"`
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func (r toolResult) writes(t *testing.T) []writeResult {
	t.Helper()
	var m struct {
		Memgate struct {
			Writes []writeResult `json:"writes"`
		} `json:"memgate"`
	}
	if len(r.Meta) > 0 {
		if err := json.Unmarshal(r.Meta, &m); err != nil {
			t.Fatal(err)
		}
	}
	return m.Memgate.Writes
}

func startNode(t *testing.T, env map[string]string) *nodeClient {
	t.Helper()
	dir := harnessDir(t)
	cmd := exec.Command("node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	nc := &nodeClient{t: t, cmd: cmd, in: json.NewEncoder(stdin), out: bufio.NewScanner(stdout)}
	nc.out.Buffer(make([]byte, 1<<20), 16<<20)
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	if _, errMsg := nc.read(0); errMsg != "" {
		t.Fatalf("node client: %s", errMsg)
	}
	return nc
}

// testWriter sends a child's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("node: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (nc *nodeClient) read(id int) (json.RawMessage, string) {
	nc.t.Helper()
	lines := make(chan bool, 1)
	go func() { lines <- nc.out.Scan() }()
	select {
	case ok := <-lines:
		if !ok {
			nc.t.Fatalf("node client ended: %v", nc.out.Err())
		}
	case <-time.After(30 * time.Second):
		nc.t.Fatal("node client did not answer in 30s")
	}
	var msg struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(nc.out.Bytes(), &msg); err != nil || msg.ID != id {
		nc.t.Fatalf("node client answered %s (want id %d): %v", nc.out.Bytes(), id, err)
	}
	return msg.Result, msg.Error
}

func (nc *nodeClient) request(req map[string]any) (json.RawMessage, string) {
	nc.t.Helper()
	nc.nextID++
	req["id"] = nc.nextID
	if err := nc.in.Encode(req); err != nil {
		nc.t.Fatal(err)
	}
	return nc.read(nc.nextID)
}

// call calls a tool; a protocol error fails the test.
func (nc *nodeClient) call(name string, args any) toolResult {
	nc.t.Helper()
	raw, errMsg := nc.request(map[string]any{"method": "callTool", "name": name, "arguments": args})
	if errMsg != "" {
		nc.t.Fatalf("%s: %s", name, errMsg)
	}
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		nc.t.Fatal(err)
	}
	return r
}

func (nc *nodeClient) mustOK(name string, args any) toolResult {
	nc.t.Helper()
	r := nc.call(name, args)
	if r.IsError {
		nc.t.Fatalf("%s answered an error: %s", name, r.text())
	}
	return r
}

// listedTool is a tool as tools/list shows it.
type listedTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

func (nc *nodeClient) tools() map[string]listedTool {
	nc.t.Helper()
	raw, errMsg := nc.request(map[string]any{"method": "listTools"})
	if errMsg != "" {
		nc.t.Fatal(errMsg)
	}
	var list struct {
		Tools []listedTool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		nc.t.Fatal(err)
	}
	out := map[string]listedTool{}
	for _, tl := range list.Tools {
		out[tl.Name] = tl
	}
	return out
}

func (nc *nodeClient) graph() KnowledgeGraph {
	nc.t.Helper()
	var g KnowledgeGraph
	if err := json.Unmarshal(nc.mustOK("read_graph", map[string]any{}).StructuredContent, &g); err != nil {
		nc.t.Fatal(err)
	}
	return g
}
