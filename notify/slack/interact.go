package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/memgate/memgate/memory"
)

// rejectMetadata travels in the reject modal's private metadata: the
// record, the parked version the clicked message showed, and the channel to
// answer in.
type rejectMetadata struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
	Channel string `json:"channel"`
}

// interact handles one interaction, from Socket Mode or the signed HTTP
// endpoint alike. Decisions go through the governor exactly as the CLI's
// do, so its rules hold: approval is a compare-and-swap (stale → the
// clicker is told and the item re-evaluated) and a write is decided once (a
// double click or a replayed callback gets "already decided"). Outcomes
// reach the message through the outbox's decided notice, the same path a
// CLI decision takes; refusals are answered with an ephemeral message only
// the clicker sees.
//
// A decision is bound to the parked version the clicked message showed
// (the button's value, then the reject modal's metadata): when the write
// was re-parked since (an approval found the slot changed), a replayed or
// outdated click is refused inside the governor's transaction and nothing
// changes; the current message carries the new version.
func (s *Service) interact(ctx context.Context, cb slack.InteractionCallback) {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		for _, a := range cb.ActionCallback.BlockActions {
			s.action(ctx, cb, a)
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID == rejectCallback {
			s.rejectSubmitted(ctx, cb)
		}
	default:
		s.log.Debug("slack interaction ignored", "type", cb.Type)
	}
}

func (s *Service) action(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) {
	var mode memory.ReviewMode
	switch a.ActionID {
	case ActionApprove:
		mode = memory.ModeOverride
	case ActionAppend:
		mode = memory.ModeAppend
	case ActionReject:
	default:
		return // not ours
	}
	btn := parseButton(a.Value)
	channel, user, id := cb.Channel.ID, cb.User.ID, btn.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	if !s.mayDecide(ctx, channel, user, id, a.ActionID) {
		return
	}
	version, ok := s.version(ctx, channel, user, btn, a.ActionID)
	if !ok {
		return
	}
	if a.ActionID == ActionReject {
		s.openReject(ctx, cb.TriggerID, channel, user, id, version)
		return
	}
	_, err := s.gov.Approve(ctx, id, memory.Review{By: user, Route: routeSlack, Mode: mode, Version: version})
	s.log.Info("slack decision", "record", id, "by", user, "action", "approve", "mode", mode, "version", version, "result", resultOf(err))
	s.metrics.interaction(a.ActionID, resultOf(err))
	s.answer(ctx, channel, user, id, err)
}

// version returns the parked version a decision is bound to. A button
// carries the version its message showed. One without comes from a message
// posted by a memgate before versions; it is taken to mean the version the
// write was first parked as, and refused when the write has been re-parked
// at all (the count on the record, or a stale event in its history for
// re-parks before versions were counted); then the message is re-rendered
// so its buttons carry the current version. Accepting the rest cannot be
// exploited: a signed callback cannot be altered, and a write never
// re-parked has had only the one version any such button could show. A
// re-park after this check changes the version, so the governor still
// refuses the decision atomically.
func (s *Service) version(ctx context.Context, channel, user string, btn button, action string) (string, bool) {
	if btn.Version != "" {
		return btn.Version, true
	}
	ex, err := s.gov.Explain(ctx, btn.ID)
	if err != nil {
		s.metrics.interaction(action, resultOf(err))
		s.answer(ctx, channel, user, btn.ID, err)
		return "", false
	}
	rec := ex.Record
	if rec.Status != memory.StatusPending {
		return "", true // the governor answers "already decided"
	}
	reparked := rec.Reparked > 0
	for _, ev := range ex.Events {
		reparked = reparked || ev.Type == memory.EventStale
	}
	if !reparked {
		return rec.ParkVersion(), true
	}
	s.log.Warn("slack decision refused: a button without a version, on a write re-parked since", "record", btn.ID, "by", user, "action", action)
	s.metrics.interaction(action, resultVersion)
	if rec.Reparked == 0 {
		// Re-parked only before versions were counted: its message may
		// still carry buttons without one. (A re-park since re-rendered it.)
		if err := s.refresh(ctx, btn.ID); err != nil {
			s.log.Warn("re-rendering a review message", "record", btn.ID, "err", err)
		}
	}
	s.ephemeral(ctx, channel, user, fmt.Sprintf(":warning: Nothing changed: this message was posted by an older memgate, and %s was re-parked since "+
		"(the slot changed and it was re-evaluated), so memgate cannot tell which version you decided on. "+
		"The message now shows the current version: decide again there, or use %s.", code(btn.ID), code("sidecar review show "+btn.ID)))
	return "", false
}

// mayDecide checks the allow-list; anyone else is told so and nothing changes.
func (s *Service) mayDecide(ctx context.Context, channel, user, id, action string) bool {
	ok, err := s.reviewers.allowed(ctx, user)
	switch {
	case err != nil:
		s.log.Error("checking a Slack reviewer", "user", user, "err", err)
		s.metrics.interaction(action, "unverified")
		s.ephemeral(ctx, channel, user, fmt.Sprintf(":warning: memgate could not check whether you may decide (the reviewer group lookup failed), so nothing changed. Try again, or use %s.",
			code("sidecar review approve|reject "+id)))
		return false
	case !ok:
		s.log.Warn("slack decision refused: not a reviewer", "user", user, "record", id, "action", action)
		s.metrics.interaction(action, "not_allowed")
		s.ephemeral(ctx, channel, user, fmt.Sprintf(":no_entry: You are not allowed to decide memgate reviews, so nothing changed for %s. Reviewers are listed in MEMGATE_SLACK_REVIEWERS or the reviewer group.",
			code(id)))
		return false
	}
	return true
}

