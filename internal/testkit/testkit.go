// Package testkit holds the test doubles several of memgate's packages
// use: a clock that moves only when told to (or a step at each reading),
// classifiers that decide every write alike, the decisions the tests' own
// classifiers return, a log buffer goroutines may write while the test
// reads it, a raw HTTP request, the metric names a registry exports, and
// a fake server's stalled answer (Stall). Tests only.
package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/memory"
)

// Clock is a test clock, safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	tick time.Duration
}

// NewClock returns a clock at start that moves only with Advance.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// NewTicking returns a clock at start that moves tick forward before each
// reading, so that every reading is later than the one before (ids and
// times that must differ do).
func NewTicking(start time.Time, tick time.Duration) *Clock {
	return &Clock{now: start, tick: tick}
}

// Now returns the clock's time (a ticking clock moves first).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.tick)
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Apply is a low-risk decision to apply a write, for the reason "low_risk".
func Apply() memory.Decision {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply,
		Reasons: []memory.Reason{{Rule: "low_risk", Message: "low risk"}}}
}

// Reject is a high-risk decision to refuse a write, for one reason.
func Reject(rule, message string) memory.Decision {
	return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReject,
		Reasons: []memory.Reason{{Rule: rule, Message: message}}}
}

// Review is a high-risk decision that a write waits for a human, in one
// category, for one reason; affects (none: nil) names what it would change.
func Review(category, rule, message string, affects ...string) memory.Decision {
	return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{category},
		Reasons: []memory.Reason{{Rule: rule, Message: message}}, Affects: affects}
}

// Rules is a classifier of a few of the default policy's rules: anything
// mentioning a password is rejected; policy-layer writes, deletions of
// policies and overrides of an active state's content wait for review;
// the rest applies at low risk.
func Rules(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	c := in.Candidate
	switch {
	case strings.Contains(strings.ToLower(c.Summary), "password"):
		return Reject("secret", "secrets are never remembered"), nil
	case c.Layer == memory.LayerPolicy || in.Op == memory.OpDelete && in.Current != nil && in.Current.Layer == memory.LayerPolicy:
		return Review(memory.CategoryStrategy, "strategy", "strategy constraints need a human", "publishing"), nil
	case c.Layer == memory.LayerState && in.Current != nil && !in.Current.SameContent(c):
		return Review(memory.CategoryStateOverride, "override", "overrides a key fact"), nil
	}
	return Apply(), nil
}

// ParkPolicies is a classifier that parks every policy-layer write for
// review (strategy) and applies the rest at low risk: a test parks a write
// on demand.
func ParkPolicies(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if in.Candidate.Layer == memory.LayerPolicy {
		return Review(memory.CategoryStrategy, "strategy", "strategy constraints need a human"), nil
	}
	return Apply(), nil
}

// ByFirstWord is a classifier that decides by the summary's first word:
// "apply…" applies, "reject…" is rejected, anything else waits for review;
// deletions apply. Sequences of writes (fuzzing, replay) choose each
// outcome with it.
func ByFirstWord(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	switch {
	case in.Op == memory.OpDelete, strings.HasPrefix(in.Candidate.Summary, "apply"):
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	case strings.HasPrefix(in.Candidate.Summary, "reject"):
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReject}, nil
	}
	return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview}, nil
}

// ApplyAll is a classifier that applies every write at low risk.
var ApplyAll memory.Classifier = memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply, Categories: []string{},
		Reasons: []memory.Reason{{Rule: "low_risk", Message: "low risk"}}}, nil
})

// Notices returns the notices in s's outbox, in its order.
func Notices(t testing.TB, s memory.Store) []*memory.Notice {
	t.Helper()
	var out []*memory.Notice
	err := s.View(context.Background(), func(tx memory.ReadTx) error {
		return tx.ScanNotices(func(n *memory.Notice) bool { out = append(out, n); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AsJSON is v as a client decodes it: marshalled, then unmarshalled into
// maps, slices and float64s.
func AsJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// MetricNames gathers g and returns the names of its metric families, in
// Gather's order (sorted).
func MetricNames(t testing.TB, g prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}

// Eventually waits (at most 10s, looking every 5ms) until cond holds, and
// fails the test if it does not; what names the wait in the failure.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stall holds a fake server's answer to r for d, as a slow model or API
// would; it reports false when the client gave up first.
func Stall(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent use: a log sink or a
// child process's output that goroutines write while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Send makes one request with http.DefaultClient: body ("" for none) and
// header pairs ("Host" sets the request's Host). It returns the status, the
// whole body and the header; a request that fails, or a body that cannot be
// read, fails t.
func Send(t testing.TB, method, url, body string, header ...string) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp.StatusCode, b, resp.Header
}
