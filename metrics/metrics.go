// Package metrics exports memgate's Prometheus metrics: what the governor
// did (it implements memory.Observer), what the policy engine reports
// through its hooks, and, read on each scrape, the review queue, the outbox
// and the store's disk usage; the HTTP requests each listener answers
// (http.go) and the build (build.go). Delivery counters of the outbox
// worker live with it in package notify (memgate_notify_*).
//
// Every metric is named memgate_<subsystem>_<name> in base units, counters end
// in _total, and labels fed from caller-supplied strings take a bounded set
// of values. Nothing registers itself with a global registry: the caller
// passes a prometheus.Registerer.
package metrics

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/memory"
)

// Namespace prefixes every metric memgate exports.
const Namespace = "memgate"

// Bucket layouts. Policy evaluation targets p50 ≤ 20 µs and p99 ≤ 100 µs
// (DESIGN §7) with a 250 ms timeout; review waits run from minutes to days.
var (
	policyEvalBuckets   = []float64{5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 5e-3, 25e-3, 100e-3, 250e-3, 1}
	reviewWaitBuckets   = []float64{60, 300, 900, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 24 * 3600, 2 * 24 * 3600, 7 * 24 * 3600}
	knownActions        = []string{string(memory.ActionApply), string(memory.ActionReview), string(memory.ActionReject)}
	knownRisks          = []string{string(memory.RiskLow), string(memory.RiskMedium), string(memory.RiskHigh)}
	knownConflictKinds  = []string{memory.ConflictOverrideParked, memory.ConflictOverrideApplied, memory.ConflictPendingPending}
	knownScopes         = []string{memory.ScopeRecord, memory.ScopeCascade, memory.ScopeQuarantine, memory.ScopeRestore}
	knownOutcomes       = []string{memory.OutcomeApproved, memory.OutcomeRejected}
	knownRoutes         = []string{"slack", "admin", "cli"}
	knownDialects       = []string{"native", "mem0", "mcp"}
	knownPolicyErrors   = []string{policyErrTimeout, policyErrEval}
	knownReloadResults  = []string{reloadSuccess, reloadFailure}
	knownWould          = []string{string(memory.ActionReview), string(memory.ActionReject)}
	rollbackReasonUnset = "unspecified"
)

// Metrics holds the event-driven metrics. It is safe for concurrent use.
type Metrics struct {
	writes            *prometheus.CounterVec
	conflicts         *prometheus.CounterVec
	factMatches       *prometheus.CounterVec
	rollbacks         *prometheus.CounterVec
	rolledBackRecords *prometheus.CounterVec
	staleApprovals    prometheus.Counter
	reviewDecisions   *prometheus.CounterVec
	reviewWait        *prometheus.HistogramVec
	policyEval        prometheus.Histogram
	policyErrors      *prometheus.CounterVec
	policyReloads     *prometheus.CounterVec
	policyRevision    *prometheus.GaugeVec
	shadowDecisions   *prometheus.CounterVec
	policyMode        *prometheus.GaugeVec

	revisionMu   sync.Mutex // orders Reset+Set of the revision gauge
	policyModeMu sync.Mutex // so the two series of a switch are set together

	policyErrorReason func(error) string

	// Bounded label values for strings callers choose.
	dialects        *labelValues
	routes          *labelValues
	rollbackReasons *labelValues
	policyReasons   *labelValues
	actions         *labelValues
	risks           *labelValues
	kinds           *labelValues
	scopes          *labelValues
	outcomes        *labelValues
	shadowRules     *labelValues
}

var _ memory.Observer = (*Metrics)(nil)

// Option configures Metrics.
type Option func(*Metrics)

// WithPolicyErrorReason names the reason label of a failed policy
// evaluation, e.g. with policy.ErrorReason (undefined, multiple_results,
// malformed, timeout, canceled, eval_error). The default tells only
// timeout, canceled and eval_error apart. Values are bounded like every
// caller-chosen label.
func WithPolicyErrorReason(reason func(error) string) Option {
	return func(m *Metrics) { m.policyErrorReason = reason }
}

