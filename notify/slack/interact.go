package slack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/memgate/memgate/memory"
)

// rejectMetadata travels in the reject modal's private metadata.
type rejectMetadata struct {
	ID      string `json:"id"`
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
	channel, user, id := cb.Channel.ID, cb.User.ID, a.Value
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	if !s.mayDecide(ctx, channel, user, id, a.ActionID) {
		return
	}
	if a.ActionID == ActionReject {
		s.openReject(ctx, cb.TriggerID, channel, user, id)
		return
	}
	_, err := s.gov.Approve(ctx, id, memory.Review{By: user, Route: routeSlack, Mode: mode})
	s.log.Info("slack decision", "record", id, "by", user, "action", "approve", "mode", mode, "result", resultOf(err))
	s.metrics.interaction(a.ActionID, resultOf(err))
	s.answer(ctx, channel, user, id, err)
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
func (s *Service) openReject(ctx context.Context, trigger, channel, user, id string) {
	rec, err := s.gov.Get(ctx, id)
	if err != nil {
		s.answer(ctx, channel, user, id, err)
		return
	}
	if rec.Status != memory.StatusPending {
		s.answer(ctx, channel, user, id, memory.Errorf(memory.EDECIDED, "already decided"))
		return
	}
	meta, _ := json.Marshal(rejectMetadata{ID: id, Channel: channel})
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
	var reason string
	if cb.View.State != nil {
		reason = cb.View.State.Values[reasonBlockID][reasonActionID].Value
	}
	_, err := s.gov.Reject(ctx, meta.ID, memory.Review{By: user, Route: routeSlack, Note: reason})
	s.log.Info("slack decision", "record", meta.ID, "by", user, "action", "reject", "result", resultOf(err))
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
	if _, err := s.api.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false)); err != nil {
		s.log.Warn("answering a Slack user", "user", user, "err", err)
	}
}

func resultOf(err error) string {
	if err == nil {
		return "ok"
	}
	return memory.ErrorCode(err)
}
