package notify

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what the outbox delivers, retries and drops. A nil
// *Metrics counts nothing. The outbox's depth and oldest age are read at
// scrape time by package metrics (memgate_outbox_*).
type Metrics struct {
	delivered *prometheus.CounterVec
	retried   *prometheus.CounterVec
	dropped   *prometheus.CounterVec
}

// NewMetrics registers the outbox metrics with reg (nil: not registered,
// still counted, which tests use).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_notify_delivered_total",
			Help: "Notices delivered to reviewers, by kind.",
		}, []string{"kind"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_notify_retries_total",
			Help: "Deliveries that failed and were rescheduled, by reason (rate_limited, server_error, network, config: the integration's token or channel is wrong, ...).",
		}, []string{"reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_notify_dropped_total",
			Help: "Notices dropped because the service can never take them (e.g. too long), by reason; never for a settings error.",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.delivered, m.retried, m.dropped)
	}
	return m
}

func (m *Metrics) onDelivered(kind string, n int) {
	if m != nil {
		m.delivered.WithLabelValues(kind).Add(float64(n))
	}
}

func (m *Metrics) onRetry(reason string) {
	if m != nil {
		m.retried.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) onDropped(reason string, n int) {
	if m != nil {
		m.dropped.WithLabelValues(reason).Add(float64(n))
	}
}

// Dropped returns the counter of notices dropped for reason (for tests and
// dashboards built in code).
func (m *Metrics) Dropped(reason string) prometheus.Counter {
	return m.dropped.WithLabelValues(reason)
}

// Retries returns the counter of deliveries rescheduled for reason.
func (m *Metrics) Retries(reason string) prometheus.Counter {
	return m.retried.WithLabelValues(reason)
}
