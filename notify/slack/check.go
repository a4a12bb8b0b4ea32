package slack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// checkReason names what is wrong with the Slack settings: the label of
// memgate_slack_check_failures_total and the key of the fix a warning names.
type checkReason string

const (
	problemToken           checkReason = "token"
	problemScope           checkReason = "scope"
	problemChannelNotFound checkReason = "channel_not_found"
	problemNotInChannel    checkReason = "not_in_channel"
	problemArchived        checkReason = "archived"
	problemRestricted      checkReason = "restricted"
	problemUnreachable     checkReason = "unreachable"
	problemOther           checkReason = "other"
)

// Recheck intervals: a failing check is repeated after a minute, doubling up
// to ten; a passing one every ten minutes, so a token revoked while no
// notice flows is noticed too.
const (
	recheckFirst  = time.Minute
	recheckMax    = 10 * time.Minute
	recheckWhenOK = 10 * time.Minute
	// checkTimeout bounds one check (the first runs as Run begins).
	checkTimeout = 10 * time.Second
)

// recheckDelay is how long to wait before the next check after failures
// failed checks in a row (0: the last one passed).
func recheckDelay(failures int) time.Duration {
	if failures <= 0 {
		return recheckWhenOK
	}
	d := recheckFirst
	for i := 1; i < failures && d < recheckMax; i++ {
		d *= 2
	}
	return min(d, recheckMax)
}

// CheckError says why Slack is not ready and what fixes it.
type CheckError struct {
	Reason string // a checkReason: token, scope, channel_not_found, not_in_channel, archived, restricted, unreachable, other
	Fix    string // what the operator does, naming the setting
	Err    error
}

func (e *CheckError) Error() string { return fmt.Sprintf("slack: %s: %v", e.Fix, e.Err) }

func (e *CheckError) Unwrap() error { return e.Err }

// health is what the Service knows of its settings, from checks and from
// deliveries: ready or failing for a reason.
type health struct {
	mu        sync.Mutex
	known     bool // a check or a delivery has answered
	ready     bool
	reason    checkReason
	failures  int    // failed checks in a row
	botName   string // auth.test's user, for "/invite @…"
	unchecked bool   // membership could not be verified (no channels:read / groups:read)
}

// Check asks Slack whether memgate's settings work: auth.test for the bot
// token, then conversations.info for the channel (it exists, is not
// archived, the bot is a member). It records the answer in
// memgate_slack_ready and memgate_slack_check_failures_total, logs a failure
// as a warning naming the fix, and when Slack becomes ready (the first
// check, or after a failure) calls Deps.OnReady so notices waiting out a
// backoff are sent now. Run runs it at once and then periodically; a nil
// error means ready.
func (s *Service) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cerr := s.check(ctx)
	if cerr != nil {
		s.metrics.checkFailures.WithLabelValues(cerr.Reason).Inc()
		s.health.mu.Lock()
		s.health.failures++
		s.health.mu.Unlock()
		s.setReady(false, checkReason(cerr.Reason), cerr)
		return cerr
	}
	s.health.mu.Lock()
	s.health.failures = 0
	// Without the scope to look at the channel, a check cannot clear a
	// channel problem a delivery reported; the next delivery that goes
	// through will.
	keep := s.health.unchecked && s.health.known && !s.health.ready && isChannelProblem(s.health.reason)
	s.health.mu.Unlock()
	if !keep {
		s.setReady(true, "", nil)
	}
	return nil
}

// check runs the two calls and explains a failure.
func (s *Service) check(ctx context.Context) *CheckError {
	auth, err := s.api.AuthTestContext(ctx)
	if err != nil {
		return s.explain(fmt.Errorf("auth.test: %w", err))
	}
	s.health.mu.Lock()
	if auth.User != "" {
		s.health.botName = auth.User
	}
	s.health.mu.Unlock()
	ch, err := s.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: s.cfg.Channel})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "missing_scope" {
		// Installed from an older manifest: posting may well work, so this
		// is not a failure; say how to let memgate look.
		s.health.mu.Lock()
		first := !s.health.unchecked
		s.health.unchecked = true
		s.health.mu.Unlock()
		if first {
			s.log.Warn("cannot verify that the bot is in the review channel: the token lacks channels:read (public channels) or groups:read (private); add them under OAuth & Permissions (see deploy/slack/manifest.yaml) and reinstall the app",
				"channel", s.cfg.Channel, "needed", se.Needed)
		}
		return nil
	}
	if err != nil {
		return s.explain(fmt.Errorf("conversations.info %s: %w", s.cfg.Channel, err))
	}
	s.health.mu.Lock()
	s.health.unchecked = false
	s.health.mu.Unlock()
	switch {
	case ch.IsArchived:
		return s.explain(fmt.Errorf("conversations.info %s: %w", s.cfg.Channel, slack.SlackErrorResponse{Err: "is_archived"}))
	case !ch.IsMember:
		return s.explain(fmt.Errorf("conversations.info %s: is_member false: %w", s.cfg.Channel, slack.SlackErrorResponse{Err: "not_in_channel"}))
	}
	return nil
}

// problemOf says whether err means memgate's Slack settings are wrong, and
// which; ok is false for anything else (an outage, a message Slack cannot
// take).
func problemOf(err error) (_ checkReason, ok bool) {
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	switch {
	case errors.As(err, &se):
		if row := slackErrors[se.Err]; row.class == settings {
			return row.problem, true
		}
	case errors.As(err, &sc):
		if classifyStatus(sc.Code) == settings {
			return problemOther, true
		}
	}
	return "", false
}

