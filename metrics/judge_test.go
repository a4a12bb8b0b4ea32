package metrics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/memgate/memgate/metrics"
)

func TestJudgeOutcomesAndLatency(t *testing.T) {
	reg := prometheus.NewRegistry()
	onResult, err := metrics.NewJudge(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Every outcome is exported at zero before the first request.
	for _, o := range []string{"ok", "error", "timeout"} {
		if v, ok := seriesValue(t, reg, "memgate_judge_requests_total", "outcome", o); !ok || v != 0 {
			t.Fatalf("outcome %s before any request: %v (exported %v), want 0", o, v, ok)
		}
	}

	onResult("ok", 300*time.Millisecond)
	onResult("ok", 200*time.Millisecond)
	onResult("timeout", 2*time.Second)
	onResult("error", 10*time.Millisecond)
	onResult("Surprise outcome!", time.Millisecond) // counts as error
	onResult("ok", -time.Second)                    // a clock step back is not a negative latency

	for _, c := range []struct {
		outcome string
		want    float64
	}{{"ok", 3}, {"error", 2}, {"timeout", 1}} {
		if v, _ := seriesValue(t, reg, "memgate_judge_requests_total", "outcome", c.outcome); v != c.want {
			t.Errorf("requests{outcome=%q} = %v, want %v", c.outcome, v, c.want)
		}
	}
	if n := testutil.CollectAndCount(reg, "memgate_judge_requests_total"); n != 3 {
		t.Errorf("%d outcome series, want 3: unknown outcomes must not add series", n)
	}
	h := histogram(t, reg, "memgate_judge_duration_seconds")
	if h.GetSampleCount() != 6 {
		t.Errorf("duration histogram counts %d requests, want 6", h.GetSampleCount())
	}
	if got, want := h.GetSampleSum(), 2.511; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("duration sum %v, want %v", got, want)
	}

	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	var already prometheus.AlreadyRegisteredError
	if _, err := metrics.NewJudge(reg); !errors.As(err, &already) {
		t.Fatalf("second NewJudge on one registry: %v, want AlreadyRegisteredError", err)
	}
}
