package embed

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the embedder's Prometheus collectors. A nil *Metrics records
// nothing, so every method is safe on it.
//
//	memgate_embed_queue_depth                  changes waiting for the worker
//	memgate_embed_vectors                      vectors held in memory
//	memgate_embed_requests_total{outcome}      requests to the endpoint: ok, error, timeout
//	memgate_embed_request_seconds              time one request took, failed ones included
//	memgate_embed_reconciles_total             full passes over the active records (at start,
//	                                           and after the queue overflowed or a batch was given up)
type Metrics struct {
	queueDepth prometheus.Gauge
	vectors    prometheus.Gauge
	requests   *prometheus.CounterVec
	seconds    prometheus.Histogram
	reconciles prometheus.Counter
}

// A request is bounded by ClientOptions.Timeout (default 10s); a local model
// answers a batch in tens of milliseconds, a remote one in hundreds.
var requestBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// NewMetrics creates the collectors and registers them with reg. Register
// them only when embeddings are configured.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns, sub = "memgate", "embed"
	m := &Metrics{
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "queue_depth",
			Help: "Record changes waiting to be embedded or removed."}),
		vectors: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "vectors",
			Help: "Record vectors held in memory for semantic search."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "requests_total",
			Help: "Requests to the embeddings endpoint, by outcome (ok, error, timeout)."}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "request_seconds",
			Help: "Time one request to the embeddings endpoint took, failed ones included.", Buckets: requestBuckets}),
		reconciles: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "reconciles_total",
			Help: "Passes over all active records to embed the missing and drop the stale vectors (at start, after a queue overflow or a failed batch)."}),
	}
	for _, c := range []prometheus.Collector{m.queueDepth, m.vectors, m.requests, m.seconds, m.reconciles} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("embed: register metrics: %w", err)
		}
	}
	for _, o := range []string{OutcomeOK, OutcomeError, OutcomeTimeout} {
		m.requests.WithLabelValues(o)
	}
	return m, nil
}

func (m *Metrics) request(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(outcome).Inc()
	m.seconds.Observe(max(d, 0).Seconds())
}

func (m *Metrics) setQueueDepth(n int) {
	if m != nil {
		m.queueDepth.Set(float64(n))
	}
}

func (m *Metrics) setVectors(n int) {
	if m != nil {
		m.vectors.Set(float64(n))
	}
}

func (m *Metrics) reconciled() {
	if m != nil {
		m.reconciles.Inc()
	}
}
