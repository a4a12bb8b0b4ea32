package slack

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
)

var _ notify.Notifier = (*Service)(nil)

// Notify delivers one outbox batch to Slack (notify.Notifier). Every message
// is rendered from the record's state now, not from the notice, so a late
// or repeated delivery never shows an outdated picture: a parked notice
// whose write was decided meanwhile posts the decided form, without buttons.
func (s *Service) Notify(ctx context.Context, batch []*memory.Notice) (bool, error) {
	first := batch[0]
	var err error
	switch first.Kind {
	case memory.NoticeParked:
		err = s.announce(ctx, first.RecordID)
	case memory.NoticeDecided:
		err = s.refresh(ctx, first.RecordID)
	case memory.NoticeStale:
		err = s.staleNotice(ctx, first.RecordID)
	case memory.NoticeReminder:
		err = s.remind(ctx, first)
	case memory.NoticeRollback:
		err = s.rollbacks(ctx, batch)
	case memory.NoticeQuarantine:
		_, err = s.post(ctx, "Quarantine: "+oneLine(first.Text), section(":no_entry: *Quarantine*\n"+clip(first.Text, maxSectionText-30)))
	default:
		return false, &notify.DeliveryError{Reason: notify.ReasonInternal, Err: fmt.Errorf("unknown notice kind %q", first.Kind)}
	}
	if err != nil {
		s.refused(err) // a settings error: Slack is not ready, re-check soon
	}
	return classify(err)
}

// view gathers what a review message shows.
func (s *Service) view(ctx context.Context, id string) (reviewView, error) {
	item, err := s.gov.Review(ctx, id)
	if err != nil {
		return reviewView{}, err
	}
	ex, err := s.gov.Explain(ctx, id)
	if err != nil {
		return reviewView{}, err
	}
	return reviewView{Record: item.Record, Current: item.Current, Replaced: ex.Replaced, Point: ex.RollbackPoint,
		Conflicting: item.Conflicting, Stale: item.Stale, Rules: ex.Rules, Now: s.now()}, nil
}

// announce posts the review message of a record, or updates it if one was
// already posted (a redelivery after a crash, a re-announcement).
func (s *Service) announce(ctx context.Context, id string) error {
	v, err := s.view(ctx, id)
	if err != nil {
		return err
	}
	fallback, blocks := reviewMessage(v)
	ref, err := s.refs.get(ctx, id)
	if err != nil {
		return err
	}
	if ref != nil {
		return s.update(ctx, ref, fallback, blocks)
	}
	ref, err = s.post(ctx, fallback, blocks...)
	if err != nil {
		return err
	}
	return s.refs.put(ctx, id, *ref)
}

// refresh updates a record's message in place after a decision by any
// route: outcome, who and when; the buttons go away. A record that never
// had a message (Slack was off, or its announcement was dropped) has
// nothing to update.
func (s *Service) refresh(ctx context.Context, id string) error {
	ref, err := s.refs.get(ctx, id)
	if err != nil || ref == nil {
		return err
	}
	v, err := s.view(ctx, id)
	if err != nil {
		return err
	}
	fallback, blocks := reviewMessage(v)
	return s.update(ctx, ref, fallback, blocks)
}

// staleNotice refreshes the message (the slot's new version, the
// re-evaluated decision) and says in its thread why the approval was
// refused, so everyone watching sees it must be decided again.
func (s *Service) staleNotice(ctx context.Context, id string) error {
	ref, err := s.refs.get(ctx, id)
	if err != nil {
		return err
	}
	if ref == nil {
		return s.announce(ctx, id)
	}
	if err := s.refresh(ctx, id); err != nil {
		return err
	}
	ex, err := s.gov.Explain(ctx, id)
	if err != nil {
		return err
	}
	text := ":warning: " + staleText(ex)
	return s.reply(ctx, ref, "Approval refused: the slot changed", section(bound(text, maxSectionText)))
}

func staleText(ex *memory.Explanation) string {
	var by, from, to string
	for _, ev := range ex.Events {
		if ev.Type == memory.EventStale {
			by, from, to = ev.By, "", ""
			if len(ev.Related) == 2 {
				from, to = ev.Related[0], ev.Related[1]
			}
		}
	}
	route := ""
	if looksLikeSlackUser(by) {
		route = routeSlack // the stale event does not keep the route; a Slack id reads best as a mention
	}
	return fmt.Sprintf("The approval by %s was refused: this write was parked against %s, but the slot is now at %s. "+
		"It was re-evaluated against the new version (risk %s) and waits for a new decision; the message above shows it.",
		userRef(by, route), restoreTarget(from), restoreTarget(to), escape(string(ex.Record.RiskLevel)))
}