// New creates memgate's event metrics and registers them with reg. Go and
// process collectors are the caller's to register.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	m := &Metrics{
		policyErrorReason: defaultPolicyErrorReason,
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "writes_total",
			Help: "Memory writes decided, by dialect, policy action and risk level."},
			[]string{"dialect", "action", "risk"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "conflicts_total",
			Help: "Conflicting writes by kind: an override parked for review, an override applied by policy, or a write parked beside another pending write to the same slot."},
			[]string{"kind"}),
		factMatches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "fact_matches_total",
			Help: "Free-text writes matched with an active memory of their subject: a repeat (a no-op), an update (sent to the memory's slot, where policy decides it as an override), or a possible conflict (kept apart and named)."},
			[]string{"kind"}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rollbacks_total",
			Help: "Rollback operations by scope (record, cascade, quarantine, restore) and reason code."},
			[]string{"scope", "reason"}),
		rolledBackRecords: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rolled_back_records_total",
			Help: "Memory versions undone by rollbacks, by scope."},
			[]string{"scope"}),
		staleApprovals: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "stale_approvals_total",
			Help: "Approvals refused because the slot changed while the write waited for review."}),
		reviewDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "review", Name: "decisions_total",
			Help: "Review decisions on parked writes, by outcome and the route they came through (slack, admin, cli)."},
			[]string{"outcome", "route"}),
		reviewWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "review", Name: "wait_seconds",
			Help: "Time from parking a write to its review decision, by outcome.", Buckets: reviewWaitBuckets},
			[]string{"outcome"}),
		policyEval: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "policy", Name: "evaluation_duration_seconds",
			Help: "Time one policy evaluation took, failed ones included.", Buckets: policyEvalBuckets}),
		policyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "policy", Name: "evaluation_errors_total",
			Help: "Policy evaluations that failed, by reason (timeout, canceled, eval_error, ...); each failed write was parked."},
			[]string{"reason"}),
		policyReloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "policy", Name: "reloads_total",
			Help: "Policy loads and reloads by result; a failed reload keeps the previous policy."},
			[]string{"result"}),
		policyRevision: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "policy", Name: "revision_info",
			Help: "The active policy's revision (content hash), as a label on a gauge that is always 1."},
			[]string{"revision"}),
		shadowDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "shadow_decisions_total",
			Help: "Writes policy would have parked (would=review) or rejected (would=reject) that were applied instead, because memgate runs in shadow mode or the rule is shadowed in the policy's data; one count per rule that asked for it."},
			[]string{"would", "rule"}),
		policyMode: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "policy", Name: "mode",
			Help: "The mode policy decisions are taken in: 1 for the current mode (enforce or shadow), 0 for the other."},
			[]string{"mode"}),

		dialects:        newLabelValues("unknown", 16, knownDialects...),
		routes:          newLabelValues("unknown", 8, knownRoutes...),
		rollbackReasons: newLabelValues(rollbackReasonUnset, 32),
		policyReasons:   newLabelValues(policyErrEval, 8, policyErrTimeout, policyErrCanceled, policyErrEval),
		actions:         newLabelValues("unknown", 0, knownActions...),
		risks:           newLabelValues("unknown", 0, knownRisks...),
		kinds:           newLabelValues("unknown", 0, knownConflictKinds...),
		scopes:          newLabelValues("unknown", 0, knownScopes...),
		outcomes:        newLabelValues("unknown", 0, knownOutcomes...),
		// Rule ids come from the policy: the default has 25; room for an
		// operator's own, and "other" past them.
		shadowRules: newLabelValues("unknown", 64),
	}
	for _, o := range opts {
		o(m)
	}
	for _, c := range []prometheus.Collector{m.writes, m.conflicts, m.factMatches, m.rollbacks, m.rolledBackRecords, m.staleApprovals,
		m.reviewDecisions, m.reviewWait, m.policyEval, m.policyErrors, m.policyReloads, m.policyRevision,
		m.shadowDecisions, m.policyMode} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	m.initialize()
	return m, nil
}

// initialize creates the series of known label values at zero, so that the
// first event is an increase Prometheus can see (increase() and rate() miss
// the first sample of a series that appears already at 1).
func (m *Metrics) initialize() {
	for _, k := range knownConflictKinds {
		m.conflicts.WithLabelValues(k)
	}
	for _, k := range memory.MatchKinds {
		m.factMatches.WithLabelValues(string(k))
	}
	for _, s := range knownScopes {
		m.rolledBackRecords.WithLabelValues(s)
		m.rollbacks.WithLabelValues(s, rollbackReasonUnset)
	}
	for _, o := range knownOutcomes {
		for _, r := range knownRoutes {
			m.reviewDecisions.WithLabelValues(o, r)
		}
		m.reviewWait.WithLabelValues(o)
	}
	for _, r := range knownPolicyErrors {
		m.policyErrors.WithLabelValues(r)
	}
	for _, r := range knownReloadResults {
		m.policyReloads.WithLabelValues(r)
	}
	m.PolicyMode(memory.PolicyEnforce)
}
