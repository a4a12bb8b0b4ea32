package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/proxy"
)

// Defaults of the Options that bound the Streamable HTTP endpoint.
const (
	// DefaultMaxSessions bounds open MCP sessions. A session costs about
	// 15 KB while it lives (20,000 cost 290 MB), so 1000 stay near 15 MB;
	// an agent host opens a handful.
	DefaultMaxSessions = 1000
	// DefaultMaxStreams bounds the responses open at once: the event
	// streams clients hold with GET and the POSTs in flight. Each holds a
	// connection and a goroutine; memgate's tools answer in milliseconds
	// and it sends no server-initiated messages, so 100 is ample.
	DefaultMaxStreams = 100
	// DefaultSessionTimeout closes a session no request has used this
	// long. An open event stream does not keep a session alive; clients
	// re-initialize when told the session is gone (404).
	DefaultSessionTimeout = 5 * time.Minute
)

// How long a refused client is asked to wait before trying again.
const (
	retrySessions = 30 * time.Second // sessions free up as idle ones expire
	retryStreams  = 5 * time.Second  // streams free up as calls finish
	retryShutdown = 5 * time.Second  // a restart takes seconds
)

// JSON-RPC error codes of HTTP-level refusals, in the implementation-defined
// server error range, as other MCP SDKs answer them (the TypeScript SDK
// answers -32000 for transport refusals and -32001 for an unknown session).
const (
	codeRefused         = -32000
	codeSessionNotFound = -32001
)

// limits admits requests to the Streamable HTTP handler: at most
// maxSessions sessions and maxStreams open responses, of which GET event
// streams may hold at most half, so that clients idling on event streams
// cannot starve the calls of every session.
type limits struct {
	srv         *mcp.Server
	log         *slog.Logger
	maxSessions int
	maxStreams  int
	maxEvents   int // of maxStreams, for GET event streams

	mu              sync.Mutex
	initing         int // POSTs that may be creating a session, in flight
	streams         int // GETs and POSTs in flight
	events          int // GETs in flight
	refusedSessions refusals
	refusedStreams  refusals
}

// refusals counts refusals, so that a flood is logged once a minute.
type refusals struct {
	n      int
	warned time.Time
}

// refuse counts a refusal and returns how many to report now (0: none).
func (r *refusals) refuse() int {
	r.n++
	if time.Since(r.warned) < time.Minute {
		return 0
	}
	n := r.n
	r.n, r.warned = 0, time.Now()
	return n
}

func newLimits(srv *mcp.Server, log *slog.Logger, maxSessions, maxStreams int) *limits {
	return &limits{srv: srv, log: log, maxSessions: maxSessions, maxStreams: maxStreams,
		maxEvents: max(1, (maxStreams+1)/2)}
}

// sessions counts the initialized sessions of the Streamable HTTP handler
// (each has an id; in-process and stdio sessions have none). A session
// that is not initialized lives only as long as the POST that created it
// (the SDK closes it then; its client probes with server/discover first),
// and that POST is counted in initing.
func (l *limits) sessions() int {
	n := 0
	for ss := range l.srv.Sessions() {
		if ss.ID() != "" && ss.InitializeParams() != nil {
			n++
		}
	}
	return n
}

// admit takes the slots r needs, or writes the refusal and returns false.
// The caller gives the slots back with release; a POST that may create a
// session also calls answered when its answer starts, which is after the
// session is registered with the SDK server (Sessions counts it from then).
func (l *limits) admit(w http.ResponseWriter, r *http.Request) (answered, release func(), ok bool) {
	get, post := r.Method == http.MethodGet, r.Method == http.MethodPost
	if !get && !post {
		return func() {}, func() {}, true // DELETE and others answer at once
	}
	// A POST without a session id creates a session (an initialize; any
	// other request gets a session that closes when the POST ends).
	creates := post && r.Header.Get("Mcp-Session-Id") == ""

	l.mu.Lock()
	switch {
	case creates && l.sessions()+l.initing >= l.maxSessions:
		// A session being initialized is counted twice, in Sessions and in
		// initing, from its creation until its answer starts: under
		// concurrent initializes this refuses early, never admits past
		// the cap. A client that waits for its answer is counted once.
		warn := l.refusedSessions.refuse()
		l.mu.Unlock()
		if warn > 0 {
			l.log.Warn("MCP session cap reached; refusing new sessions", "max", l.maxSessions, "refusedSinceLastWarning", warn)
		}
		writeRefusal(w, http.StatusServiceUnavailable, retrySessions,
			"too many MCP sessions (at most "+strconv.Itoa(l.maxSessions)+"); close idle sessions or retry later")
		return nil, nil, false
	case l.streams >= l.maxStreams || get && l.events >= l.maxEvents:
		what := "too many open MCP requests and event streams (at most " + strconv.Itoa(l.maxStreams) + ")"
		if l.streams < l.maxStreams {
			what = "too many open MCP event streams (at most " + strconv.Itoa(l.maxEvents) + ")"
		}
		warn := l.refusedStreams.refuse()
		l.mu.Unlock()
		if warn > 0 {
			l.log.Warn("MCP stream cap reached; refusing requests", "maxStreams", l.maxStreams, "maxEventStreams", l.maxEvents,
				"refusedSinceLastWarning", warn)
		}
		writeRefusal(w, http.StatusTooManyRequests, retryStreams, what+"; retry later")
		return nil, nil, false
	}
	l.streams++
	if get {
		l.events++
	}
	if creates {
		l.initing++
	}
	l.mu.Unlock()
	answered = func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if creates {
			creates = false
			l.initing--
		}
	}
	release = func() {
		answered()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.streams--
		if get {
			l.events--
		}
	}
	return answered, release, true
}