// explain turns a failed check call into the reason and the fix.
func (s *Service) explain(err error) *CheckError {
	reason, ok := problemOf(err)
	if !ok {
		var se slack.SlackErrorResponse
		var ne net.Error
		var rl *slack.RateLimitedError
		switch {
		case errors.As(err, &se) && slackErrors[se.Err].class != passing:
			reason = problemOther
		case errors.As(err, &se), errors.As(err, &ne), errors.As(err, &rl), errors.Is(err, context.DeadlineExceeded):
			reason = problemUnreachable
		default:
			reason = problemUnreachable // a 5xx, a proxy's page: Slack is not answering as Slack
		}
	}
	return &CheckError{Reason: string(reason), Fix: s.fix(reason, err), Err: err}
}

// fix is the operator's next step for a reason.
func (s *Service) fix(reason checkReason, err error) string {
	s.health.mu.Lock()
	bot := s.health.botName
	s.health.mu.Unlock()
	if bot == "" {
		bot = "memgate"
	}
	ch := s.cfg.Channel
	switch reason {
	case problemToken:
		return "Slack refuses the bot token (wrong, revoked or expired, or not a bot token): set MEMGATE_SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-…) and restart memgate"
	case problemScope:
		needed := ""
		var se slack.SlackErrorResponse
		if errors.As(err, &se) && se.Needed != "" {
			needed = " (" + se.Needed + ")"
		}
		return "the bot token lacks a scope memgate needs" + needed + ": add it under OAuth & Permissions (see deploy/slack/manifest.yaml) and reinstall the app; the token stays the same, so no restart is needed"
	case problemChannelNotFound:
		return fmt.Sprintf("channel %s does not exist, or is private and the bot is not in it: invite the bot there (/invite @%s, no restart needed) or set MEMGATE_SLACK_CHANNEL to the channel's id (C…, not its name) and restart", ch, bot)
	case problemNotInChannel:
		return fmt.Sprintf("the bot is not in channel %s: invite it (/invite @%s); no restart needed, memgate re-checks", ch, bot)
	case problemArchived:
		return fmt.Sprintf("channel %s is archived: unarchive it (no restart needed) or set MEMGATE_SLACK_CHANNEL to another channel and restart", ch)
	case problemRestricted:
		return fmt.Sprintf("a workspace setting keeps the bot from posting in %s: allow apps to post there or set MEMGATE_SLACK_CHANNEL to another channel and restart", ch)
	case problemUnreachable:
		return "Slack does not answer: check egress to slack.com (proxy, DNS, NetworkPolicy) or MEMGATE_SLACK_API_URL; memgate keeps trying"
	}
	return "Slack refused memgate's request: check MEMGATE_SLACK_API_URL, any egress proxy, and the app's settings"
}

func isChannelProblem(r checkReason) bool {
	switch r {
	case problemChannelNotFound, problemNotInChannel, problemArchived, problemRestricted:
		return true
	}
	return false
}

// setReady records a check's or a delivery's answer: the gauge, a log line
// when Slack becomes ready, a warning for each failure it is given,
// and Deps.OnReady when Slack becomes ready.
func (s *Service) setReady(ready bool, reason checkReason, cerr *CheckError) {
	s.health.mu.Lock()
	was, wasKnown := s.health.ready, s.health.known
	s.health.known, s.health.ready, s.health.reason = true, ready, reason
	s.health.mu.Unlock()
	if ready {
		s.metrics.ready.Set(1)
		if !was || !wasKnown {
			s.log.Info("Slack is ready: it takes memgate's bot token and review channel", "channel", s.cfg.Channel)
			if s.onReady != nil {
				s.onReady()
			}
		}
		return
	}
	s.metrics.ready.Set(0)
	if cerr != nil {
		s.log.Warn("Slack is not ready; review notices wait in the outbox and nothing is dropped (the review queue works from the CLI): "+cerr.Fix,
			"reason", cerr.Reason, "channel", s.cfg.Channel, "err", cerr.Err)
	}
}

// accepted records that Slack took a message: the settings work.
func (s *Service) accepted() {
	s.health.mu.Lock()
	ready, known := s.health.ready, s.health.known
	s.health.mu.Unlock()
	if !ready || !known {
		s.setReady(true, "", nil)
	}
}

// refused records a delivery Slack refused. A settings error marks Slack
// not ready (once per change of reason) and makes the check loop re-check
// soon, so an invite is noticed within a minute.
func (s *Service) refused(err error) {
	reason, ok := problemOf(err)
	if !ok {
		return
	}
	s.health.mu.Lock()
	same := s.health.known && !s.health.ready && s.health.reason == reason
	s.health.mu.Unlock()
	if same {
		return
	}
	s.setReady(false, reason, &CheckError{Reason: string(reason), Fix: s.fix(reason, err), Err: err})
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// checkLoop re-checks until ctx ends: soon while failing (backing off),
// rarely while ready, and a minute after a delivery met a settings error.
func (s *Service) checkLoop(ctx context.Context) {
	timer := time.NewTimer(s.nextCheck())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.nudge:
			s.health.mu.Lock()
			s.health.failures = max(s.health.failures, 1)
			s.health.mu.Unlock()
		case <-timer.C:
			_ = s.Check(ctx) // logged and counted by Check
		}
		timer.Reset(s.nextCheck())
	}
}

func (s *Service) nextCheck() time.Duration {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return recheckDelay(s.health.failures)
}
