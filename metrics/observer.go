package metrics

import (
	"slices"
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

var _ memory.FactObserver = (*Metrics)(nil)

// FactMatched counts a free-text write the fact matcher matched with an
// active memory (memory.FactObserver). Kinds are memory's fixed set.
func (m *Metrics) FactMatched(kind memory.MatchKind) {
	m.factMatches.WithLabelValues(string(kind)).Inc()
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

// Shadowed counts a write whose park or rejection was not enforced, once
// per rule that asked for it (memory.Observer).
func (m *Metrics) Shadowed(would memory.Action, rules []string) {
	w := string(would)
	if !slices.Contains(knownWould, w) {
		w = "unknown"
	}
	for _, r := range rules {
		m.shadowDecisions.WithLabelValues(w, m.shadowRules.value(r)).Inc()
	}
}

// PolicyMode sets the mode gauge: 1 for mode, 0 for the others
// (memory.Observer).
func (m *Metrics) PolicyMode(mode memory.PolicyMode) {
	m.policyModeMu.Lock()
	defer m.policyModeMu.Unlock()
	for _, k := range memory.PolicyModes {
		v := 0.0
		if k == mode {
			v = 1
		}
		m.policyMode.WithLabelValues(string(k)).Set(v)
	}
}