// open reports the slots in use, for tests.
func (l *limits) open() (streams, events int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.streams, l.events
}

// writeRefusal answers a request memgate refuses to serve now as a
// JSON-RPC error with a Retry-After header.
func writeRefusal(w http.ResponseWriter, status int, retry time.Duration, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(retry/time.Second)))
	writeRPCError(w, status, codeRefused, msg)
}

// rpcErrorBody is a JSON-RPC error response to a request whose id is not
// known (the SDK's jsonrpc.Response omits a zero id; JSON-RPC 2.0 asks for
// null). The id must stay null: the SDK's client reads a 404 as a missing
// session (mcp.ErrSessionMissing, on which clients re-initialize) only when
// the body is not a JSON-RPC response it can decode, and it cannot decode
// one without an id.
type rpcErrorBody struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      any            `json:"id"`
	Error   *jsonrpc.Error `json:"error"`
}

// writeRPCError answers with a JSON-RPC error object and the given status.
func writeRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(rpcErrorBody{JSONRPC: "2.0", Error: &jsonrpc.Error{Code: code, Message: msg}}) // the client went away
}

// rpcCode is the JSON-RPC error code for an HTTP error status of the SDK.
func rpcCode(status int) int64 {
	switch status {
	case http.StatusBadRequest:
		return jsonrpc.CodeInvalidRequest
	case http.StatusNotFound: // the SDK's only 404: an unknown or closing session
		return codeSessionNotFound
	case http.StatusInternalServerError:
		return jsonrpc.CodeInternalError
	}
	return codeRefused
}

// guard serves next, the SDK's Streamable HTTP handler, within the limits:
// refuses what is over a cap, cancels every request when the server
// closes, and answers each error the SDK writes as plain text (http.Error)
// as a JSON-RPC error object with the same status and headers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.closing.Err() != nil {
			writeRefusal(w, http.StatusServiceUnavailable, retryShutdown, "memgate is shutting down")
			return
		}
		answered, release, ok := s.limits.admit(w, r)
		if !ok {
			return
		}
		defer release()
		// The SDK bounds the body too, but on the writer it is given; bound
		// it on the server's own, so that past the limit the connection
		// closes instead of the rest of the body being read.
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, proxy.MaxBodyBytes)
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.closing, cancel)
		defer stop()
		jw := &jsonErrors{w: w, onHeader: answered}
		defer jw.finish()
		next.ServeHTTP(jw, r.WithContext(ctx))
	})
}

// maxErrorText bounds the plain text kept from an http.Error answer.
const maxErrorText = 4 << 10

// jsonErrors passes a handler's answers through, except an error status
// with a text/plain body (what http.Error writes), which it keeps and
// writes at finish as a JSON-RPC error with the same status and headers.
// Successful answers and event streams are untouched; Flush and the
// http.ResponseController methods reach the underlying writer.
type jsonErrors struct {
	w           http.ResponseWriter
	onHeader    func() // called when the answer's header is decided
	wroteHeader bool
	status      int // an error being converted, else 0
	text        bytes.Buffer
}

func (j *jsonErrors) Header() http.Header { return j.w.Header() }

func (j *jsonErrors) WriteHeader(status int) {
	if j.wroteHeader {
		if j.status == 0 {
			j.w.WriteHeader(status) // let net/http report the superfluous call
		}
		return
	}
	if status >= 100 && status < 200 { // informational: another header follows
		j.w.WriteHeader(status)
		return
	}
	j.wroteHeader = true
	j.onHeader()
	if status >= 400 && strings.HasPrefix(j.w.Header().Get("Content-Type"), "text/plain") {
		j.status = status
		return
	}
	j.w.WriteHeader(status)
}

func (j *jsonErrors) Write(b []byte) (int, error) {
	if !j.wroteHeader {
		j.WriteHeader(http.StatusOK)
	}
	if j.status != 0 {
		if room := maxErrorText - j.text.Len(); room > 0 {
			j.text.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	return j.w.Write(b)
}

// FlushError flushes the underlying writer; a plain-text error being
// converted has nothing to flush yet.
func (j *jsonErrors) FlushError() error {
	if j.status != 0 {
		return nil
	}
	if !j.wroteHeader { // a flush sends the header: 200
		j.wroteHeader = true
		j.onHeader()
	}
	return http.NewResponseController(j.w).Flush()
}

// Flush implements http.Flusher, which the SDK's event streams use.
func (j *jsonErrors) Flush() { _ = j.FlushError() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.w }

// finish writes a kept plain-text error as a JSON-RPC error.
func (j *jsonErrors) finish() {
	if j.status == 0 {
		return
	}
	msg := strings.TrimSpace(j.text.String())
	if msg == "" {
		msg = http.StatusText(j.status)
	}
	writeRPCError(j.w, j.status, rpcCode(j.status), msg)
}
