package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
)

func TestReminderReannouncesAndNeverDecides(t *testing.T) {
	e := newEnv(t, quickOpts)
	ctx := context.Background()
	waiting := e.park("alpha")
	decided := e.park("beta")
	if _, err := e.gov.Reject(ctx, decided.ID, memory.Review{By: "cli", Route: "cli"}); err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(time.Now().UTC())
	rem := notify.NewReminder(notify.ReminderOptions{Store: e.st, KV: e.st, After: time.Hour, Now: clock.Now, Waker: e.outbox})
	check := func(want int) {
		t.Helper()
		n, err := rem.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("queued %d reminders, want %d", n, want)
		}
	}
	reminders := e.reminders

	check(0) // not waiting long enough yet
	clock.Advance(time.Hour)
	check(1)
	if r := reminders(); len(r) != 1 || r[0].RecordID != waiting.ID {
		t.Fatalf("reminders %+v, want one for %s", r, waiting.ID)
	}
	check(0) // one already queued: not twice

	// Delivered (the worker deletes it); no new reminder before another hour.
	rec := &recorder{}
	e.start(rec)
	testkit.Eventually(t, "reminder delivered", func() bool { return len(reminders()) == 0 })
	clock.Advance(30 * time.Minute)
	check(0)
	clock.Advance(30 * time.Minute)
	check(1)

	// A week later it still waits for a human: time never rejects it.
	clock.Advance(7 * 24 * time.Hour)
	if got, _ := e.gov.Get(ctx, waiting.ID); got.Status != memory.StatusPending {
		t.Fatalf("record is %s after a week, want pending", got.Status)
	}
}
