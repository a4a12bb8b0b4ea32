package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/store"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p50 of 1..100", hundred, 0.50, 50 * time.Millisecond},
		{"p99 of 1..100", hundred, 0.99, 99 * time.Millisecond},
		{"p99.9 of 1..100 is the max", hundred, 0.999, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.q); got != tc.want {
				t.Fatalf("percentile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestParseMix(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"write=100", "write=100", ""},
		{"write=70, override=10,read=10,search=10", "override=10,read=10,search=10,write=70", ""},
		{"write=1,write=2", "write=3", ""},
		{"write", "", "want kind=weight"},
		{"delete=1", "", "unknown kind"},
		{"write=-1", "", "whole number"},
		{"write=0", "", "no weight"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			m, err := ParseMix(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseMix(%q) = %v, %v; want error %q", tc.in, m, err, tc.err)
				}
				return
			}
			if err != nil || m.String() != tc.want {
				t.Fatalf("ParseMix(%q) = %q, %v; want %q", tc.in, m, err, tc.want)
			}
		})
	}
	m := Mix{KindWrite: 2, KindRead: 1}
	for n, want := range []Kind{KindWrite, KindWrite, KindRead} {
		if got := m.pick(n); got != want {
			t.Errorf("pick(%d) = %s, want %s", n, got, want)
		}
	}
}

