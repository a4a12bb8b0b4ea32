package metrics

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpDurationBuckets span a durable low-risk write (p99 ≤ 2 ms, DESIGN
// §7) up to a snapshot or a slow model extractor (tens of seconds).
var httpDurationBuckets = []float64{0.5e-3, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10, 30}

// Route label values that are no pattern.
const (
	routeUnmatched = "unmatched"
	// maxRoutes bounds the route values of one listener. A mux returns
	// its registered patterns, except for a CONNECT redirect, where it
	// returns the request's path; the bound holds whatever a mux returns.
	maxRoutes = 256
)

// HTTP counts the requests each listener serves and how long they take,
// by route (the ServeMux pattern that matched) and dialect.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewHTTP creates the request metrics and registers them with reg.
func NewHTTP(reg prometheus.Registerer) (*HTTP, error) {
	m := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by listener, dialect, route (the matched pattern, or unmatched) and status code."},
			[]string{"listener", "dialect", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to answer an HTTP request, by listener, dialect and route; an event stream's is the time to its first event.",
			Buckets: httpDurationBuckets},
			[]string{"listener", "dialect", "route"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return m, nil
}

// Router finds the pattern that serves a request without serving it;
// *http.ServeMux implements it.
type Router interface {
	Handler(r *http.Request) (h http.Handler, pattern string)
}

// Instrument wraps next, the whole handler of the listener named listener
// ("agent", "admin"), so that every request it answers is counted. The
// route is read from routes before next runs (the handlers next wraps may
// clone the request), so requests refused before the mux, by a browser
// check say, count under the route they asked for.
func (m *HTTP) Instrument(listener string, routes Router, next http.Handler) http.Handler {
	seen := &routeSet{known: map[string]routeLabels{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, dialect := routeUnmatched, dialectOf(r.URL.Path)
		if r.Method != http.MethodConnect { // a CONNECT redirect's "pattern" is the request's path
			if _, pattern := routes.Handler(r); pattern != "" {
				l := seen.labels(pattern)
				route, dialect = l.route, l.dialect
			}
		}
		rw := &statusWriter{w: w, start: time.Now()}
		defer func() {
			p := recover()
			if p != nil && rw.status == 0 {
				rw.status = http.StatusInternalServerError // net/http drops the connection
			}
			m.observe(listener, dialect, route, rw)
			if p != nil {
				panic(p)
			}
		}()
		next.ServeHTTP(rw, r)
	})
}

func (m *HTTP) observe(listener, dialect, route string, rw *statusWriter) {
	end := time.Now()
	// An event stream lives as long as its client's session; the time to
	// its first event is what the client waited for (an MCP tool result
	// sent as an event, the opening of a stream).
	if !rw.firstByte.IsZero() && isEventStream(rw.Header()) {
		end = rw.firstByte
	}
	status := rw.status
	if status == 0 {
		status = http.StatusOK // net/http's answer when a handler writes nothing
	}
	m.requests.WithLabelValues(listener, dialect, route, statusCode(status)).Inc()
	m.duration.WithLabelValues(listener, dialect, route).Observe(end.Sub(rw.start).Seconds())
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.TrimSpace(h.Get("Content-Type")), "text/event-stream")
}

// statusCode is the code label of an HTTP status: the exact code for the
// ~60 statuses net/http names, the class ("5xx") otherwise. Exact codes
// keep what an operator acts on apart (507 is a full disk, 503 not ready,
// 429 a cap, 401 a key) while the set of values stays bounded, and a class
// still matches the code=~"5.." selectors alerts use.
func statusCode(status int) string {
	if http.StatusText(status) != "" {
		return strconv.Itoa(status)
	}
	if status < 100 || status > 999 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

// dialectOf names the API a path belongs to, from the route table of
// proxy (native), proxy/mem0 (Mem0 Platform and open-source), proxy/mcp
// and proxy.Admin. It returns one of a fixed set of values whatever the
// path.
func dialectOf(path string) string {
	switch {
	case hasPathPrefix(path, "/api"):
		return "native"
	case hasPathPrefix(path, "/v1"), hasPathPrefix(path, "/v2"), hasPathPrefix(path, "/v3"),
		hasPathPrefix(path, "/memories"), path == "/search", path == "/search/":
		return "mem0"
	case hasPathPrefix(path, "/mcp"):
		return "mcp"
	case hasPathPrefix(path, "/admin"):
		return "admin"
	case hasPathPrefix(path, "/slack"):
		return "slack"
	case path == "/healthz", path == "/readyz":
		return "probe"
	case path == "/metrics":
		return "metrics"
	}
	return "unknown"
}

// hasPathPrefix reports whether path is prefix or lies under it.
func hasPathPrefix(path, prefix string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && (rest == "" || rest[0] == '/')
}

// routeSet turns patterns into route and dialect labels, at most maxRoutes
// of them; each pattern is parsed once.
type routeSet struct {
	mu    sync.RWMutex
	known map[string]routeLabels // by pattern
}

type routeLabels struct{ route, dialect string }

func (s *routeSet) labels(pattern string) routeLabels {
	s.mu.RLock()
	l, ok := s.known[pattern]
	s.mu.RUnlock()
	if ok {
		return l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok = s.known[pattern]; ok {
		return l
	}
	if len(s.known) >= maxRoutes {
		return routeLabels{otherValue, "unknown"}
	}
	route := routeOf(pattern)
	l = routeLabels{route, dialectOf(patternPath(route))}
	s.known[pattern] = l
	return l
}

// routeOf is the route label of a pattern: the pattern itself, without the
// "/{$}" of the trailing-slash spelling Mem0 clients use, which proxy/mem0
// registers beside the bare path for the same handler.
func routeOf(pattern string) string {
	if p, ok := strings.CutSuffix(pattern, "/{$}"); ok && patternPath(p) != "" {
		return p
	}
	return pattern
}

// patternPath is the path of a ServeMux pattern "[METHOD ][HOST]/PATH".
func patternPath(pattern string) string {
	if _, rest, ok := strings.Cut(pattern, " "); ok {
		pattern = strings.TrimLeft(rest, " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		return pattern[i:]
	}
	return ""
}

// statusWriter records the status a handler answers and when its first
// byte went out. Flush and Unwrap keep event streams working:
// http.ResponseController (what the MCP SDK flushes with) finds FlushError,
// and its other methods reach the underlying writer through Unwrap.
type statusWriter struct {
	w         http.ResponseWriter
	start     time.Time
	status    int
	firstByte time.Time
}

func (s *statusWriter) Header() http.Header { return s.w.Header() }

func (s *statusWriter) WriteHeader(status int) {
	if s.status == 0 && status >= 200 { // 1xx: another header follows
		s.status = status
	}
	s.w.WriteHeader(status)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.sent()
	return s.w.Write(b)
}

// FlushError flushes the underlying writer; a flush sends the header, so
// a status not yet written is 200.
func (s *statusWriter) FlushError() error {
	s.sent()
	return http.NewResponseController(s.w).Flush()
}

// Flush implements http.Flusher for handlers that assert it.
func (s *statusWriter) Flush() { _ = s.FlushError() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.w }

func (s *statusWriter) sent() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.firstByte.IsZero() {
		s.firstByte = time.Now()
	}
}
