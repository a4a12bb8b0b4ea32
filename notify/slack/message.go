package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/memgate/memgate/memory"
)

// Interaction ids: the buttons of a review message and the reject modal.
const (
	ActionApprove   = "memgate_approve"        // approve, override mode
	ActionAppend    = "memgate_approve_append" // approve as append
	ActionReject    = "memgate_reject"         // opens the reject modal
	actionsBlockID  = "memgate_review_actions"
	rejectCallback  = "memgate_reject_modal"
	reasonBlockID   = "memgate_reason"
	reasonActionID  = "memgate_reason_input"
	maxReasonLength = 2000
)

// reviewView is everything a review message shows, gathered from the
// governor's Review and Explain.
type reviewView struct {
	Record      *memory.Record
	Current     *memory.Record        // the slot's active version now (pending: what approval replaces)
	Replaced    *memory.Record        // applied: what it replaced
	Point       *memory.RollbackPoint // applied: the rollback point taken before it
	Conflicting []string              // other pending writes to the same slot
	Stale       bool                  // the slot changed since it was parked
	Rules       []memory.Reason       // policy rules that fired
	Now         time.Time             // for how long it waits
}

// reviewMessage builds the message for one parked write. It answers the
// five questions (who, old vs new, evidence, affects, rollback point) plus
// risk, categories and rules, and the id for the CLI; while the write is
// pending it carries the decision buttons, afterwards the outcome.
func reviewMessage(v reviewView) (fallback string, blocks []slack.Block) {
	r := v.Record
	pending := r.Status == memory.StatusPending
	blocks = append(blocks, slack.NewHeaderBlock(plainText(headline(r), maxHeaderText)))
	if !pending && r.Review != nil {
		blocks = append(blocks, section(outcomeText(r)))
	}
	blocks = append(blocks,
		section(bound(fmt.Sprintf("*Subject* %s · *fact* %s · *layer* %s · *source* %s\n*Risk* %s · *categories* %s",
			code(r.SubjectID), orNone(r.FactType, "_none: a memory of its own_"), code(string(r.Layer)),
			code(string(r.CandidateSource)), riskText(r.RiskLevel), listOrNone(r.Categories)), maxSectionText)),
		section(bound("*Who triggered it*\n"+actorText(r.Actor), maxSectionText)),
		slack.NewSectionBlock(nil, []*slack.TextBlockObject{
			mrkdwn(bound(versionField(oldLabel(r), oldVersion(v)), maxFieldText)),
			mrkdwn(bound(versionField(newLabel(r), r), maxFieldText)),
		}, nil),
		section("*Evidence*\n"+evidenceText(r.Evidence)),
		section("*Affects*\n"+bulletsOrNone(r.Affects, "_no behaviour named by policy_")),
		section("*Rollback point*\n"+rollbackText(v)),
		section("*Rules that fired*\n"+rulesText(v.Rules, r.Decision)),
	)
	if warn := warnings(v); warn != "" {
		blocks = append(blocks, contextBlock(warn))
	}
	blocks = append(blocks, contextBlock(bound(fmt.Sprintf("id %s · %s · %s · %s", code(r.ID),
		code("sidecar review show "+r.ID), code("sidecar review approve "+r.ID), code("sidecar explain "+r.ID)), maxContextText)))
	if pending {
		blocks = append(blocks, actions(r))
	}
	return plainClip(fallbackText(r), maxFallback), blocks
}

func headline(r *memory.Record) string {
	what := r.SubjectID
	if r.FactType != "" {
		what += " / " + r.FactType
	}
	switch {
	case r.Status == memory.StatusPending:
		return fmt.Sprintf("Review: %s %s write (%s risk)", what, r.Layer, r.RiskLevel)
	case r.Review != nil && r.Review.Outcome == memory.OutcomeApproved:
		return "Approved: " + what
	case r.Review != nil:
		return "Rejected: " + what
	}
	return fmt.Sprintf("%s: %s", r.Status, what)
}

func fallbackText(r *memory.Record) string {
	if r.Status == memory.StatusPending {
		return fmt.Sprintf("Memory write waiting for review (%s risk): %s", r.RiskLevel, oneLine(r.Summary))
	}
	return headline(r) + ": " + oneLine(r.Summary)
}

// outcomeText says who decided, how and when; it replaces the buttons.
func outcomeText(r *memory.Record) string {
	rv := r.Review
	mark, verb := ":white_check_mark:", "Approved"
	if rv.Outcome == memory.OutcomeRejected {
		mark, verb = ":x:", "Rejected"
	} else if rv.Mode == memory.ModeAppend {
		verb = "Approved as append"
	} else {
		verb = "Approved (override)"
	}
	s := fmt.Sprintf("%s *%s* by %s", mark, verb, userRef(rv.By, rv.Route))
	if rv.Route != "" {
		s += " via " + clip(rv.Route, 40)
	}
	s += " at " + slackDate(rv.At)
	if rv.Note != "" {
		s += "\n*Note* " + clip(rv.Note, max(maxSectionText-slackLen(s)-20, 100))
	}
	return bound(s, maxSectionText)
}

