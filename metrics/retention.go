package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Retention is the metrics of the retention pass (memory.RetentionPass):
//
//	memgate_retention_purged_total              versions whose text retention removed
//	memgate_retention_expired_total             memories that left the active layer at their expiry
//	memgate_retention_last_run_timestamp_seconds when the last round finished (0: none yet)
//	memgate_retention_behind                    what was due and left for the next round by the last round's bound
//	memgate_retention_failures_total            rounds that failed
//
// A pass that falls behind shows as behind above 0 round after round, or
// a last run that grows old.
type Retention struct {
	purged, expired, failures prometheus.Counter
	lastRun, behind           prometheus.Gauge
}

// NewRetention creates the retention metrics and registers them with reg.
func NewRetention(reg prometheus.Registerer) (*Retention, error) {
	r := &Retention{
		purged: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "retention", Name: "purged_total",
			Help: "Superseded, rejected and rolled-back versions whose text the retention pass removed (ids, times, decisions and a salted hash stay)."}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "retention", Name: "expired_total",
			Help: "Active memories that left the active layer at their expiry (Mem0 expiration_date)."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "retention", Name: "failures_total",
			Help: "Retention rounds that failed; the next round tries again."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "retention", Name: "last_run_timestamp_seconds",
			Help: "Unix time the last retention round finished; 0 before the first."}),
		behind: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "retention", Name: "behind",
			Help: "Versions and expiries that were due in the last round and left for the next by its bound."}),
	}
	for _, c := range []prometheus.Collector{r.purged, r.expired, r.failures, r.lastRun, r.behind} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return r, nil
}

// Round records a finished round.
func (r *Retention) Round(purged, expired, behind int, at time.Time) {
	r.purged.Add(float64(purged))
	r.expired.Add(float64(expired))
	r.behind.Set(float64(behind))
	r.lastRun.Set(float64(at.UnixNano()) / 1e9)
}

// Failed records a failed round.
func (r *Retention) Failed() { r.failures.Inc() }
