package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
)

func TestWaitingItemsAreReannouncedNeverRejected(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	_, parked := e.parkOverride()
	m := e.messageFor(parked.ID)

	now := time.Now().UTC().Add(90 * time.Minute) // the item has waited an hour and a half
	rem := notify.NewReminder(notify.ReminderOptions{Store: e.st, KV: e.st, After: time.Hour,
		Now: func() time.Time { return now }, Waker: e.outbox})
	if n, err := rem.Check(ctx); err != nil || n != 1 {
		t.Fatalf("Check queued %d (err %v), want 1", n, err)
	}
	testkit.Eventually(t, "the reminder in the message's thread", func() bool { return len(e.fake.message(m.TS).Replies) == 1 })
	reply := e.fake.message(m.TS).Replies[0]
	if !reply.Broadcast || !strings.Contains(allText(reply.Blocks), "Still waiting for a decision") ||
		!strings.Contains(allText(reply.Blocks), parked.ID) {
		t.Fatalf("reminder %+v", reply)
	}
	if n := len(e.fake.topMessages()); n != 1 {
		t.Fatalf("%d top-level messages: a reminder replies in the thread", n)
	}
	if got := e.record(parked.ID).Status; got != memory.StatusPending {
		t.Fatalf("record is %s: time must never decide", got)
	}
	// Decided before the next reminder falls due: nothing more is said.
	if _, err := e.gov.Approve(ctx, parked.ID, memory.Review{By: reviewer, Route: "slack"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if n, err := rem.Check(ctx); err != nil || n != 0 {
		t.Fatalf("Check after the decision queued %d (err %v)", n, err)
	}
}
