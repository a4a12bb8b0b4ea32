package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

func TestSignedHTTPDecisionsUpdateTheMessageInPlace(t *testing.T) {
	tests := []struct {
		name, action, user string
		reason             string
		wantStatus         memory.Status
		wantMode           memory.ReviewMode
		wantText           string
	}{
		{"approve", slacknotify.ActionApprove, reviewer, "", memory.StatusActive, memory.ModeOverride, "Approved (override)"},
		{"approve as append", slacknotify.ActionAppend, groupie, "", memory.StatusActive, memory.ModeAppend, "Approved as append"},
		{"reject with a reason", slacknotify.ActionReject, reviewer, "Not what the user said; 只是猜测", memory.StatusRejected, "", "Rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			parked := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "release.cadence",
				Summary: "Releases happen every Tuesday", CandidateSource: memory.SourceInference}).Record
			m := e.messageFor(parked.ID)

			e.interact(e.click(m, tt.action, tt.user))
			if tt.action == slacknotify.ActionReject {
				var views []fakeView
				testkit.Eventually(t, "the reject dialog", func() bool { views = e.fake.openedViews(); return len(views) == 1 })
				if !strings.HasPrefix(views[0].TriggerID, "trigger-") {
					t.Fatalf("views.open with trigger %q", views[0].TriggerID)
				}
				if got := e.record(parked.ID).Status; got != memory.StatusPending {
					t.Fatalf("opening the dialog decided already: %s", got)
				}
				e.interact(submitView(t, views[0], tt.user, tt.reason))
			}

			rec := e.record(parked.ID)
			if rec.Status != tt.wantStatus || rec.Review == nil {
				t.Fatalf("record is %s (review %+v), want %s", rec.Status, rec.Review, tt.wantStatus)
			}
			if rec.Review.By != tt.user || rec.Review.Route != "slack" || rec.Review.Mode != tt.wantMode || rec.Review.Note != tt.reason {
				t.Fatalf("review %+v: want by %s via slack, mode %q, note %q", rec.Review, tt.user, tt.wantMode, tt.reason)
			}
			after := e.waitDecided(m.TS)
			text := allText(after.Blocks)
			for _, want := range []string{tt.wantText, "<@" + tt.user + ">", "<!date^", parked.ID} {
				if !strings.Contains(text, want) {
					t.Errorf("updated message lacks %q:\n%s", want, text)
				}
			}
			if tt.reason != "" && !strings.Contains(text, "只是猜测") {
				t.Errorf("updated message lacks the reason")
			}
			if n := len(e.fake.callsTo("chat.postMessage")); n != 1 {
				t.Errorf("%d messages posted: a decision must update, not post", n)
			}
			if eph := e.fake.ephemeralsFor(tt.user); len(eph) != 0 {
				t.Errorf("unexpected answers to the reviewer: %+v", eph)
			}
		})
	}
}

func TestRefusedSignaturesChangeNothing(t *testing.T) {
	e := newEnv(t, nil)
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)
	body := formBody(e.click(m, slacknotify.ActionApprove, reviewer))
	now := time.Now().Unix()
	tests := []struct {
		name string
		send func() *http.Response
	}{
		{"no signature", func() *http.Response { return e.post(body, now, secret, false) }},
		{"wrong secret", func() *http.Response { return e.post(body, now, "not-the-secret", true) }},
		{"six minutes old", func() *http.Response { return e.post(body, now-6*60, secret, true) }},
		{"from the future", func() *http.Response { return e.post(body, now+6*60, secret, true) }},
		{"body changed after signing", func() *http.Response {
			req, _ := http.NewRequest(http.MethodPost, e.admin.URL+"/slack/interactions", strings.NewReader(body+"x"))
			req.Header.Set("X-Slack-Request-Timestamp", jsonNumber(now))
			req.Header.Set("X-Slack-Signature", signature(secret, now, body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}},
		{"signature not hex", func() *http.Response {
			req, _ := http.NewRequest(http.MethodPost, e.admin.URL+"/slack/interactions", strings.NewReader(body))
			req.Header.Set("X-Slack-Request-Timestamp", jsonNumber(now))
			req.Header.Set("X-Slack-Signature", "v0=zz")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if resp := tt.send(); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("answered %d, want 401", resp.StatusCode)
			}
			if got := e.record(parked.ID).Status; got != memory.StatusPending {
				t.Fatalf("record is %s, want still pending", got)
			}
		})
	}
	// A request over the body bound is refused before anything is read into memory.
	big := bytes.Repeat([]byte("a"), 2<<20)
	resp, err := http.Post(e.admin.URL+"/slack/interactions", "application/x-www-form-urlencoded", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body answered %d, want 413", resp.StatusCode)
	}
	if n := len(e.fake.callsTo("chat.update")) + len(e.fake.callsTo("chat.postEphemeral")); n != 0 {
		t.Fatalf("refused requests caused %d Slack calls", n)
	}
	if evs, _ := e.gov.Explain(context.Background(), parked.ID); len(evs.Events) != 1 {
		t.Fatalf("audit log of the record has %d events, want only 'parked'", len(evs.Events))
	}
	// Without a signing secret the endpoint refuses even Slack's own signature.
	e.restart(func(c *slacknotify.Config) { c.SigningSecret = "" })
	if resp := e.post(body, time.Now().Unix(), secret, true); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("endpoint without a secret answered %d, want 401", resp.StatusCode)
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestOnlyReviewersDecide(t *testing.T) {
	e := newEnv(t, nil)
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)

	e.interact(e.click(m, slacknotify.ActionApprove, outsider))
	e.interact(e.click(m, slacknotify.ActionReject, outsider))
	eph := e.fake.ephemeralsFor(outsider)
	if len(eph) != 2 {
		t.Fatalf("outsider got %d answers, want 2: %+v", len(eph), eph)
	}
	for _, a := range eph {
		if a.Channel != channel || !strings.Contains(a.Text, "not allowed") {
			t.Fatalf("answer %+v, want an ephemeral 'not allowed' in the review channel", a)
		}
	}
	if got := e.record(parked.ID).Status; got != memory.StatusPending {
		t.Fatalf("record is %s after an outsider's clicks, want pending", got)
	}
	if n := len(e.fake.openedViews()); n != 0 {
		t.Fatalf("an outsider opened %d reject dialogs", n)
	}
	// The group is looked up once and cached; the outsider's two clicks and
	// the member's click need one usergroups.users.list call.
	e.interact(e.click(m, slacknotify.ActionApprove, groupie))
	if got := e.record(parked.ID); got.Status != memory.StatusActive || got.Review.By != groupie {
		t.Fatalf("group member's approval: %s by %+v", got.Status, got.Review)
	}
	if n := len(e.fake.callsTo("usergroups.users.list")); n != 1 {
		t.Fatalf("%d group lookups, want 1 (cached)", n)
	}
}

