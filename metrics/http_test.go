package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/proxy"
	memgatemcp "github.com/memgate/memgate/proxy/mcp"
)

// answer is a handler that answers status with a JSON body.
func answer(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { proxy.WriteJSON(w, status, map[string]string{}) }
}

// agentRoutes is a route table shaped like the agent and admin listeners'
// (proxy.Native, proxy/mem0, proxy/mcp, proxy.Admin register the real ones).
func agentRoutes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/memories", answer(http.StatusCreated))
	mux.Handle("GET /api/v1/memories/{id}", answer(http.StatusNotFound))
	for _, p := range []string{"GET /v1/ping", "GET /v1/ping/{$}"} { // both spellings, as proxy/mem0 does
		mux.Handle(p, answer(http.StatusOK))
	}
	mux.Handle("/v1/", answer(http.StatusNotFound)) // proxy/mem0's catch-all
	mux.Handle("POST /memories", answer(http.StatusInsufficientStorage))
	mux.Handle("POST /search", answer(599))
	mux.HandleFunc("DELETE /memories/{id}", func(w http.ResponseWriter, r *http.Request) {}) // writes nothing: 200
	mux.Handle("GET /admin/v1/reviews", answer(http.StatusUnauthorized))
	mux.Handle("GET /healthz", answer(http.StatusOK))
	mux.Handle("GET /metrics", answer(http.StatusOK))
	mux.Handle("POST /slack/interactions", answer(http.StatusOK))
	return mux
}

// cloning stands for the inner middlewares (proxy.RefuseBrowsers, the
// MCP guard) that pass the mux a clone of the request, and refuses what
// carries X-Refuse before any route runs.
func cloning(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Refuse") != "" {
			proxy.WriteJSON(w, http.StatusForbidden, map[string]string{})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), cloneKey{}, true)))
	})
}

type cloneKey struct{}

// TestHTTPLabels: each request counts once under its listener, the route
// pattern that matched (or unmatched), the dialect the pattern belongs to
// and its status code, and its duration is observed under the same route.
func TestHTTPLabels(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		header             string
		route, dialect     string
		code               string
	}{
		{"native write", "POST", "/api/v1/memories", "", "POST /api/v1/memories", "native", "201"},
		{"native 404 from the handler", "GET", "/api/v1/memories/01J", "", "GET /api/v1/memories/{id}", "native", "404"},
		{"native path without a route", "GET", "/api/v1/nothing", "", "unmatched", "native", "404"},
		{"mem0 bare spelling", "GET", "/v1/ping", "", "GET /v1/ping", "mem0", "200"},
		{"mem0 trailing slash counts with the bare spelling", "GET", "/v1/ping/", "", "GET /v1/ping", "mem0", "200"},
		{"mem0 catch-all", "GET", "/v1/whatever/else", "", "/v1/", "mem0", "404"},
		{"mem0 oss, disk full", "POST", "/memories", "", "POST /memories", "mem0", "507"},
		{"a status net/http does not name counts as its class", "POST", "/search", "", "POST /search", "mem0", "5xx"},
		{"a handler that writes nothing answers 200", "DELETE", "/memories/01J", "", "DELETE /memories/{id}", "mem0", "200"},
		{"admin", "GET", "/admin/v1/reviews", "", "GET /admin/v1/reviews", "admin", "401"},
		{"probe", "GET", "/healthz", "", "GET /healthz", "probe", "200"},
		{"wrong method is unmatched", "DELETE", "/healthz", "", "unmatched", "probe", "405"},
		{"metrics", "GET", "/metrics", "", "GET /metrics", "metrics", "200"},
		{"slack", "POST", "/slack/interactions", "", "POST /slack/interactions", "slack", "200"},
		{"unknown path", "GET", "/wp-login.php", "", "unmatched", "unknown", "404"},
		{"refused before the mux counts under its route", "POST", "/api/v1/memories", "X-Refuse", "POST /api/v1/memories", "native", "403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := metrics.NewHTTP(reg)
			if err != nil {
				t.Fatal(err)
			}
			mux := agentRoutes()
			h := m.Instrument("agent", mux, cloning(proxy.JSONRoutes(mux)))
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
			if tc.header != "" {
				r.Header.Set(tc.header, "1")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if got := fmt.Sprint(w.Code); got != tc.code && !strings.HasSuffix(tc.code, "xx") {
				t.Fatalf("answered %d, the test expects %s", w.Code, tc.code)
			}
			labels := []string{"listener", "agent", "dialect", tc.dialect, "route", tc.route}
			if v, ok := seriesValue(t, reg, "memgate_http_requests_total", append(labels, "code", tc.code)...); !ok || v != 1 {
				t.Errorf("requests%v{code=%s} = %v (exported %v), want 1; have:\n%s", labels, tc.code, v, ok, dump(t, reg))
			}
			if v, ok := seriesValue(t, reg, "memgate_http_request_duration_seconds", labels...); !ok || v != 1 {
				t.Errorf("duration%v has %v samples (exported %v), want 1", labels, v, ok)
			}
		})
	}
}

