// Package load is memgate's load tool: it drives a running sidecar over
// HTTP (native or Mem0 dialect) with a chosen rate, concurrency, mix of
// operations and duration, and measures throughput and latency
// percentiles. In the same run it measures a baseline, a bare HTTP handler
// doing the same durable Badger write, so memgate's cost is reported as a
// ratio that holds across machines (DESIGN §7).
package load

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Dialect is the API the load speaks.
type Dialect string

const (
	Native Dialect = "native" // POST /api/v1/memories, GET /api/v1/memories
	Mem0   Dialect = "mem0"   // POST /v3/memories/add/, POST /v3/memories/search/
)

// Kind is one kind of operation in the mix.
type Kind string

const (
	// KindWrite is a low-risk write the default policy applies at once (a
	// task checkpoint; a Mem0 preference).
	KindWrite Kind = "write"
	// KindOverride is a write the default policy parks for review (an
	// override of a state; a Mem0 strategy constraint).
	KindOverride Kind = "override"
	// KindRead reads one memory by id.
	KindRead Kind = "read"
	// KindSearch searches the active layer of one subject.
	KindSearch Kind = "search"
)

// Kinds lists the kinds in report order.
var Kinds = []Kind{KindWrite, KindOverride, KindRead, KindSearch}

// Mix weighs the kinds of operations.
type Mix map[Kind]int

// ParseMix reads "write=70,override=10,read=10,search=10".
func ParseMix(s string) (Mix, error) {
	m := Mix{}
	for _, part := range strings.Split(s, ",") {
		name, weight, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("mix %q: want kind=weight, got %q", s, part)
		}
		k := Kind(strings.TrimSpace(name))
		if !validKind(k) {
			return nil, fmt.Errorf("mix %q: unknown kind %q (want write, override, read, search)", s, name)
		}
		w, err := strconv.Atoi(strings.TrimSpace(weight))
		if err != nil || w < 0 {
			return nil, fmt.Errorf("mix %q: weight of %s must be a whole number ≥ 0", s, name)
		}
		m[k] += w
	}
	if m.total() == 0 {
		return nil, fmt.Errorf("mix %q: no weight above 0", s)
	}
	return m, nil
}

func validKind(k Kind) bool {
	for _, v := range Kinds {
		if v == k {
			return true
		}
	}
	return false
}

func (m Mix) total() int {
	n := 0
	for _, w := range m {
		n += w
	}
	return n
}

// pick maps a number in [0, total) to a kind.
func (m Mix) pick(n int) Kind {
	for _, k := range Kinds {
		if n < m[k] {
			return k
		}
		n -= m[k]
	}
	return KindWrite
}

func (m Mix) String() string {
	parts := make([]string, 0, len(m))
	for _, k := range Kinds {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Config is one load run against one target.
type Config struct {
	Target string // base URL: a sidecar's agent listener, or the baseline
	// Targets, when set, are further base URLs serving the same store (a
	// fleet of sidecars on one database); requests go round robin over
	// Target and these, one target per request.
	Targets []string
	Dialect Dialect
	Mix     Mix
	// Rate is the requests per second to offer; 0 runs closed-loop, each
	// of Concurrency workers sending its next request when the last
	// answers. With a rate, latency counts from when a request was due, so
	// a backlog shows in the percentiles (no coordinated omission).
	Rate        float64
	Concurrency int
	Duration    time.Duration
	// Warmup runs first and is not measured.
	Warmup time.Duration
	// Subjects spreads writes, reads and searches over this many subjects.
	Subjects int
	// SummaryBytes is the length of each written memory's text.
	SummaryBytes int
	Seed         uint64
	Client       *http.Client
}

func (c *Config) defaults() error {
	if c.Target == "" {
		return fmt.Errorf("load: a target URL is required")
	}
	c.Target = strings.TrimRight(c.Target, "/")
	for i, t := range c.Targets {
		c.Targets[i] = strings.TrimRight(t, "/")
	}
	if c.Dialect == "" {
		c.Dialect = Native
	}
	if c.Dialect != Native && c.Dialect != Mem0 {
		return fmt.Errorf("load: unknown dialect %q (want native or mem0)", c.Dialect)
	}
	if c.Mix == nil {
		c.Mix = Mix{KindWrite: 1}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Subjects <= 0 {
		c.Subjects = 64
	}
	if c.SummaryBytes <= 0 {
		c.SummaryBytes = 160
	}
	if c.Client == nil {
		c.Client = NewClient(c.Concurrency)
	}
	return nil
}

// NewClient returns an HTTP client that keeps a connection per worker.
func NewClient(concurrency int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: concurrency * 2, MaxIdleConnsPerHost: concurrency * 2, MaxConnsPerHost: 0,
		DisableCompression: true, IdleConnTimeout: 90 * time.Second}}
}