// remind re-announces a write that still waits: a reply in its message's
// thread, also shown in the channel; a full message if none was posted.
func (s *Service) remind(ctx context.Context, n *memory.Notice) error {
	rec, err := s.gov.Get(ctx, n.RecordID)
	if err != nil {
		return err
	}
	if rec.Status != memory.StatusPending {
		return nil // decided meanwhile: nothing to remind of
	}
	ref, err := s.refs.get(ctx, n.RecordID)
	if err != nil {
		return err
	}
	if ref == nil {
		return s.announce(ctx, n.RecordID)
	}
	waited := s.now().Sub(rec.CreatedAt).Round(time.Minute)
	text := fmt.Sprintf(":alarm_clock: Still waiting for a decision after %s (parked %s): %s %s",
		waited, slackDate(rec.CreatedAt), code(rec.ID), clip(oneLine(rec.Summary), 500))
	return s.reply(ctx, ref, "Still waiting for a decision: "+oneLine(rec.Summary), section(text))
}

// maxRollbackLines bounds the list in one rollback announcement.
const maxRollbackLines = 20

// rollbacks announces versions that were undone; several undone by one
// transaction (a cascade, a quarantine batch) become one message.
func (s *Service) rollbacks(ctx context.Context, batch []*memory.Notice) error {
	var lines []string
	var by, reason string
	for i, n := range batch {
		if i == maxRollbackLines {
			lines = append(lines, fmt.Sprintf("… and %d more", len(batch)-i))
			break
		}
		ex, err := s.gov.Explain(ctx, n.RecordID)
		if err != nil {
			return err
		}
		r := ex.Record
		restored := "the slot is now empty"
		for _, ev := range ex.Events {
			if ev.Type == memory.EventRolledBack {
				by, reason = ev.By, ev.Reason
				if len(ev.Related) > 0 {
					restored = "restored " + code(ev.Related[0])
				} else {
					restored = "the slot is now empty"
				}
			}
		}
		what := code(r.SubjectID)
		if r.FactType != "" {
			what += " / " + code(r.FactType)
		}
		lines = append(lines, fmt.Sprintf("• %s %s: %s (%s)", code(r.ID), what, clip(oneLine(r.Summary), 200), restored))
	}
	head := fmt.Sprintf(":leftwards_arrow_with_hook: *Rolled back %d version(s)*", len(batch))
	if by != "" {
		head += " by " + userRef(by, "")
	}
	if reason != "" {
		head += ": " + clip(reason, 300)
	}
	text := bound(head+"\n"+strings.Join(lines, "\n"), maxSectionText)
	_, err := s.post(ctx, fmt.Sprintf("Rolled back %d memory version(s)", len(batch)), section(text))
	return err
}

func messageOptions(fallback string, blocks []slack.Block) []slack.MsgOption {
	// Escaped here, not by slack-go, so the bound holds for what is sent.
	return []slack.MsgOption{slack.MsgOptionText(bound(escape(fallback), maxFallback), false), slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
}

func (s *Service) post(ctx context.Context, fallback string, blocks ...slack.Block) (*messageRef, error) {
	ch, ts, err := s.api.PostMessageContext(ctx, s.cfg.Channel, messageOptions(fallback, blocks)...)
	if err != nil {
		return nil, fmt.Errorf("chat.postMessage: %w", err)
	}
	s.accepted()
	if ch == "" {
		ch = s.cfg.Channel
	}
	return &messageRef{Channel: ch, TS: ts, PostedAt: s.now()}, nil
}

func (s *Service) update(ctx context.Context, ref *messageRef, fallback string, blocks []slack.Block) error {
	opts := messageOptions(fallback, blocks)
	if _, _, _, err := s.api.UpdateMessageContext(ctx, ref.Channel, ref.TS, opts[:2]...); err != nil {
		return fmt.Errorf("chat.update: %w", err)
	}
	s.accepted()
	return nil
}

func (s *Service) reply(ctx context.Context, ref *messageRef, fallback string, blocks ...slack.Block) error {
	opts := append(messageOptions(fallback, blocks), slack.MsgOptionTS(ref.TS), slack.MsgOptionBroadcast())
	if _, _, err := s.api.PostMessageContext(ctx, ref.Channel, opts...); err != nil {
		return fmt.Errorf("chat.postMessage (thread): %w", err)
	}
	s.accepted()
	return nil
}

// looksLikeSlackUser reports whether s has the shape of a Slack user id
// (U… or W…, upper-case letters and digits).
func looksLikeSlackUser(s string) bool {
	if len(s) < 9 || len(s) > 20 || (s[0] != 'U' && s[0] != 'W') {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