// sidecar serves the native and Mem0 dialects in process, on a durable
// Badger store with the built-in default policy: the real request path
// without the binary.
func sidecar(t *testing.T) string {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pol := policy.New(policy.Options{Logger: log})
	if err := pol.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pol.Close(context.Background()) })
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: pol, Logger: log})
	mux := http.NewServeMux()
	(&proxy.Native{Gov: gov, Log: log}).Register(mux)
	mem0.New(mem0.Options{Gov: gov, Events: mem0.NewEventLog(st), Logger: log}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRunMixOnEachDialect(t *testing.T) {
	target := sidecar(t)
	for _, d := range []Dialect{Native, Mem0} {
		t.Run(string(d), func(t *testing.T) {
			res, err := Run(context.Background(), Config{Target: target, Dialect: d, Rate: 150, Concurrency: 4,
				Duration: 800 * time.Millisecond, Warmup: 100 * time.Millisecond, Subjects: 8, Seed: 1,
				Mix: Mix{KindWrite: 4, KindOverride: 2, KindRead: 2, KindSearch: 2}})
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			res.Print(&out, "memgate")
			t.Log("\n" + out.String())
			for _, k := range Kinds {
				s := res.Kinds[k]
				// A write may be parked (the classifier parks a few
				// lists of words, as it does a few ordinary texts), never
				// fail; a tenth parked would be the gate broken.
				if s.OK == 0 || s.OK+s.Parked != s.Calls || s.Parked*10 > s.Calls {
					t.Errorf("%s: %d of %d calls succeeded, %d parked: %v", k, s.OK, s.Calls, s.Parked, s.Failed)
				}
				if s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max {
					t.Errorf("%s: percentiles out of order: %+v", k, s)
				}
			}
			// 150/s offered for 0.8 s: about 120 calls, each measured or,
			// when the target fell behind (the race detector slows it
			// down), counted as never sent.
			if n := res.All.Calls + int(res.Missed); n < 90 || n > 125 {
				t.Errorf("%d calls measured and %d missed, want about 120 in all", res.All.Calls, res.Missed)
			}
			if res.RecordBytes < 200 {
				t.Errorf("a write's answer is %d bytes: not a record", res.RecordBytes)
			}
		})
	}
}

func TestRunComparedWithBaseline(t *testing.T) {
	target := sidecar(t)
	cmp, err := RunCompared(context.Background(), CompareConfig{Rounds: 2, BaselineDir: t.TempDir(),
		Config: Config{Target: target, Rate: 100, Concurrency: 4, Duration: 400 * time.Millisecond, Subjects: 4, Seed: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmp.Print(&out)
	t.Log("\n" + out.String())
	m, b := cmp.Memgate.Kinds[KindWrite], cmp.Baseline.Kinds[KindWrite]
	// How many calls fit in the rounds depends on the machine (the race
	// detector slows it down); that every call sent succeeded does not.
	for name, s := range map[string]Stats{"memgate": m, "baseline": b} {
		if s.OK == 0 || s.OK != s.Calls {
			t.Errorf("%s: %d of %d writes succeeded over two rounds", name, s.OK, s.Calls)
		}
	}
	if cmp.P50 <= 0 || cmp.P99 <= 0 || cmp.Throughput <= 0 {
		t.Fatalf("ratios not computed: %+v", cmp)
	}
	if !strings.Contains(out.String(), "memgate/baseline") {
		t.Fatalf("report lacks the ratio line:\n%s", out.String())
	}
}

// TestOutcomesOtherThanSuccessAreCountedNotTimed: every other write the
// target fails (HTTP 500) or parks for review (HTTP 202): a failure is
// counted by its reason, a parked write apart from both, and neither is
// timed as a success; the report says how many were parked.
func TestOutcomesOtherThanSuccessAreCountedNotTimed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		check  func(s Stats) bool
	}{
		{"failed", func(w http.ResponseWriter) {
			http.Error(w, `{"error": {"code": "internal"}}`, http.StatusInternalServerError)
		}, func(s Stats) bool {
			return s.Failed["HTTP 500"] > 0 && s.Parked == 0 && s.Calls == s.OK+s.Failed["HTTP 500"]
		}},
		{"parked", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte(`{"id": "p", "status": "pending"}`))
		}, func(s Stats) bool { return s.Parked > 0 && len(s.Failed) == 0 && s.Calls == s.OK+s.Parked }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1)%2 == 0 {
					tt.answer(w)
					return
				}
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{"id": "x"}`))
			}))
			defer srv.Close()
			res, err := Run(context.Background(), Config{Target: srv.URL, Concurrency: 2, Duration: 200 * time.Millisecond, Subjects: 1})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Kinds[KindWrite]
			if s.OK == 0 || !tt.check(s) {
				t.Fatalf("write stats %+v, want about half %s", s, tt.name)
			}
			var out strings.Builder
			res.Print(&out, "memgate")
			if parked := fmt.Sprintf("parked for review (not in ok, nor in fail): %d", s.Parked); strings.Contains(out.String(), parked) != (s.Parked > 0) {
				t.Errorf("the report and the %d parked writes disagree:\n%s", s.Parked, out.String())
			}
		})
	}
}

func TestSetupFailsOnAnUnusableTarget(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Run(context.Background(), Config{Target: srv.URL, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("Run against a 404 target = %v, want a setup error naming HTTP 404", err)
	}
}

// TestRunWritePath runs the write path's figures twice (the second run
// with the baseline first) against the in-process sidecar, reading policy
// figures from a /metrics that grows by a known amount between scrapes.
func TestRunWritePath(t *testing.T) {
	target := sidecar(t)
	var scrapes atomic.Int64
	metricsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		k := scrapes.Add(1)
		// Every scrape: 100 more writes, 200 more evaluations taking 20 ms
		// in all, all of them under 1 ms.
		fmt.Fprintf(w, "# TYPE memgate_writes_total counter\nmemgate_writes_total{dialect=\"native\",action=\"apply\",risk=\"low\"} %d\n", 100*k)
		fmt.Fprintf(w, "# TYPE memgate_policy_evaluation_duration_seconds histogram\n"+
			"memgate_policy_evaluation_duration_seconds_bucket{le=\"0.0005\"} 0\n"+
			"memgate_policy_evaluation_duration_seconds_bucket{le=\"0.001\"} %d\n"+
			"memgate_policy_evaluation_duration_seconds_bucket{le=\"+Inf\"} %d\n"+
			"memgate_policy_evaluation_duration_seconds_sum %g\n"+
			"memgate_policy_evaluation_duration_seconds_count %d\n", 200*k, 200*k, 0.02*float64(k), 200*k)
	}))
	defer metricsSrv.Close()
	var progress strings.Builder
	res, err := RunWritePath(context.Background(), WritePathConfig{
		Config: Config{Target: target, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond, Subjects: 4, Seed: 3},
		Runs:   2, Writers: 3, BaselineDir: t.TempDir(), MetricsURL: metricsSrv.URL, Token: "tok"}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res.Print(&out, 3)
	t.Log("\n" + progress.String() + out.String())
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Runs))
	}
	for i, r := range append(res.Runs, res.Median) {
		if r.P50Ratio <= 0 || r.ThroughputRatio <= 0 || r.MemgateP50 <= 0 || r.BaselineThroughput <= 0 {
			t.Errorf("figures %d not computed: %+v", i, r)
		}
		if r.EvalsPerWrite != 2 || r.PolicyPerWrite != 200*time.Microsecond || r.EvalP99 != time.Millisecond {
			t.Errorf("policy figures %d: %v evaluations, %v a write, p99 ≤ %v; want 2, 200µs, 1ms", i, r.EvalsPerWrite, r.PolicyPerWrite, r.EvalP99)
		}
	}
	if !strings.Contains(out.String(), "median") {
		t.Errorf("report lacks the median:\n%s", out.String())
	}
}

func TestMedianRun(t *testing.T) {
	runs := []WritePathRun{{P50Ratio: 3, MemgateP50: time.Millisecond}, {P50Ratio: 1, MemgateP50: 3 * time.Millisecond}, {P50Ratio: 2, MemgateP50: 2 * time.Millisecond}}
	if m := medianRun(runs); m.P50Ratio != 2 || m.MemgateP50 != 2*time.Millisecond {
		t.Errorf("median of three: %+v", m)
	}
	if m := medianRun(runs[:2]); m.P50Ratio != 2 || m.MemgateP50 != 2*time.Millisecond {
		t.Errorf("median of two: %+v", m)
	}
}

func TestRetryableErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"wrapped serialization failure", fmt.Errorf("update slot: %w", &pgconn.PgError{Code: "40001"}), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"connection refused", errors.New("dial tcp: connection refused"), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryable(tc.err); got != tc.want {
				t.Fatalf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