// openReject asks for an optional reason in a modal; the decision is taken
// when the modal is submitted.
func (s *Service) openReject(ctx context.Context, trigger, channel, user, id, version string) {
	rec, err := s.gov.Get(ctx, id)
	if err != nil {
		s.answer(ctx, channel, user, id, err)
		return
	}
	if rec.Status != memory.StatusPending {
		s.answer(ctx, channel, user, id, memory.Errorf(memory.EDECIDED, "already decided"))
		return
	}
	if version != rec.ParkVersion() {
		// The same refusal the governor gives when the dialog is submitted;
		// said now, the reviewer does not type a reason for nothing.
		s.metrics.interaction(ActionReject, resultVersion)
		s.ephemeral(ctx, channel, user, versionChangedText(id))
		return
	}
	meta, _ := json.Marshal(rejectMetadata{ID: id, Version: version, Channel: channel})
	if _, err := s.api.OpenViewContext(ctx, trigger, rejectModal(rec, string(meta))); err != nil {
		s.log.Error("opening the reject dialog", "record", id, "err", err)
		s.ephemeral(ctx, channel, user, fmt.Sprintf(":warning: The reject dialog could not be opened, so nothing changed. Click Reject again, or use %s.",
			code("sidecar review reject --reason … "+id)))
	}
}

func (s *Service) rejectSubmitted(ctx context.Context, cb slack.InteractionCallback) {
	var meta rejectMetadata
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta); err != nil || meta.ID == "" {
		s.log.Warn("reject dialog without a record id", "err", err)
		return
	}
	user := cb.User.ID
	if !s.mayDecide(ctx, meta.Channel, user, meta.ID, ActionReject) {
		return
	}
	version, ok := s.version(ctx, meta.Channel, user, button{ID: meta.ID, Version: meta.Version}, ActionReject)
	if !ok {
		return
	}
	var reason string
	if cb.View.State != nil {
		reason = cb.View.State.Values[reasonBlockID][reasonActionID].Value
	}
	_, err := s.gov.Reject(ctx, meta.ID, memory.Review{By: user, Route: routeSlack, Note: reason, Version: version})
	s.log.Info("slack decision", "record", meta.ID, "by", user, "action", "reject", "version", version, "result", resultOf(err))
	s.metrics.interaction(ActionReject, resultOf(err))
	s.answer(ctx, meta.Channel, user, meta.ID, err)
}

// answer tells the clicker why a decision did not happen. Success needs no
// answer: the message itself changes to show the outcome.
func (s *Service) answer(ctx context.Context, channel, user, id string, err error) {
	var text string
	switch memory.ErrorCode(err) {
	case "":
		return
	case memory.ESTALE:
		if errors.Is(err, memory.ErrVersionChanged) {
			text = versionChangedText(id)
			break
		}
		text = fmt.Sprintf(":warning: Not applied: the slot changed while %s waited for review, so approving it now would overwrite a newer version. "+
			"It was re-evaluated and waits for a new decision; the message shows the current version.", code(id))
	case memory.EDECIDED:
		text = s.alreadyDecided(ctx, id)
	case memory.ENOTFOUND:
		text = fmt.Sprintf(":grey_question: memgate does not know %s; nothing changed.", code(id))
	case memory.EINVALID, memory.ECONFLICT:
		text = ":no_entry: Nothing changed: " + clip(memory.ErrorMessage(err), 1000)
	default:
		s.log.Error("slack decision failed", "record", id, "user", user, "err", err)
		text = fmt.Sprintf(":rotating_light: memgate could not record the decision (internal error), so nothing changed. Try again, or use %s.",
			code("sidecar review approve|reject "+id))
	}
	s.ephemeral(ctx, channel, user, text)
}

func (s *Service) alreadyDecided(ctx context.Context, id string) string {
	rec, err := s.gov.Get(ctx, id)
	if err != nil || rec.Review == nil {
		return fmt.Sprintf(":information_source: %s was already decided; nothing changed.", code(id))
	}
	return fmt.Sprintf(":information_source: Already decided: %s %s by %s at %s. Nothing changed.",
		code(id), rec.Review.Outcome, userRef(rec.Review.By, rec.Review.Route), slackDate(rec.Review.At))
}

func (s *Service) ephemeral(ctx context.Context, channel, user, text string) {
	if channel == "" || user == "" {
		return
	}
	if _, err := s.api.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(bound(text, maxEphemeral), false)); err != nil {
		s.log.Warn("answering a Slack user", "user", user, "err", err)
	}
}

// resultVersion is the metric result of a decision refused because it was
// bound to a version that is no longer parked (a replayed or outdated click).
const resultVersion = "version_changed"

func resultOf(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, memory.ErrVersionChanged) {
		return resultVersion
	}
	return memory.ErrorCode(err)
}

// versionChangedText answers a decision bound to a version of the write
// that is no longer parked: a replayed callback, or a click on a message
// Slack had not yet updated.
func versionChangedText(id string) string {
	return fmt.Sprintf(":warning: Nothing changed: the message you used showed an older version of %s. It was re-parked since "+
		"(the slot changed and it was re-evaluated), and a decision applies only to the version it was made on. "+
		"Decide again from the current message, which shows the version that waits now.", code(id))
}
