package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

// upTo cuts s to at most n bytes on a character boundary.
func upTo(s string, n int) string {
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// Every call memgate makes to Slack in a write's whole life (announcement,
// reminder, reject dialog, stale refusal and its thread reply, a replay's
// answer, the decision's update, rollback and quarantine announcements)
// stays within Slack's limits when every field is as large as memgate
// accepts, or, for reasons and names operators give, far larger.
func TestEverythingSentToSlackStaysWithinLimits(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	unit := "项目阿尔法 <!channel> & <@U1> 🚀 `code` *bold* _it_ ~s~ "
	long := strings.Repeat(unit, 20000/len(unit))
	summary := upTo(long, memory.MaxSummaryBytes)
	id := upTo(strings.Repeat("<&>发布🚀", 64), memory.MaxIDLen)
	// Reasons, notes and names as long as the governor takes them
	// (memory.MaxNoteBytes): far more than a Slack message holds.
	huge := upTo(strings.Repeat(unit, 2000), memory.MaxNoteBytes)
	subject, fact := "项目-"+upTo(id, 200), upTo(id, memory.MaxIDLen)

	old := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: subject, FactType: fact, Summary: summary,
		Actor: memory.Actor{RunID: "run-big"}}).Record
	parked := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: subject, FactType: fact, Summary: upTo("OFF "+summary, memory.MaxSummaryBytes),
		Value:           json.RawMessage(`{"text":"` + strings.Repeat("x", memory.MaxValueBytes-20) + `"}`),
		CandidateSource: memory.SourceInference,
		Evidence:        memory.Evidence{Excerpt: upTo(long, 12<<10), SourceRef: upTo(long, 4<<10)},
		Actor:           memory.Actor{AgentID: id, UserID: id, RunID: id, SessionID: id, Dialect: "mem0", Client: id}}).Record
	if parked.Status != memory.StatusPending {
		t.Fatalf("write is %s, want parked", parked.Status)
	}
	m := e.messageFor(parked.ID)
	captured := e.click(m, slacknotify.ActionApprove, reviewer)

	// A reminder in the thread.
	later := time.Now().UTC().Add(90 * time.Minute)
	rem := notify.NewReminder(notify.ReminderOptions{Store: e.st, KV: e.st, After: time.Hour,
		Now: func() time.Time { return later }, Waker: e.outbox})
	if _, err := rem.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// The reject dialog.
	e.interact(e.click(m, slacknotify.ActionReject, reviewer))
	testkit.Eventually(t, "the reject dialog", func() bool { return len(e.fake.openedViews()) == 1 })
	// The slot moves on; the captured approval is refused as stale, and
	// replayed it is refused as an older version.
	other := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: subject, FactType: fact, Summary: upTo("ON "+summary, memory.MaxSummaryBytes)}).Record
	if _, err := e.gov.Approve(ctx, other.ID, memory.Review{By: huge, Route: "admin", Note: huge}); err != nil {
		t.Fatal(err)
	}
	e.interact(captured)
	e.interact(captured)
	// Decided by an operator with a huge name and reason; then rollbacks
	// and a quarantine, with huge reasons.
	if _, err := e.gov.Reject(ctx, parked.ID, memory.Review{By: huge, Route: "admin", Note: huge}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gov.Rollback(ctx, other.ID, false, huge, huge); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gov.Quarantine(ctx, "run", old.Actor.RunID, huge, huge); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the outbox to drain", func() bool { return len(e.outboxNotices()) == 0 })

	length := func(s string) int { return len(utf16.Encode([]rune(s))) }
	counts := map[string]int{}
	clipped := false
	for _, method := range []string{"chat.postMessage", "chat.update", "chat.postEphemeral"} {
		for i, c := range e.fake.callsTo(method) {
			counts[method]++
			text := c.Form.Get("text")
			limit := 300
			if method == "chat.postEphemeral" {
				limit = 3000
			}
			if text == "" || length(text) > limit || !utf8.ValidString(text) {
				t.Errorf("%s #%d: text of %d characters (limit %d)", method, i, length(text), limit)
			}
			if method == "chat.postEphemeral" {
				continue
			}
			var blocks []any
			if err := json.Unmarshal([]byte(c.Form.Get("blocks")), &blocks); err != nil || len(blocks) == 0 || len(blocks) > 50 {
				t.Errorf("%s #%d: %d blocks (err %v)", method, i, len(blocks), err)
			}
			slacknotify.CheckSlackLimits(t, method, blocks)
			clipped = clipped || strings.Contains(c.Form.Get("blocks"), "…")
		}
	}
	for _, v := range e.fake.openedViews() {
		slacknotify.CheckSlackLimits(t, "views.open", v.View)
	}
	// announce ×2 (the write, the other), reminder, stale thread reply,
	// rollback, quarantine; updates for the stale refresh and the
	// decisions; answers to the stale click and the replay.
	if counts["chat.postMessage"] < 6 || counts["chat.update"] < 2 || counts["chat.postEphemeral"] < 2 || len(e.fake.openedViews()) != 1 {
		t.Fatalf("calls %v, %d dialogs: not every kind of message was sent", counts, len(e.fake.openedViews()))
	}
	if !clipped {
		t.Error("no text says it was cut (…)")
	}
}
