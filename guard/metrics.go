package guard

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the guard's Prometheus collectors. A nil *Metrics counts
// nothing.
type Metrics struct {
	reverts    *prometheus.CounterVec
	repeats    prometheus.Counter
	writeBacks prometheus.Counter
	errors     prometheus.Counter
	revertTime prometheus.Histogram
}

// NewMetrics registers the guard's collectors with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reverts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memgate_guard_reverts_total",
			Help: "Changes to guarded Markdown files memgate undid in the file, by why: parked (waits for review) or refused (policy rejected it, e.g. a secret)."}, []string{"reason"}),
		repeats: prometheus.NewCounter(prometheus.CounterOpts{Name: "memgate_guard_repeats_total",
			Help: "Times the agent wrote a change again that already waits for review; undone again, not re-announced."}),
		writeBacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "memgate_guard_write_backs_total",
			Help: "Approved changes memgate wrote back into guarded files."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "memgate_guard_errors_total",
			Help: "Failures judging a guarded file or applying a decision to it; the file is judged again."}),
		revertTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "memgate_guard_revert_seconds",
			Help:    "Time from a change to a guarded file to memgate's rewrite of it (undo of a parked or refused change).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
	}
	for _, c := range []prometheus.Collector{m.reverts, m.repeats, m.writeBacks, m.errors, m.revertTime} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.reverts.WithLabelValues("parked")
	m.reverts.WithLabelValues("refused")
	return m, nil
}

func (m *Metrics) onRevert(reason string) {
	if m != nil {
		m.reverts.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) onRepeat() {
	if m != nil {
		m.repeats.Inc()
	}
}

func (m *Metrics) onWriteBack() {
	if m != nil {
		m.writeBacks.Inc()
	}
}

func (m *Metrics) onError() {
	if m != nil {
		m.errors.Inc()
	}
}

func (m *Metrics) observeRevert(d time.Duration) {
	if m != nil {
		m.revertTime.Observe(d.Seconds())
	}
}
