package mcp

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
)

// An MCP client keeps an event stream open for server notifications; the
// sidecar's graceful shutdown must not wait for it.
func TestShutdownDoesNotWaitForOpenStreams(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	srv := NewServer(gov, Options{})
	mux := http.NewServeMux()
	srv.Register(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	hs.RegisterOnShutdown(srv.Close)
	go hs.Serve(ln)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the client open its standalone event stream

	start := time.Now()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	// An open stream would hold Shutdown until ctx's 10 s. Up to 5 s is
	// net/http's own: a connection the client dialed for its reconnect just
	// before the listener closed counts as busy until 5 s without a
	// request header (http.Server.closeIdleConns), which a loaded machine
	// sometimes shows.
	if d := time.Since(start); d > 7*time.Second {
		t.Fatalf("shutdown waited %v for open MCP streams", d)
	}
}
