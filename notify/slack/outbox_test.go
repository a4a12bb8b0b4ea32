package slack_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

func TestSlackOutageLosesNothing(t *testing.T) {
	e := newEnv(t, nil)
	// Slack answers 503 twice, then 429 asking for one second, then recovers.
	e.fake.failNext("chat.postMessage",
		fakeFailure{Status: 503}, fakeFailure{Status: 503}, fakeFailure{Status: 429, RetryAfter: "1"})
	_, parked := e.parkOverride()

	testkit.Eventually(t, "a failure recorded with the notice", func() bool {
		n := e.outboxNotices()
		return len(n) == 1 && n[0].Attempts >= 1 && strings.Contains(n[0].LastError, "503")
	})
	m := e.messageFor(parked.ID)
	calls := e.fake.callsTo("chat.postMessage")
	if len(calls) != 4 {
		t.Fatalf("%d attempts, want 4 (503, 503, 429, ok)", len(calls))
	}
	if gap := calls[3].At.Sub(calls[2].At); gap < time.Second {
		t.Fatalf("retried %s after a 429 with Retry-After: 1", gap)
	}
	if len(e.fake.topMessages()) != 1 {
		t.Fatal("the outage produced duplicate messages")
	}
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.outboxNotices()) == 0 })

	// The decision's update survives an outage too.
	e.fake.failNext("chat.update", fakeFailure{Status: 500}, fakeFailure{SlackError: "service_unavailable"})
	if _, err := e.gov.Approve(context.Background(), parked.ID, memory.Review{By: "cli", Route: "cli"}); err != nil {
		t.Fatal(err)
	}
	e.waitDecided(m.TS)
	if n := len(e.fake.callsTo("chat.update")); n != 3 {
		t.Fatalf("%d chat.update calls, want 3 (500, service_unavailable, ok)", n)
	}
}

func TestPermanentSlackErrorsAreNotRetried(t *testing.T) {
	e := newEnv(t, nil)
	// msg_too_long concerns this message only (settings errors are kept:
	// check_test.go).
	e.fake.failNext("chat.postMessage", fakeFailure{SlackError: "msg_too_long"})
	_, parked := e.parkOverride()
	testkit.Eventually(t, "the notice dropped", func() bool { return len(e.outboxNotices()) == 0 })
	time.Sleep(100 * time.Millisecond) // several backoff periods: no retry may follow
	if n := len(e.fake.callsTo("chat.postMessage")); n != 1 {
		t.Fatalf("%d attempts for a permanent error, want 1", n)
	}
	if got := e.record(parked.ID).Status; got != memory.StatusPending {
		t.Fatalf("record is %s; it must still wait for review", got)
	}
}

func TestUndeliveredNoticeSurvivesRestart(t *testing.T) {
	// First run: Slack unreachable (a port nothing listens on).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/"
	ln.Close()
	var realURL string
	e := newEnv(t, func(c *slacknotify.Config) { realURL, c.APIURL = c.APIURL, dead })
	_, parked := e.parkOverride()
	testkit.Eventually(t, "failed attempts", func() bool {
		n := e.outboxNotices()
		return len(n) == 1 && n[0].Attempts >= 2
	})

	// The process stops mid-outage and starts again with Slack reachable.
	e.restart(func(c *slacknotify.Config) { c.APIURL = realURL })
	m := e.messageFor(parked.ID)
	if !hasActions(m.Blocks) {
		t.Fatal("the delivered message has no buttons")
	}
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.outboxNotices()) == 0 })
	if n := len(e.fake.topMessages()); n != 1 {
		t.Fatalf("%d messages after the restart, want 1", n)
	}
}

func TestRollbackAndQuarantineNotices(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	var ids []string
	for _, s := range []string{"Build uses Go 1.25", "Build uses Go 1.26", "Build uses Go 1.27"} {
		r := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "build.go",
			Summary: s, Actor: memory.Actor{AgentID: "agent-x", RunID: "run-bad"}}).Record
		ids = append(ids, r.ID)
	}
	if _, err := e.gov.Quarantine(ctx, "run", "run-bad", "prompt injection in run-bad", "oncall-bob"); err != nil {
		t.Fatal(err)
	}
	// A quarantine is announced once, naming what it undid, not one
	// message per rolled-back version.
	var msgs []fakeMessage
	testkit.Eventually(t, "the quarantine message", func() bool { msgs = e.fake.topMessages(); return len(msgs) >= 1 })
	time.Sleep(200 * time.Millisecond) // a second message would have arrived by now
	if msgs = e.fake.topMessages(); len(msgs) != 1 {
		t.Fatalf("%d messages for one quarantine, want 1", len(msgs))
	}
	quarantine := allText(msgs[0].Blocks)
	for _, id := range ids {
		if !strings.Contains(quarantine, id) {
			t.Errorf("quarantine message lacks %s:\n%s", id, quarantine)
		}
	}
	for _, want := range []string{"run-bad", "3 rolled back", "oncall-bob", "prompt injection"} {
		if !strings.Contains(quarantine, want) {
			t.Errorf("quarantine message lacks %q:\n%s", want, quarantine)
		}
	}
	// A single rollback is still announced on its own.
	v := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "build.go", Summary: "Build uses Go 1.26"}).Record
	if _, err := e.gov.Rollback(ctx, v.ID, false, "typo", "oncall-bob"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the rollback message", func() bool { msgs = e.fake.topMessages(); return len(msgs) == 2 })
	if rb := allText(msgs[1].Blocks); !strings.Contains(rb, v.ID) || !strings.Contains(rb, "typo") {
		t.Errorf("rollback message:\n%s", rb)
	}
}
