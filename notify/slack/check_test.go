package slack_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

// An hour's outbox backoff: a notice delivered within a test after a
// failure can only have gone out through RetryNow (Deps.OnReady).
var hourBackoff = notify.Backoff{Initial: time.Hour, Max: time.Hour}

// metric returns the value of a gauge or counter in the env's current
// registry whose labels include want, and whether it exists.
func (e *env) metric(name string, want map[string]string) (float64, bool) {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			return value(m), true
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

func (e *env) ready() float64 {
	e.t.Helper()
	v, ok := e.metric("memgate_slack_ready", nil)
	if !ok {
		e.t.Fatal("memgate_slack_ready is not exported")
	}
	return v
}

// waitingNotice waits until the parked write's notice failed once and
// checks it is still in the outbox, not dropped.
func (e *env) waitingNotice(id, slackError string) {
	e.t.Helper()
	testkit.Eventually(e.t, "a refused delivery recorded with the notice", func() bool {
		n := e.outboxNotices()
		return len(n) == 1 && n[0].RecordID == id && n[0].Attempts == 1 && strings.Contains(n[0].LastError, slackError)
	})
	if v, _ := e.metric("memgate_notify_retries_total", map[string]string{"reason": notify.ReasonConfig}); v != 1 {
		e.t.Fatalf("memgate_notify_retries_total{reason=config} = %v, want 1", v)
	}
	if v, ok := e.metric("memgate_notify_dropped_total", nil); ok && v != 0 {
		e.t.Fatalf("%v notices dropped for a settings error", v)
	}
}

func TestStartupCheckPasses(t *testing.T) {
	e := newEnv(t, nil)
	if n, m := len(e.fake.callsTo("auth.test")), len(e.fake.callsTo("conversations.info")); n != 1 || m != 1 {
		t.Fatalf("start called auth.test %d and conversations.info %d times, want once each", n, m)
	}
	if v := e.ready(); v != 1 {
		t.Fatalf("memgate_slack_ready = %v after a passing check", v)
	}
	if err := e.svc.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, failed := e.metric("memgate_slack_check_failures_total", nil); failed {
		t.Fatal("a passing check counted a failure")
	}
}

// A revoked token: memgate starts, warns naming the setting and that a
// restart is needed, and sets the metric; the first parked write's notice
// waits in the outbox and goes out after the restart with a good token.
func TestStartupCheckInvalidAuth(t *testing.T) {
	e := newEnvWith(t, envOptions{backoff: hourBackoff, fake: func(f *fakeSlack) { f.setAuthError("invalid_auth") }})
	if v := e.ready(); v != 0 {
		t.Fatalf("memgate_slack_ready = %v with a revoked token", v)
	}
	if v, _ := e.metric("memgate_slack_check_failures_total", map[string]string{"reason": "token"}); v != 1 {
		t.Fatalf("memgate_slack_check_failures_total{reason=token} = %v, want 1", v)
	}
	logs := e.logs.String()
	for _, want := range []string{"level=WARN", "Slack is not ready", "MEMGATE_SLACK_BOT_TOKEN", "restart", "invalid_auth", "nothing is dropped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the start-up warning lacks %q:\n%s", want, logs)
		}
	}
	var cerr *slacknotify.CheckError
	if err := e.svc.Check(context.Background()); !errors.As(err, &cerr) || cerr.Reason != "token" {
		t.Fatalf("Check = %v, want a token CheckError", err)
	}

	_, parked := e.parkOverride()
	e.waitingNotice(parked.ID, "invalid_auth")
	if len(e.fake.topMessages()) != 0 {
		t.Fatal("a message was posted with a revoked token")
	}

	// The operator sets a good token and restarts: the notice goes out at
	// once, although its next attempt is an hour away.
	e.fake.setAuthError("")
	e.restart(nil)
	m := e.messageFor(parked.ID)
	if !hasActions(m.Blocks) {
		t.Fatal("the delivered review message has no buttons")
	}
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.outboxNotices()) == 0 })
	if v := e.ready(); v != 1 {
		t.Fatalf("memgate_slack_ready = %v after the fix", v)
	}
}

// The bot is not in the channel: the warning names the invite; once it is
// invited, the next check delivers the waiting notice without a restart.
func TestStartupCheckNotInChannel(t *testing.T) {
	e := newEnvWith(t, envOptions{backoff: hourBackoff, fake: func(f *fakeSlack) { f.setMember(false) }})
	if v := e.ready(); v != 0 {
		t.Fatalf("memgate_slack_ready = %v while the bot is not in the channel", v)
	}
	if v, _ := e.metric("memgate_slack_check_failures_total", map[string]string{"reason": "not_in_channel"}); v != 1 {
		t.Fatalf("memgate_slack_check_failures_total{reason=not_in_channel} = %v, want 1", v)
	}
	for _, want := range []string{"/invite @memgate", channel, "no restart needed"} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("the start-up warning lacks %q:\n%s", want, e.logs.String())
		}
	}
	_, parked := e.parkOverride()
	e.waitingNotice(parked.ID, "not_in_channel")

	e.fake.setMember(true)                                    // /invite @memgate
	if err := e.svc.Check(context.Background()); err != nil { // the periodic re-check
		t.Fatal(err)
	}
	e.messageFor(parked.ID)
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.outboxNotices()) == 0 })
	if v := e.ready(); v != 1 {
		t.Fatalf("memgate_slack_ready = %v after the invite", v)
	}
}

// A bot removed from the channel after a passing start: the refused
// delivery alone marks Slack not ready, and the notice waits for the invite.
func TestDeliveryRefusedForSettingsMarksSlackNotReady(t *testing.T) {
	e := newEnvWith(t, envOptions{backoff: hourBackoff})
	if v := e.ready(); v != 1 {
		t.Fatalf("memgate_slack_ready = %v after a passing start", v)
	}
	e.fake.setMember(false)
	_, parked := e.parkOverride()
	e.waitingNotice(parked.ID, "not_in_channel")
	if v := e.ready(); v != 0 {
		t.Fatalf("memgate_slack_ready = %v after Slack refused a post with not_in_channel", v)
	}
	if !strings.Contains(e.logs.String(), "/invite @memgate") {
		t.Errorf("no warning names the invite:\n%s", e.logs.String())
	}
	e.fake.setMember(true)
	if err := e.svc.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.messageFor(parked.ID)
	if got := e.record(parked.ID).Status; got != memory.StatusPending {
		t.Fatalf("record is %s, want pending", got)
	}
}

// A token installed from the older manifest (no channels:read) cannot look
// at the channel: that is a warning naming the scopes, not a failure.
func TestStartupCheckWithoutChannelScope(t *testing.T) {
	e := newEnvWith(t, envOptions{fake: func(f *fakeSlack) {
		f.failNext("conversations.info", fakeFailure{SlackError: "missing_scope"})
	}})
	if v := e.ready(); v != 1 {
		t.Fatalf("memgate_slack_ready = %v: posting may work without channels:read", v)
	}
	for _, want := range []string{"channels:read", "groups:read"} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("the warning lacks %q:\n%s", want, e.logs.String())
		}
	}
	_, parked := e.parkOverride()
	e.messageFor(parked.ID)
}