func TestStaleApprovalIsRefusedAndReannounced(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)
	// Meanwhile another write to the slot is parked and approved from the CLI.
	other := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "publish.auto",
		Summary: "Auto-publish is ON again, for weekdays only"}).Record
	if _, err := e.gov.Approve(ctx, other.ID, memory.Review{By: "cli", Route: "cli"}); err != nil {
		t.Fatal(err)
	}

	e.interact(e.click(m, slacknotify.ActionApprove, reviewer))
	var eph []fakeEphemeral
	testkit.Eventually(t, "an answer to the clicker", func() bool { eph = e.fake.ephemeralsFor(reviewer); return len(eph) == 1 })
	if !strings.Contains(eph[0].Text, "slot changed") || !strings.Contains(eph[0].Text, "re-evaluated") {
		t.Fatalf("clicker told %q", eph[0].Text)
	}
	rec := e.record(parked.ID)
	if rec.Status != memory.StatusPending || rec.ExpectedHead != other.ID {
		t.Fatalf("record is %s expecting %q; want pending, re-evaluated against %s", rec.Status, rec.ExpectedHead, other.ID)
	}
	// The message now shows the new active version, still with buttons, and
	// its thread says why the approval was refused.
	testkit.Eventually(t, "the refreshed message and the thread reply", func() bool {
		cur := e.fake.message(m.TS)
		return cur.Updates > 0 && strings.Contains(allText(cur.Blocks), "weekdays only") && hasActions(cur.Blocks) && len(cur.Replies) == 1
	})
	reply := e.fake.message(m.TS).Replies[0]
	if !reply.Broadcast || !strings.Contains(allText(reply.Blocks), "<@"+reviewer+">") || !strings.Contains(allText(reply.Blocks), other.ID) {
		t.Fatalf("thread reply %+v", reply)
	}
	// Approving again, against the new version, works.
	e.interact(e.click(e.fake.message(m.TS), slacknotify.ActionApprove, reviewer))
	if got := e.record(parked.ID).Status; got != memory.StatusActive {
		t.Fatalf("second approval left %s", got)
	}
}

func TestDoubleClickDecidesOnce(t *testing.T) {
	e := newEnv(t, nil)
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)
	payload := e.click(m, slacknotify.ActionApprove, reviewer)
	var wg sync.WaitGroup
	for range 2 { // the same callback twice at once: a double click, or Slack replaying it
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.interact(payload)
		}()
	}
	wg.Wait()
	ex, err := e.gov.Explain(context.Background(), parked.ID)
	if err != nil {
		t.Fatal(err)
	}
	approvals := 0
	for _, ev := range ex.Events {
		if ev.Type == memory.EventApproved {
			approvals++
		}
	}
	if approvals != 1 || ex.Record.Status != memory.StatusActive {
		t.Fatalf("%d approvals, record %s; want decided once", approvals, ex.Record.Status)
	}
	eph := e.fake.ephemeralsFor(reviewer)
	if len(eph) != 1 || !strings.Contains(eph[0].Text, "Already decided") || !strings.Contains(eph[0].Text, "<@"+reviewer+">") {
		t.Fatalf("second click answered %+v, want one 'already decided by' answer", eph)
	}
	e.waitDecided(m.TS)
}

func TestAdminDecisionUpdatesTheSlackMessage(t *testing.T) {
	e := newEnv(t, nil)
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)
	req, _ := http.NewRequest(http.MethodPost, e.admin.URL+"/admin/v1/reviews/"+parked.ID+"/reject",
		strings.NewReader(`{"reason":"audit still running","by":"oncall-bob"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin reject answered %d", resp.StatusCode)
	}
	after := e.waitDecided(m.TS)
	text := allText(after.Blocks)
	for _, want := range []string{"Rejected", "oncall-bob", "via admin", "audit still running"} {
		if !strings.Contains(text, want) {
			t.Errorf("updated message lacks %q:\n%s", want, text)
		}
	}
	if after.Channel != m.Channel || len(e.fake.topMessages()) != 1 {
		t.Fatalf("the decision posted a new message instead of updating in place")
	}
	// A click on the old buttons (a stale client) is answered, not applied.
	e.interact(e.click(m, slacknotify.ActionApprove, reviewer))
	if eph := e.fake.ephemeralsFor(reviewer); len(eph) != 1 || !strings.Contains(eph[0].Text, "Already decided") {
		t.Fatalf("late click answered %+v", eph)
	}
	if got := e.record(parked.ID).Status; got != memory.StatusRejected {
		t.Fatalf("late click changed the record to %s", got)
	}
}

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
