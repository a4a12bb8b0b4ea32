package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
)

func TestEndpoint(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{"", "http://127.0.0.1:7600/mcp", ""},
		{"127.0.0.1:9000", "http://127.0.0.1:9000/mcp", ""},
		{"http://localhost:7600/", "http://localhost:7600/mcp", ""},
		{"https://memgate.internal/agents/mcp", "https://memgate.internal/agents/mcp", ""},
		{"ftp://x", "", "not an http(s) URL"},
		{"http://", "", "not an http(s) URL"},
	}
	for _, tt := range tests {
		got, err := endpoint(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("endpoint(%q) = %q, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("endpoint(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// swappable lets a test replace the sidecar behind one URL, as a restart
// does (a new process knows none of the old MCP sessions).
type swappable struct{ h atomic.Pointer[http.Handler] }

func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }

func (s *swappable) set(h http.Handler) { s.h.Store(&h) }

// bridged runs Bridge on pipes and connects a Go SDK client to its stdio.
func bridged(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Bridge(ctx, BridgeOptions{URL: url, AgentID: "piped", Version: "t"}, inR, outW)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pipe-client", Version: "2"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect through the bridge: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("bridge ended with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("bridge did not end when its stdin closed")
		}
		cancel()
	})
	return cs
}

func TestBridgeSurvivesASidecarRestart(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	var sw swappable
	sw.set(NewServer(gov, Options{}).Handler())
	hs := httptest.NewServer(&sw)
	defer hs.Close()

	cs := bridged(t, hs.URL)
	mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "eve", "entityType": "person", "observations": []string{"likes maps"}}}})

	// The sidecar restarts: the bridge's session is gone; the next call
	// opens a new one and goes through.
	sw.set(NewServer(gov, Options{}).Handler())
	g := readGraphOf(t, cs)
	if e, ok := g.entity("eve"); !ok || len(e.Observations) != 1 {
		t.Fatalf("graph after restart: %+v", g)
	}
	rec, err := gov.List(context.Background(), memory.ListFilter{SubjectID: "eve"})
	if err != nil || len(rec) != 2 || rec[0].Actor.AgentID != "piped" || rec[0].Actor.Client != "pipe-client/2 via memgate-bridge/t" {
		t.Fatalf("records %v %+v", err, rec)
	}

	// The sidecar is down: the call answers a tool error that says so.
	sw.set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler) // drop the connection, as a dying process does
	}))
	res := call(t, cs, "read_graph", map[string]any{})
	if !res.IsError || !strings.Contains(text(res), "did not answer") {
		t.Fatalf("call with the sidecar down: error=%v %s", res.IsError, text(res))
	}
}
