package guard

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons of memgate_guard_errors_total besides the refusals (fsafe.go).
const (
	// ReasonInvalidEntry: the governor refused an entry as input (a NUL or
	// other control character, invalid UTF-8, over 16 KiB); it is undone.
	ReasonInvalidEntry = "invalid_entry"
	// ReasonSubmit: submitting an entry failed otherwise (the store down
	// or full); it is undone.
	ReasonSubmit = "submit"
	// ReasonPending: the guard could not read the file's pending writes,
	// so it could not tell a repeat from a new change; the whole change
	// is undone.
	ReasonPending = "pending_unknown"
	// ReasonJudge: judging a file failed (its state, I/O); judged again.
	ReasonJudge = "judge"
	// ReasonDecision: applying a decision to a file failed; tried again.
	ReasonDecision = "decision"
)

var errorReasons = []string{ReasonInvalidEntry, ReasonSubmit, ReasonPending, ReasonJudge, ReasonDecision,
	ReasonSymlink, ReasonNotRegular, ReasonHardLink, ReasonTooLarge, ReasonTooMany}

// Metrics are the guard's Prometheus collectors. A nil *Metrics counts
// nothing.
type Metrics struct {
	reverts    *prometheus.CounterVec
	repeats    prometheus.Counter
	writeBacks prometheus.Counter
	errors     *prometheus.CounterVec
	refused    prometheus.Gauge
	repairs    prometheus.Counter
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
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memgate_guard_errors_total",
			Help: "Failures and refusals of the Markdown guard, by reason: invalid_entry, submit and pending_unknown (the change was undone), " +
				"judge and decision (tried again), symlink, not_regular, hard_link, too_large and too_many_entries (a file refused, counted when the refusal begins)."},
			[]string{"reason"}),
		refused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memgate_guard_refused_files",
			Help: "Guarded paths the guard refuses to read or write now (a symlink, not a regular file, over a cap); their accepted content is left as it is. /readyz names them."}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{Name: "memgate_guard_repairs_total",
			Help: "Agent writes that landed while memgate rewrote a guarded file and were kept: memgate's rename undone, or the write put back on top of it; then judged."}),
		revertTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "memgate_guard_revert_seconds",
			Help:    "Time from a change to a guarded file to memgate's rewrite of it (undo of a parked or refused change).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
	}
	for _, c := range []prometheus.Collector{m.reverts, m.repeats, m.writeBacks, m.errors, m.refused, m.repairs, m.revertTime} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.reverts.WithLabelValues("parked")
	m.reverts.WithLabelValues("refused")
	for _, r := range errorReasons {
		m.errors.WithLabelValues(r)
	}
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

func (m *Metrics) onError(reason string) {
	if m != nil {
		m.errors.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) setRefused(n int) {
	if m != nil {
		m.refused.Set(float64(n))
	}
}

func (m *Metrics) onRepair() {
	if m != nil {
		m.repairs.Inc()
	}
}

func (m *Metrics) observeRevert(d time.Duration) {
	if m != nil {
		m.revertTime.Observe(d.Seconds())
	}
}
