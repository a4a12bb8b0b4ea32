package proxy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/clip"
	"github.com/memgate/memgate/memory"
)

// What an agent's model is told about a write that did not apply, in every
// dialect (Mem0 results, MCP tool results): that it is not in memory, that
// a human decides, and how to check. One set of words, so a model reads the
// same thing whichever way it writes. A model that only sees result lists
// (OpenClaw's Mem0 plugin shows it "[<event>] <memory>" per entry) gets
// them as an entry of their own, with an event that is not ADD or UPDATE.
const (
	EventPendingReview = "PENDING_REVIEW"
	EventRefused       = "REFUSED"
)

// Change is what a write asked for, for its notice.
type Change int

const (
	ChangeWrite  Change = iota // a new memory, or a new fact over an old one
	ChangeUpdate               // an edit of a named memory
	ChangeDelete               // a deletion of a named memory
)

// maxNoticeText bounds the memory text quoted back to the model.
const maxNoticeText = 160

// PendingNotice says that a change waits for a human reviewer. memoryID
// names the memory an update or delete was about; status says how to check
// (e.g. "memory_event_status with event_id 01J…").
func PendingNotice(c Change, memoryID, text, status string) string {
	switch c {
	case ChangeUpdate:
		return fmt.Sprintf("NOT UPDATED YET: the change to memory %s (%q) waits for a human reviewer, who will approve or reject it. "+
			"Until then the memory keeps its current text. Status: %s.", memoryID, clip.Runes(text, maxNoticeText), status)
	case ChangeDelete:
		return fmt.Sprintf("NOT DELETED YET: deleting memory %s waits for a human reviewer, who will approve or reject it. "+
			"Until then the memory stays. Status: %s.", memoryID, status)
	}
	return fmt.Sprintf("NOT SAVED YET: %q waits for a human reviewer, who will approve or reject it. "+
		"Until then it is not in memory and nothing you recall has changed; do not save it again. Status: %s.", clip.Runes(text, maxNoticeText), status)
}

// RefusedNotice says that policy refused a write, with the first reason;
// never the write's text, which may hold a secret.
func RefusedNotice(rec *memory.Record) string {
	return fmt.Sprintf("NOT SAVED: policy refused it (%s). It is not in memory; do not retry the same content.", refusal(rec))
}

// rejectRules are the default policy's rules that reject, most telling
// first: a refused write's decision also lists the rules that would have
// applied it.
var rejectRules = []string{memory.RuleSecretDetected, memory.RulePIIDetected, "judge_secret", "not_a_memory"}

// refusal is why a write was refused: the reason of a rejecting rule, or
// every reason when the policy's rules are not known.
func refusal(rec *memory.Record) string {
	if rec == nil || rec.Decision == nil || len(rec.Decision.Reasons) == 0 {
		return "no reason given"
	}
	rs := rec.Decision.Reasons
	for _, id := range rejectRules {
		if i := slices.IndexFunc(rs, func(r memory.Reason) bool { return r.Rule == id }); i >= 0 {
			return rs[i].Message
		}
	}
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.Message
	}
	return strings.Join(msgs, "; ")
}

// PendingHeader introduces a list of writes of one call that wait for a
// human reviewer (the knowledge-graph tools), in PendingNotice's words.
func PendingHeader(n int, status string) string {
	return fmt.Sprintf("%d write(s) NOT SAVED YET: each waits for a human reviewer, who will approve or reject it. "+
		"Until then nothing you read has changed for them; do not write them again. Status: %s:", n, status)
}

// RefusedHeader introduces a list of writes of one call that were not made.
func RefusedHeader(n int) string {
	return fmt.Sprintf("%d write(s) NOT SAVED: they are not in memory; do not retry the same content:", n)
}

// Withheld describes a refused write in place of its text, which is never
// repeated: it may hold a secret.
const Withheld = "a refused write (its text is not repeated)"
