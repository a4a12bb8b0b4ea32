package slack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

// A Slack decision is bound to the version of the parked write its message
// showed: a callback captured before the write was re-parked is refused
// when replayed, even within the five minutes its signature is valid.

// moveSlot parks another write to project-alpha/publish.auto and approves
// it from the CLI, so the slot's head is no longer the one parked writes
// were parked against.
func (e *env) moveSlot() *memory.Record {
	e.t.Helper()
	other := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "publish.auto",
		Summary: "Auto-publish is ON again, for weekdays only"}).Record
	if _, err := e.gov.Approve(context.Background(), other.ID, memory.Review{By: "cli", Route: "cli"}); err != nil {
		e.t.Fatal(err)
	}
	return other
}

// showsVersion waits until the message's buttons carry the record's version.
func (e *env) showsVersion(ts string, rec *memory.Record) fakeMessage {
	e.t.Helper()
	var m fakeMessage
	testkit.Eventually(e.t, "the message with buttons of version "+rec.ParkVersion(), func() bool {
		m = e.fake.message(ts)
		v, ok := buttonValue(m.Blocks, slacknotify.ActionApprove)
		return ok && strings.Contains(v, `"v":"`+rec.ParkVersion()+`"`)
	})
	return m
}

func (e *env) approvals(id string) int {
	e.t.Helper()
	ex, err := e.gov.Explain(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range ex.Events {
		if ev.Type == memory.EventApproved || ev.Type == memory.EventDenied {
			n++
		}
	}
	return n
}

func TestReplayedApprovalOfAReparkedWriteIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)
	captured := formBody(e.click(m, slacknotify.ActionApprove, reviewer))
	signedAt := time.Now().Unix()

	// The slot moves on; the reviewer's click then finds it stale, and the
	// write is re-parked under the same id against the new head.
	other := e.moveSlot()
	if resp := e.post(captured, signedAt, secret, true); resp.StatusCode != http.StatusOK {
		t.Fatalf("the click answered %d", resp.StatusCode)
	}
	reparked := e.record(parked.ID)
	if reparked.Status != memory.StatusPending || reparked.ExpectedHead != other.ID || reparked.ParkVersion() == parked.ParkVersion() {
		t.Fatalf("after the stale click: %s against %q, version %s; want pending against %s with a new version",
			reparked.Status, reparked.ExpectedHead, reparked.ParkVersion(), other.ID)
	}
	current := e.showsVersion(m.TS, reparked)

	// The same callback again, byte for byte and signature for signature,
	// well within its five minutes: refused, nothing changes.
	if resp := e.post(captured, signedAt, secret, true); resp.StatusCode != http.StatusOK {
		t.Fatalf("the replay answered %d", resp.StatusCode)
	}
	after := e.record(parked.ID)
	if after.Status != memory.StatusPending || after.ParkVersion() != reparked.ParkVersion() || e.approvals(parked.ID) != 0 {
		t.Fatalf("the replay changed the write: %s, version %s, %d decisions", after.Status, after.ParkVersion(), e.approvals(parked.ID))
	}
	eph := e.fake.ephemeralsFor(reviewer)
	if len(eph) != 2 || !strings.Contains(eph[0].Text, "slot changed") {
		t.Fatalf("answers %+v: want the stale answer, then the replay's", eph)
	}
	if !strings.Contains(eph[1].Text, "older version") || !strings.Contains(eph[1].Text, "Nothing changed") || !strings.Contains(eph[1].Text, parked.ID) {
		t.Fatalf("the replay was answered %q", eph[1].Text)
	}

	// A fresh click on the message as it is now decides the version it shows.
	e.interact(e.click(current, slacknotify.ActionApprove, reviewer))
	got := e.record(parked.ID)
	if got.Status != memory.StatusActive || got.Review == nil || got.Review.Version != reparked.ParkVersion() {
		t.Fatalf("fresh approval: %s, review %+v; want active, bound to %s", got.Status, got.Review, reparked.ParkVersion())
	}
	e.waitDecided(m.TS)
}

func TestReplayedRejectOfAReparkedWriteIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)
	oldReject := e.click(m, slacknotify.ActionReject, reviewer)
	e.interact(oldReject)
	var views []fakeView
	testkit.Eventually(t, "the reject dialog", func() bool { views = e.fake.openedViews(); return len(views) == 1 })
	submit := submitView(t, views[0], reviewer, "not what the user said")

	// Re-parked while the dialog was open: an approval from the CLI found
	// the slot changed.
	e.moveSlot()
	if _, err := e.gov.Approve(context.Background(), parked.ID, memory.Review{By: "cli", Route: "cli"}); memory.ErrorCode(err) != memory.ESTALE {
		t.Fatalf("CLI approval after the slot moved: %v, want stale", err)
	}
	reparked := e.record(parked.ID)

	e.interact(submit)    // the dialog opened on the old version
	e.interact(oldReject) // the old Reject button again
	if got := e.record(parked.ID); got.Status != memory.StatusPending || got.ParkVersion() != reparked.ParkVersion() {
		t.Fatalf("record is %s at %s, want still pending at %s", got.Status, got.ParkVersion(), reparked.ParkVersion())
	}
	if n := len(e.fake.openedViews()); n != 1 {
		t.Fatalf("%d dialogs opened: the old button must not open one", n)
	}
	eph := e.fake.ephemeralsFor(reviewer)
	if len(eph) != 2 || !strings.Contains(eph[0].Text, "older version") || !strings.Contains(eph[1].Text, "older version") {
		t.Fatalf("answers %+v, want two 'older version' refusals", eph)
	}

	// Rejecting from the current message works.
	current := e.showsVersion(m.TS, reparked)
	e.interact(e.click(current, slacknotify.ActionReject, reviewer))
	testkit.Eventually(t, "a second dialog", func() bool { views = e.fake.openedViews(); return len(views) == 2 })
	e.interact(submitView(t, views[1], reviewer, "still wrong"))
	if got := e.record(parked.ID); got.Status != memory.StatusRejected || got.Review.Note != "still wrong" {
		t.Fatalf("fresh rejection: %s, %+v", got.Status, got.Review)
	}
}

// Buttons of messages posted by a memgate before versions carry the bare
// record id. They still decide a write that was never re-parked (it has had
// one version, the one they showed), and are refused for one that was.
func TestButtonsWithoutAVersion(t *testing.T) {
	legacy := func(e *env, m fakeMessage, action string) map[string]any {
		p := e.click(m, action, reviewer)
		var id struct {
			ID string `json:"id"`
		}
		a := p["actions"].([]map[string]any)[0]
		if err := json.Unmarshal([]byte(a["value"].(string)), &id); err != nil {
			t.Fatal(err)
		}
		a["value"] = id.ID
		return p
	}

	t.Run("never re-parked: decides", func(t *testing.T) {
		e := newEnv(t, nil)
		_, parked := e.parkOverride()
		e.interact(legacy(e, e.messageFor(parked.ID), slacknotify.ActionApprove))
		if got := e.record(parked.ID); got.Status != memory.StatusActive || got.Review.Version != parked.ParkVersion() {
			t.Fatalf("record %s, review %+v; want approved, bound to the first version", got.Status, got.Review)
		}
	})

	t.Run("re-parked: refused", func(t *testing.T) {
		e := newEnv(t, nil)
		_, parked := e.parkOverride()
		m := e.messageFor(parked.ID)
		e.moveSlot()
		if _, err := e.gov.Approve(context.Background(), parked.ID, memory.Review{By: "cli", Route: "cli"}); memory.ErrorCode(err) != memory.ESTALE {
			t.Fatalf("CLI approval: %v, want stale", err)
		}
		e.interact(legacy(e, m, slacknotify.ActionApprove))
		e.interact(legacy(e, m, slacknotify.ActionReject))
		if got := e.record(parked.ID).Status; got != memory.StatusPending {
			t.Fatalf("record is %s, want pending", got)
		}
		if n := len(e.fake.openedViews()); n != 0 {
			t.Fatalf("a button without a version opened %d dialogs", n)
		}
		eph := e.fake.ephemeralsFor(reviewer)
		if len(eph) != 2 || !strings.Contains(eph[0].Text, "older memgate") {
			t.Fatalf("answers %+v", eph)
		}
	})

	// Re-parked by a memgate that did not count re-parks yet: the count is
	// 0, the history has the stale event. Refused, and the message is
	// re-rendered with buttons that carry the version.
	t.Run("re-parked before versions: refused, message re-rendered", func(t *testing.T) {
		e := newEnv(t, nil)
		ctx := context.Background()
		_, parked := e.parkOverride()
		m := e.messageFor(parked.ID)
		e.moveSlot()
		if _, err := e.gov.Approve(ctx, parked.ID, memory.Review{By: "cli", Route: "cli"}); memory.ErrorCode(err) != memory.ESTALE {
			t.Fatalf("CLI approval: %v, want stale", err)
		}
		e.showsVersion(m.TS, e.record(parked.ID)) // the stale notice's refresh, out of the way
		old := e.record(parked.ID)
		old.Reparked = 0
		if err := e.st.Update(ctx, func(tx memory.Tx) error { return tx.PutRecord(old) }); err != nil {
			t.Fatal(err)
		}
		updates := e.fake.message(m.TS).Updates
		e.interact(legacy(e, m, slacknotify.ActionApprove))
		if got := e.record(parked.ID).Status; got != memory.StatusPending {
			t.Fatalf("record is %s, want pending", got)
		}
		if cur := e.fake.message(m.TS); cur.Updates <= updates {
			t.Fatal("the message was not re-rendered")
		}
		cur := e.showsVersion(m.TS, old)
		e.interact(e.click(cur, slacknotify.ActionApprove, reviewer))
		if got := e.record(parked.ID).Status; got != memory.StatusActive {
			t.Fatalf("click on the re-rendered message left %s", got)
		}
	})
}