// dump lists the request counters, for failure messages.
func dump(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if mf.GetName() != "memgate_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			fmt.Fprintf(&b, "  %v %v\n", m.GetLabel(), m.GetCounter().GetValue())
		}
	}
	return b.String()
}

// patternPerRequest is a router that answers a new pattern for every
// request, the way a mux answers a CONNECT redirect with the path asked for.
type patternPerRequest struct{}

func (patternPerRequest) Handler(r *http.Request) (http.Handler, string) {
	return http.NotFoundHandler(), "GET " + r.URL.Path
}

// TestHTTPRouteValuesAreBounded: whatever a router answers, the route
// label takes a bounded number of values; the rest count as other.
func TestHTTPRouteValuesAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Instrument("agent", patternPerRequest{}, http.NotFoundHandler())
	const requests = 1000
	for i := range requests {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", fmt.Sprintf("/api/v1/x%d", i), nil))
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	routes, total := map[string]float64{}, 0.0
	for _, mf := range mfs {
		if mf.GetName() != "memgate_http_requests_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "route" {
					routes[l.GetValue()] += s.GetCounter().GetValue()
				}
			}
			total += s.GetCounter().GetValue()
		}
	}
	if total != requests || len(routes) > 257 || routes["other"] != requests-256 {
		t.Fatalf("%v requests counted under %d routes (%v under other), want %d under at most 256 routes and other", total, len(routes), routes["other"], requests)
	}
	// Once full, a known pattern still counts under its own name.
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/x7", nil))
	if v, ok := seriesValue(t, reg, "memgate_http_requests_total", "listener", "agent", "dialect", "native", "route", "GET /api/v1/x7", "code", "404"); !ok || v != 2 {
		t.Fatalf("a route admitted before the bound: %v, want 2", v)
	}
}

// TestHTTPPanicCountsAs500: a handler that panics is counted as a 500
// (net/http drops the connection) and the panic goes on to net/http.
func TestHTTPPanicCountsAs500(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/memories", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	h := m.Instrument("agent", mux, mux)
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want the handler's panic passed on", p)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/v1/memories", nil))
	}()
	if v, ok := seriesValue(t, reg, "memgate_http_requests_total",
		"listener", "agent", "dialect", "native", "route", "POST /api/v1/memories", "code", "500"); !ok || v != 1 {
		t.Fatalf("a panicking handler counted %v (exported %v), want one 500", v, ok)
	}
}

