package mcp

// Bounded MCP: caps on sessions and open streams, idle expiry, and every
// error of the Streamable HTTP endpoint a JSON-RPC error object. Real HTTP
// on loopback; the SDK's client where a client's view matters, raw requests
// where the exact answer does.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

const testProtocolVersion = "2025-06-18"

// newLimitedServer serves a Server built with o on a loopback HTTP server.
func newLimitedServer(t *testing.T, o Options) (*Server, *httptest.Server) {
	t.Helper()
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	srv := NewServer(gov, o)
	mux := http.NewServeMux()
	srv.Register(mux)
	hs := httptest.NewServer(mux) // binds 127.0.0.1
	t.Cleanup(func() {
		srv.Close() // ends open event streams, so hs.Close does not wait for them
		hs.Close()
	})
	return srv, hs
}

func sdkConnect(ctx context.Context, hs *httptest.Server) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "limits", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", MaxRetries: -1}, nil)
}

// mcpRequest is a POST to /mcp as a Streamable HTTP client sends it.
func mcpRequest(t *testing.T, ctx context.Context, hs *httptest.Server, session string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/mcp", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", testProtocolVersion)
	}
	return req
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` +
	testProtocolVersion + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// rawSession initializes a session with raw requests (so that no event
// stream opens on its own) and returns its id. Success answers pass the
// error conversion untouched: an event stream, then 202 with no body.
func rawSession(t *testing.T, hs *httptest.Server) string {
	t.Helper()
	ctx := t.Context()
	resp, b := do(t, mcpRequest(t, ctx, hs, "", strings.NewReader(initializeBody)))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
		!bytes.Contains(b, []byte(`"result"`)) {
		t.Fatalf("initialize: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize answered no Mcp-Session-Id")
	}
	resp, b = do(t, mcpRequest(t, ctx, hs, id, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	if resp.StatusCode != http.StatusAccepted || len(b) != 0 {
		t.Fatalf("initialized: %d %q", resp.StatusCode, b)
	}
	return id
}

// eventStream opens a session's event stream (GET) and returns its
// response once the server's first event has arrived, or the refusal.
func eventStream(t *testing.T, ctx context.Context, hs *httptest.Server, session string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", testProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode == http.StatusOK {
		// The SDK flushes a comment at once: flushing reaches through
		// the error conversion.
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, ":") {
			t.Fatalf("event stream: first line %q, %v", line, err)
		}
	}
	return resp
}

// wantRPCError checks that an answer is a JSON-RPC error object with an
// unknown (null) id and the given status, and returns its message.
func wantRPCError(t *testing.T, what string, resp *http.Response, body []byte, status int) string {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status %d, want %d (%q)", what, resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q, want application/json (%q)", what, ct, body)
	}
	var got struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%s: body %q: %v", what, body, err)
	}
	if got.JSONRPC != "2.0" || string(got.ID) != "null" || got.Error == nil ||
		got.Error.Code == nil || *got.Error.Code == 0 || got.Error.Message == nil || *got.Error.Message == "" {
		t.Fatalf("%s: not a JSON-RPC error object with id null: %q", what, body)
	}
	return *got.Error.Message
}

func wantRetryAfter(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: no Retry-After", what)
	}
}

// Past MaxSessions a new session is refused with 503 and a JSON-RPC error,
// the SDK's client reports the refusal, existing sessions keep working, and
// closing one (DELETE) makes room.
func TestSessionCapRefusesNewSessions(t *testing.T) {
	_, hs := newLimitedServer(t, Options{MaxSessions: 3})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var open []*mcp.ClientSession
	for range 3 {
		cs, err := sdkConnect(ctx, hs)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		open = append(open, cs)
	}
	if cs, err := sdkConnect(ctx, hs); err == nil {
		cs.Close()
		t.Fatal("a 4th session was accepted with MaxSessions 3")
	}
	resp, body := do(t, mcpRequest(t, ctx, hs, "", strings.NewReader(initializeBody)))
	msg := wantRPCError(t, "initialize past the cap", resp, body, http.StatusServiceUnavailable)
	wantRetryAfter(t, "initialize past the cap", resp)
	if !strings.Contains(msg, "sessions") {
		t.Errorf("message %q does not say what is exhausted", msg)
	}

	for _, cs := range open { // existing sessions keep working at the cap
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err != nil {
			t.Fatalf("existing session at the cap: %v", err)
		}
	}

	if err := open[0].Close(); err != nil { // DELETE
		t.Fatal(err)
	}
	cs, err := sdkConnect(ctx, hs)
	if err != nil {
		t.Fatalf("after a session closed: %v", err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
}

// An idle session expires after SessionTimeout and frees its place.
func TestIdleSessionExpiryFreesItsPlace(t *testing.T) {
	_, hs := newLimitedServer(t, Options{MaxSessions: 1, SessionTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	idle, err := mcp.NewClient(&mcp.Implementation{Name: "idle", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	resp, body := do(t, mcpRequest(t, ctx, hs, "", strings.NewReader(initializeBody)))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second session with MaxSessions 1: %d %q", resp.StatusCode, body)
	}

	deadline := time.Now().Add(15 * time.Second)
	for {
		cs, err := sdkConnect(ctx, hs)
		if err == nil {
			defer cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new session after the idle one should have expired: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The expired session is gone: 404 as a JSON-RPC error, which the SDK's
	// client still reads as a missing session (and re-initializes, as
	// memgate's stdio bridge does).
	resp, body = do(t, mcpRequest(t, ctx, hs, idle.ID(), strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)))
	wantRPCError(t, "expired session", resp, body, http.StatusNotFound)
	if _, err := idle.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("a call on the expired session: %v, want mcp.ErrSessionMissing", err)
	}
}

// waitOpen waits until the server holds the given numbers of open
// responses and event streams.
func waitOpen(t *testing.T, srv *Server, streams, events int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, e := srv.limits.open()
		if s == streams && e == events {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("open responses %d and event streams %d, want %d and %d", s, e, streams, events)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Past MaxStreams a request is refused with 429 and a JSON-RPC error; event
// streams may hold only half of the cap, so calls still get through while
// clients idle on them.
func TestStreamCapRefusesStreams(t *testing.T) {
	srv, hs := newLimitedServer(t, Options{MaxStreams: 4}) // event streams: at most 2
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s1, s2, s3 := rawSession(t, hs), rawSession(t, hs), rawSession(t, hs)

	ctx1, cancel1 := context.WithCancel(ctx)
	defer cancel1()
	eventStream(t, ctx1, hs, s1)
	eventStream(t, ctx, hs, s2)
	waitOpen(t, srv, 2, 2)

	resp := eventStream(t, ctx, hs, s3)
	body, _ := io.ReadAll(resp.Body)
	wantRPCError(t, "a 3rd event stream", resp, body, http.StatusTooManyRequests)
	wantRetryAfter(t, "a 3rd event stream", resp)

	// Calls are still admitted: hold two POSTs open (their bodies unsent).
	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	var writers []*io.PipeWriter
	answers := make(chan answer, 2)
	for range 2 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		defer pw.Close()
		req := mcpRequest(t, ctx, hs, s1, pr)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			answers <- answer{resp: resp, body: b, err: err}
		}()
	}
	waitOpen(t, srv, 4, 2)

	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	resp, body = do(t, mcpRequest(t, ctx, hs, s2, strings.NewReader(ping)))
	wantRPCError(t, "a call past the stream cap", resp, body, http.StatusTooManyRequests)
	wantRetryAfter(t, "a call past the stream cap", resp)
	if cs, err := sdkConnect(ctx, hs); err == nil {
		cs.Close()
		t.Fatal("the SDK client connected past the stream cap")
	}

	for i, pw := range writers { // the held calls complete
		if _, err := fmt.Fprintf(pw, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 10+i); err != nil {
			t.Fatal(err)
		}
		pw.Close()
	}
	for range 2 {
		a := <-answers
		if a.err != nil || a.resp.StatusCode != http.StatusOK || !bytes.Contains(a.body, []byte(`"result"`)) {
			t.Fatalf("held call: %v %v %q", a.err, a.resp, a.body)
		}
	}
	waitOpen(t, srv, 2, 2)
	resp, body = do(t, mcpRequest(t, ctx, hs, s2, strings.NewReader(ping)))
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"result"`)) {
		t.Fatalf("a call once streams were free: %d %q", resp.StatusCode, body)
	}

	cancel1() // the first event stream ends; a third may open
	waitOpen(t, srv, 1, 1)
	if resp := eventStream(t, ctx, hs, s3); resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream once one closed: %d", resp.StatusCode)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, hs.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", s1)
	if resp, body := do(t, req); resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("DELETE: %d %q", resp.StatusCode, body)
	}
}

