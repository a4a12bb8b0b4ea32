package metrics

import (
	"time"

	"github.com/memgate/memgate/memory"
)

// Write counts a decided write (memory.Observer).
func (m *Metrics) Write(dialect string, action memory.Action, risk memory.Risk) {
	m.writes.WithLabelValues(m.dialects.value(dialect), m.actions.value(string(action)), m.risks.value(string(risk))).Inc()
}

// Conflict counts a conflicting write (memory.Observer).
func (m *Metrics) Conflict(kind string) {
	m.conflicts.WithLabelValues(m.kinds.value(kind)).Inc()
}

// RolledBack counts a rollback of n versions with its reason
// (memory.Observer). The reason label is a code taken from the reason text
// (see reasonCode): operators who start reasons with "code:" get them
// counted apart.
func (m *Metrics) RolledBack(scope, reason string, n int) {
	scope = m.scopes.value(scope)
	m.rollbacks.WithLabelValues(scope, m.rollbackReasons.value(reasonCode(reason))).Inc()
	if n > 0 {
		m.rolledBackRecords.WithLabelValues(scope).Add(float64(n))
	}
}

// Stale counts an approval refused as stale (memory.Observer).
func (m *Metrics) Stale() { m.staleApprovals.Inc() }

// ReviewDecided counts a review decision and how long the write waited
// (memory.Observer).
func (m *Metrics) ReviewDecided(outcome, route string, waited time.Duration) {
	outcome = m.outcomes.value(outcome)
	m.reviewDecisions.WithLabelValues(outcome, m.routes.value(route)).Inc()
	m.reviewWait.WithLabelValues(outcome).Observe(max(waited, 0).Seconds())
}