// TestHTTPEventStreamsStillFlush: an event stream through the instrumented
// handler reaches the client event by event, whether the handler flushes
// through http.ResponseController or asserts http.Flusher: the client
// reads the first event while the handler still waits to send the second.
func TestHTTPEventStreamsStillFlush(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush func(http.ResponseWriter) error
	}{
		{"ResponseController", func(w http.ResponseWriter) error { return http.NewResponseController(w).Flush() }},
		{"http.Flusher", func(w http.ResponseWriter) error {
			f, ok := w.(http.Flusher)
			if !ok {
				return fmt.Errorf("%T is no http.Flusher", w)
			}
			f.Flush()
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := metrics.NewHTTP(reg)
			if err != nil {
				t.Fatal(err)
			}
			next := make(chan struct{})
			flushErr := make(chan error, 2)
			mux := http.NewServeMux()
			mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for i, wait := range []chan struct{}{nil, next} {
					if wait != nil {
						select {
						case <-wait:
						case <-r.Context().Done():
							return
						}
					}
					fmt.Fprintf(w, "data: event %d\n\n", i)
					flushErr <- tc.flush(w)
				}
			})
			srv := httptest.NewServer(m.Instrument("agent", mux, mux))
			defer srv.Close()
			client := &http.Client{Timeout: 10 * time.Second} // a stuck stream fails the test
			resp, err := client.Get(srv.URL + "/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			lines := bufio.NewReader(resp.Body)
			// The second event waits for this read: without a working
			// flush the first stays in the server's buffer and the read
			// blocks until the test times out.
			if line, err := lines.ReadString('\n'); err != nil || line != "data: event 0\n" {
				t.Fatalf("first event: %q, %v", line, err)
			}
			if err := <-flushErr; err != nil {
				t.Fatalf("flush: %v", err)
			}
			close(next)
			rest, err := io.ReadAll(lines)
			if err != nil || !strings.Contains(string(rest), "data: event 1\n") {
				t.Fatalf("rest of the stream: %q, %v", rest, err)
			}
			srv.Close() // waits for the handler to return and be counted
			if v, ok := seriesValue(t, reg, "memgate_http_requests_total",
				"listener", "agent", "dialect", "unknown", "route", "GET /events", "code", "200"); !ok || v != 1 {
				t.Fatalf("the stream counted %v (exported %v), want one 200", v, ok)
			}
		})
	}
}

// TestHTTPMCPSessionThroughTheMiddleware runs a real MCP client session
// over Streamable HTTP through the instrumented agent listener: tool calls
// answer, and a request the server sends on the client's standalone event
// stream (a ping) reaches the client and is answered, which needs the
// stream flushed through the wrapper.
func TestHTTPMCPSessionThroughTheMiddleware(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules)})
	srv := memgatemcp.NewServer(gov, memgatemcp.Options{})
	mux := http.NewServeMux()
	srv.Register(mux)
	reg := prometheus.NewRegistry()
	m, err := metrics.NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(m.Instrument("agent", mux, proxy.JSONRoutes(mux)))
	defer hs.Close()
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	var ss *mcp.ServerSession
	for s := range srv.MCPServer().Sessions() {
		ss = s
	}
	if ss == nil {
		t.Fatal("no server session")
	}
	if err := ss.Ping(ctx, nil); err != nil {
		t.Fatalf("the server's ping over the client's event stream: %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	hs.Close() // waits for every handler, the event stream's included

	mcpLabels := []string{"listener", "agent", "dialect", "mcp", "route", "/mcp"}
	ok200, _ := seriesValue(t, reg, "memgate_http_requests_total", append(mcpLabels, "code", "200")...)
	if ok200 < 3 { // initialize, tools/call, the ping's stream; the client's notifications answer 202
		t.Errorf("%v MCP requests answered 200, want at least 3; have:\n%s", ok200, dump(t, reg))
	}
	if v, _ := seriesValue(t, reg, "memgate_http_requests_total", "listener", "agent", "dialect", "unknown", "route", "unmatched", "code", "404"); v != 0 {
		t.Errorf("%v MCP requests counted as unmatched", v)
	}
	h := histogram(t, reg, "memgate_http_request_duration_seconds", mcpLabels...)
	var counted float64
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "memgate_http_requests_total" {
			for _, s := range mf.GetMetric() {
				counted += s.GetCounter().GetValue()
			}
		}
	}
	if float64(h.GetSampleCount()) != counted {
		t.Errorf("%d durations observed for %v requests counted", h.GetSampleCount(), counted)
	}
}

// BenchmarkHTTPInstrument compares a request through the agent route table
// with and without the instrumentation, in the same run: the cost is one
// extra route lookup, a label lookup and the counter and histogram.
func BenchmarkHTTPInstrument(b *testing.B) {
	mux := agentRoutes()
	m, err := metrics.NewHTTP(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", proxy.JSONRoutes(mux)},
		{"instrumented", m.Instrument("agent", mux, proxy.JSONRoutes(mux))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("POST", "/api/v1/memories", nil)
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}