func riskText(r memory.Risk) string {
	switch r {
	case memory.RiskHigh:
		return ":red_circle: *high*"
	case memory.RiskMedium:
		return ":large_orange_circle: *medium*"
	case memory.RiskLow:
		return ":large_green_circle: low"
	}
	return "_unknown_"
}

func actorText(a memory.Actor) string {
	var parts []string
	for _, f := range []struct{ label, v string }{
		{"agent", a.AgentID}, {"user", a.UserID}, {"run", a.RunID}, {"session", a.SessionID},
		{"dialect", a.Dialect}, {"client", a.Client}, {"from", a.RemoteAddr},
	} {
		if f.v != "" {
			parts = append(parts, f.label+" "+code(f.v))
		}
	}
	if len(parts) == 0 {
		return "_not stated by the writer_"
	}
	return strings.Join(parts, " · ")
}

// oldVersion is what the old side shows: for a pending write the slot's
// active version now, for an applied one what it replaced.
func oldVersion(v reviewView) *memory.Record {
	if v.Record.Status == memory.StatusPending || v.Record.Review == nil || v.Record.Review.Outcome == memory.OutcomeRejected {
		return v.Current
	}
	return v.Replaced
}

func oldLabel(r *memory.Record) string {
	if r.Status == memory.StatusPending || r.Review == nil || r.Review.Outcome == memory.OutcomeRejected {
		return "Active now"
	}
	return "Replaced"
}

func newLabel(r *memory.Record) string {
	if r.Op == memory.OpDelete {
		return "Proposed: delete the active version"
	}
	return "Proposed"
}

// Budgets inside one field (2000 characters): the label line, the summary
// and a structured value.
const (
	maxSummaryInField = 1500
	maxValueInField   = 300
)

func versionField(label string, r *memory.Record) string {
	if r == nil {
		return "*" + label + "*\n_nothing: the slot has no active version_"
	}
	s := fmt.Sprintf("*%s* %s\n%s", label, code(r.ID), clip(orDefault(r.Summary, "(no summary)"), maxSummaryInField))
	if len(r.Value) > 0 {
		s += "\n*value* " + clip(oneLine(string(r.Value)), maxValueInField)
	}
	return s
}

func evidenceText(e memory.Evidence) string {
	if e.Excerpt == "" && e.SourceRef == "" {
		return "_none given by the writer_"
	}
	var s string
	if e.Excerpt != "" {
		s = clip(e.Excerpt, 2400)
	}
	if e.SourceRef != "" {
		if s != "" {
			s += "\n"
		}
		s += "_source_ " + clip(e.SourceRef, 400)
	}
	return s
}

func rollbackText(v reviewView) string {
	r := v.Record
	switch {
	case r.Status == memory.StatusPending && r.Layer.AllowsAppend() && r.Op != memory.OpDelete:
		return fmt.Sprintf("Approving takes rollback point %s first; rolling back then restores %s. Approved as append it replaces nothing.",
			code(memory.RollbackPointID(r.ID)), restoreTarget(r.ExpectedHead))
	case r.Status == memory.StatusPending:
		return fmt.Sprintf("Approving takes rollback point %s first; rolling back then restores %s.",
			code(memory.RollbackPointID(r.ID)), restoreTarget(r.ExpectedHead))
	case v.Point != nil:
		return fmt.Sprintf("%s restores %s. Undo with %s.", code(v.Point.ID), restoreTarget(v.Point.Replaced),
			code("sidecar rollback "+r.ID))
	}
	return "_none: nothing was applied_"
}

func restoreTarget(id string) string {
	if id == "" {
		return "the empty slot"
	}
	return "version " + code(id)
}

// maxRulesText keeps the rules section within its block.
const maxRulesText = maxSectionText - 40

func rulesText(rules []memory.Reason, d *memory.Decision) string {
	lines := make([]string, len(rules))
	for i, r := range rules {
		lines[i] = "• " + code(r.Rule)
		if r.Message != "" {
			lines[i] += " " + clip(oneLine(r.Message), 300)
		}
	}
	var b strings.Builder
	b.WriteString(joinBounded(lines, maxRulesText-30))
	if b.Len() == 0 {
		b.WriteString("_none reported_")
	}
	if d != nil && d.Revision != "" {
		b.WriteString("\n_policy revision_ " + code(plainClip(d.Revision, 16)))
	}
	return b.String()
}

