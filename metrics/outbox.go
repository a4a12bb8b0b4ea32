package metrics

import "github.com/memgate/memgate/memory"

// NoticeDelivered counts a reviewer notification the outbox worker delivered.
func (m *Metrics) NoticeDelivered(kind memory.NoticeKind) {
	m.deliveries.WithLabelValues(m.noticeKinds.value(string(kind))).Inc()
}

// NoticeFailed counts a failed delivery attempt. reason should come from a
// small fixed set (e.g. "rate_limited", "server_error", "network",
// "invalid_auth"); other strings beyond a bound are counted as "other".
func (m *Metrics) NoticeFailed(reason string) {
	m.deliveryFailures.WithLabelValues(m.failureReasons.value(reason)).Inc()
}
