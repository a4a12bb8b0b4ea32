package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Judge outcomes, as package judge reports them.
const (
	judgeOK      = "ok"
	judgeError   = "error"
	judgeTimeout = "timeout"
)

var (
	knownJudgeOutcomes = []string{judgeOK, judgeError, judgeTimeout}
	// A judge is a model call bounded by --judge-timeout (default 2s).
	judgeBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10}
)

// NewJudge creates the judge's metrics, registers them with reg and returns
// the hook package judge reports each request through (judge.Options
// OnResult):
//
//	memgate_judge_requests_total{outcome="ok|error|timeout"}
//	memgate_judge_duration_seconds
//
// An outcome other than the three counts as error. Register them only when
// a judge is configured.
func NewJudge(reg prometheus.Registerer) (func(outcome string, d time.Duration), error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "judge", Name: "requests_total",
		Help: "Requests to the judge model, by outcome (ok, error, timeout); on error or timeout the rules' verdict stood alone."},
		[]string{"outcome"})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "judge", Name: "duration_seconds",
		Help: "Time one request to the judge model took, failed ones included.", Buckets: judgeBuckets})
	for _, c := range []prometheus.Collector{requests, duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	outcomes := newLabelValues(judgeError, 0, knownJudgeOutcomes...)
	for _, o := range knownJudgeOutcomes {
		requests.WithLabelValues(o)
	}
	return func(outcome string, d time.Duration) {
		o := outcomes.value(outcome)
		if o == otherValue {
			o = judgeError
		}
		requests.WithLabelValues(o).Inc()
		duration.Observe(max(d, 0).Seconds())
	}, nil
}