// Each error the SDK answers in plain text answers with the same status
// (and Allow header) as a JSON-RPC error object; the bare SDK handler on
// the same MCP server shows what it would have said.
func TestTransportErrorsAreJSONRPC(t *testing.T) {
	srv, hs := newLimitedServer(t, Options{})
	bare := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCPServer() },
		&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: proxy.MaxBodyBytes}))
	defer bare.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	jsonHeaders := func(r *http.Request) {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	unknownSession := func(r *http.Request) {
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Session-Id", "no-such-session")
	}
	cases := []struct {
		name   string
		method string
		body   string
		setup  func(*http.Request)
		status int
	}{
		{"wrong method", http.MethodPut, initializeBody, jsonHeaders, http.StatusMethodNotAllowed},
		{"foreign Host", http.MethodPost, initializeBody, func(r *http.Request) { jsonHeaders(r); r.Host = "evil.example" }, http.StatusForbidden},
		{"body too large", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` +
			strings.Repeat("x", proxy.MaxBodyBytes) + `"}}`, jsonHeaders, http.StatusRequestEntityTooLarge},
		{"unknown session POST", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			func(r *http.Request) { jsonHeaders(r); unknownSession(r) }, http.StatusNotFound},
		{"unknown session GET", http.MethodGet, "", unknownSession, http.StatusNotFound},
		{"unknown session DELETE", http.MethodDelete, "", unknownSession, http.StatusNotFound},
		{"GET without session", http.MethodGet, "", func(r *http.Request) { r.Header.Set("Accept", "text/event-stream") }, http.StatusBadRequest},
		{"DELETE without session", http.MethodDelete, "", nil, http.StatusBadRequest},
		{"not JSON", http.MethodPost, initializeBody, func(r *http.Request) {
			jsonHeaders(r)
			r.Header.Set("Content-Type", "text/plain")
		}, http.StatusUnsupportedMediaType},
		{"no event-stream Accept", http.MethodPost, initializeBody, func(r *http.Request) {
			jsonHeaders(r)
			r.Header.Set("Accept", "application/json")
		}, http.StatusBadRequest},
		{"malformed JSON", http.MethodPost, `{"jsonrpc":`, jsonHeaders, http.StatusBadRequest},
		{"empty body", http.MethodPost, "", jsonHeaders, http.StatusBadRequest},
		{"unsupported protocol version", http.MethodPost, initializeBody, func(r *http.Request) {
			jsonHeaders(r)
			r.Header.Set("Mcp-Protocol-Version", "1999-01-01")
		}, http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answer := func(base string) (*http.Response, []byte) {
				req, err := http.NewRequestWithContext(ctx, c.method, base+"/mcp", strings.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				if c.setup != nil {
					c.setup(req)
				}
				return do(t, req)
			}
			was, wasBody := answer(bare.URL)
			if was.StatusCode != c.status || !strings.HasPrefix(was.Header.Get("Content-Type"), "text/plain") {
				t.Fatalf("the bare SDK answers %d %s %q; the case needs updating", was.StatusCode, was.Header.Get("Content-Type"), wasBody)
			}
			resp, body := answer(hs.URL)
			msg := wantRPCError(t, c.name, resp, body, c.status)
			if want := strings.TrimSpace(string(wasBody)); msg != want {
				t.Errorf("message %q, want the SDK's %q", msg, want)
			}
			if got, want := resp.Header.Get("Allow"), was.Header.Get("Allow"); got != want {
				t.Errorf("Allow %q, want %q", got, want)
			}
		})
	}
}

// A closing server refuses with 503, Retry-After and a JSON-RPC error.
func TestShuttingDownIsJSONRPC(t *testing.T) {
	srv, hs := newLimitedServer(t, Options{})
	srv.Close()
	resp, body := do(t, mcpRequest(t, t.Context(), hs, "", strings.NewReader(initializeBody)))
	wantRPCError(t, "shutting down", resp, body, http.StatusServiceUnavailable)
	wantRetryAfter(t, "shutting down", resp)
}
