package slack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

func TestSocketModeDecisions(t *testing.T) {
	// Socket Mode only: no signing secret, so nothing can arrive over HTTP.
	e := newEnv(t, func(c *slacknotify.Config) { c.AppToken, c.SigningSecret = appToken, "" })
	select {
	case <-e.fake.sockUp:
	case <-time.After(10 * time.Second):
		t.Fatal("memgate did not open a Socket Mode connection")
	}
	e.fake.mu.Lock()
	used := e.fake.appToken
	e.fake.mu.Unlock()
	if used != appToken {
		t.Fatalf("apps.connections.open called with %q, want the app-level token", used)
	}
	ack := func(envelope string) {
		t.Helper()
		select {
		case got := <-e.fake.acks:
			if got != envelope {
				t.Fatalf("acknowledged %q, want %q", got, envelope)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("envelope %s not acknowledged", envelope)
		}
	}

	// Approve over the socket.
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)
	e.fake.sendInteractive("env-1", e.click(m, slacknotify.ActionApprove, reviewer))
	ack("env-1")
	after := e.waitDecided(m.TS)
	if rec := e.record(parked.ID); rec.Status != memory.StatusActive || rec.Review.By != reviewer || rec.Review.Route != "slack" {
		t.Fatalf("record %s reviewed %+v", rec.Status, rec.Review)
	}
	if !strings.Contains(allText(after.Blocks), "Approved (override)") {
		t.Fatalf("message not updated with the outcome:\n%s", allText(after.Blocks))
	}

	// Reject with a reason over the socket: the button opens the dialog,
	// its submission decides.
	second := e.submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "deploy.approval",
		Summary: "Deploys need no human approval"}).Record
	m2 := e.messageFor(second.ID)
	e.fake.sendInteractive("env-2", e.click(m2, slacknotify.ActionReject, reviewer))
	ack("env-2")
	var views []fakeView
	testkit.Eventually(t, "the reject dialog", func() bool { views = e.fake.openedViews(); return len(views) == 1 })
	e.fake.sendInteractive("env-3", submitView(t, views[0], reviewer, "policy says humans approve deploys"))
	ack("env-3")
	e.waitDecided(m2.TS)
	if rec := e.record(second.ID); rec.Status != memory.StatusRejected || rec.Review.Note != "policy says humans approve deploys" {
		t.Fatalf("record %s reviewed %+v", rec.Status, rec.Review)
	}

	// An outsider over the socket: acknowledged, refused, nothing changes.
	third := e.submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-beta", FactType: "deploy.approval",
		Summary: "Deploys need no human approval"}).Record
	m3 := e.messageFor(third.ID)
	e.fake.sendInteractive("env-4", e.click(m3, slacknotify.ActionApprove, outsider))
	ack("env-4")
	testkit.Eventually(t, "the outsider's answer", func() bool { return len(e.fake.ephemeralsFor(outsider)) == 1 })
	if got := e.record(third.ID).Status; got != memory.StatusPending {
		t.Fatalf("outsider's click left %s", got)
	}
}
