package proxy

import (
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
)

// TestRefusedNoticeGivesTheRejectingReason: a refusal tells the agent why
// in the words of the rule that rejected it, never the baseline's that
// would have applied it, and never the text.
func TestRefusedNoticeGivesTheRejectingReason(t *testing.T) {
	for _, rule := range []string{memory.RuleSecretDetected, memory.RulePIIDetected} {
		rec := &memory.Record{Summary: "card 4111 1111 1111 1111", Decision: &memory.Decision{Action: memory.ActionReject,
			Reasons: []memory.Reason{{Rule: "knowledge_verified", Message: "verified knowledge"}, {Rule: rule, Message: "refused for " + rule}}}}
		got := RefusedNotice(rec)
		if !strings.Contains(got, "refused for "+rule) || strings.Contains(got, "verified knowledge") || strings.Contains(got, "4111") {
			t.Errorf("%s: %q", rule, got)
		}
	}
}