func warnings(v reviewView) string {
	r := v.Record
	var w []string
	if r.Status != memory.StatusPending {
		return ""
	}
	if v.Stale {
		w = append(w, ":warning: The slot changed since this was parked: an approval will be refused as stale and the write re-evaluated.")
	}
	if len(v.Conflicting) > 0 {
		ids := make([]string, 0, len(v.Conflicting))
		for _, id := range v.Conflicting[:min(len(v.Conflicting), 10)] {
			ids = append(ids, code(id))
		}
		s := ":twisted_rightwards_arrows: Conflicts with other pending writes to this slot: " + strings.Join(ids, ", ")
		if len(v.Conflicting) > 10 {
			s += fmt.Sprintf(" and %d more", len(v.Conflicting)-10)
		}
		w = append(w, s+". Approving one makes the others stale.")
	}
	if r.Decision != nil && r.Decision.PolicyError != "" {
		w = append(w, ":rotating_light: Policy could not be evaluated, so the write was parked: "+clip(r.Decision.PolicyError, 300))
	}
	if !v.Now.IsZero() {
		w = append(w, fmt.Sprintf(":hourglass_flowing_sand: waiting since %s", slackDate(r.CreatedAt)))
	}
	return bound(strings.Join(w, "\n"), maxContextText)
}

// button is what a review button carries: the record and the parked
// version (memory.Record.ParkVersion) the message showed, so a decision
// applies only to that version. A replayed or outdated click on a write
// that was re-parked since is refused (see Service.version).
type button struct {
	ID      string `json:"id"`
	Version string `json:"v"`
}

func buttonValue(r *memory.Record) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // ids are short; \u003c would triple them
	_ = enc.Encode(button{ID: r.ID, Version: r.ParkVersion()})
	return strings.TrimSuffix(b.String(), "\n")
}

// parseButton reads a button's value. A value that is not a JSON object is
// a bare record id: a button from a memgate before versions, which has
// none.
func parseButton(v string) button {
	var b button
	if strings.HasPrefix(v, "{") && json.Unmarshal([]byte(v), &b) == nil && b.ID != "" {
		return b
	}
	return button{ID: v}
}

func actions(r *memory.Record) slack.Block {
	value := buttonValue(r)
	approve := slack.NewButtonBlockElement(ActionApprove, value, plainText("Approve (override)", maxButtonText))
	approve.Style = slack.StylePrimary
	elems := []slack.BlockElement{approve}
	if r.Layer.AllowsAppend() && r.Op != memory.OpDelete {
		elems = append(elems, slack.NewButtonBlockElement(ActionAppend, value, plainText("Approve as append", maxButtonText)))
	}
	reject := slack.NewButtonBlockElement(ActionReject, value, plainText("Reject…", maxButtonText))
	reject.Style = slack.StyleDanger
	elems = append(elems, reject)
	return slack.NewActionBlock(actionsBlockID, elems...)
}

// rejectModal asks for an optional reason; private metadata carries the
// record id, the parked version the clicked message showed and the channel
// to answer in (rejectMetadata).
func rejectModal(r *memory.Record, metadata string) slack.ModalViewRequest {
	input := slack.NewPlainTextInputBlockElement(plainText("Why is it wrong? (optional)", maxPlaceholder), reasonActionID)
	input.Multiline = true
	input.MaxLength = maxReasonLength
	reason := slack.NewInputBlock(reasonBlockID, plainText("Reason", maxLabelText), nil, input)
	reason.Optional = true
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plainText("Reject memory write", maxModalTitle),
		Submit:          plainText("Reject", maxModalTitle),
		Close:           plainText("Cancel", maxModalTitle),
		CallbackID:      rejectCallback,
		PrivateMetadata: metadata,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			section(fmt.Sprintf("Reject %s (%s / %s):\n%s", code(r.ID), code(plainClip(r.SubjectID, 200)),
				orNone(plainClip(r.FactType, 200), "-"), clip(r.Summary, 800))),
			reason,
		}},
	}
}

// section, contextBlock and plainText bound their text to Slack's limit
// whatever their callers did, so no block memgate sends is refused (and its
// message lost) for a long memory, reason or name.
func section(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwn(bound(text, maxSectionText)), nil, nil)
}

func contextBlock(text string) *slack.ContextBlock {
	return slack.NewContextBlock("", mrkdwn(bound(text, maxContextText)))
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func plainText(s string, limit int) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, plainClip(s, limit), true, false)
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return code(s)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "_none_"
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = code(x)
	}
	return bound(strings.Join(out, ", "), 1000)
}

// joinBounded joins lines with newlines while the text stays within limit
// (in Slack's length), then says how many lines were left out.
func joinBounded(lines []string, limit int) string {
	var b strings.Builder
	for i, line := range lines {
		if slackLen(b.String())+slackLen(line)+1 > limit {
			fmt.Fprintf(&b, "… and %d more", len(lines)-i)
			break
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(line)
	}
	return b.String()
}

func bulletsOrNone(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	lines := make([]string, len(xs))
	for i, x := range xs {
		lines[i] = "• " + clip(oneLine(x), 300)
	}
	return joinBounded(lines, maxSectionText-60)
}
