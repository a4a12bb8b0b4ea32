package notify_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
)

// A settings error (a revoked token, a bot not in the channel) is never
// dropped, even when the Notifier calls it permanent: the notice waits with
// a backoff that grows to Backoff.Max, each attempt is counted, and once
// the settings are fixed RetryNow delivers it without waiting the backoff out.
func TestOutboxNeverDropsANoticeForASettingsError(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	opts := notify.OutboxOptions{Poll: time.Hour, Now: clk.Now, Metrics: notify.NewMetrics(reg),
		Backoff: notify.Backoff{Initial: time.Minute, Max: 5 * time.Minute}}
	e := newEnv(t, opts)
	var fixed atomic.Bool
	rec := &recorder{answer: func(int, []*memory.Notice) (bool, error) {
		if fixed.Load() {
			return false, nil
		}
		// retry false: the outbox must keep it anyway.
		return false, &notify.DeliveryError{Reason: notify.ReasonConfig, Err: errors.New("invalid_auth")}
	}}
	parked := e.park("alpha")
	e.start(rec)

	// Each attempt waits about twice as long as the one before (±20 %
	// jitter), never longer than Max.
	for attempt, centre := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
		attempt++
		var n *memory.Notice
		testkit.Eventually(t, "the failed attempt recorded", func() bool {
			ns := e.notices()
			if len(ns) == 1 && ns[0].Attempts == attempt {
				n = ns[0]
			}
			return n != nil
		})
		wait := n.NextAttempt.Sub(clk.Now())
		if lo, hi := centre*8/10, min(centre*12/10, 5*time.Minute); wait < lo || wait > hi {
			t.Fatalf("attempt %d waits %s, want %s..%s", attempt, wait, lo, hi)
		}
		if n.LastError == "" || n.RecordID != parked.ID {
			t.Fatalf("notice after attempt %d: %+v", attempt, n)
		}
		clk.Advance(n.NextAttempt.Sub(clk.Now())) // the outbox schedules by this clock: no waiting
		e.outbox.Wake()
	}
	testkit.Eventually(t, "the sixth attempt", func() bool { return rec.callCount() == 6 })
	if v := testutil.ToFloat64(opts.Metrics.Dropped(notify.ReasonConfig)); v != 0 {
		t.Fatalf("dropped %v notices for a settings error", v)
	}
	testkit.Eventually(t, "six counted retries", func() bool { return testutil.ToFloat64(opts.Metrics.Retries(notify.ReasonConfig)) == 6 })

	// Fixed (the bot was invited): RetryNow delivers at once although the
	// clock has not reached the next attempt and the worker is paused.
	fixed.Store(true)
	e.outbox.RetryNow()
	testkit.Eventually(t, "delivery after RetryNow", func() bool { return len(rec.delivered()) == 1 })
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.notices()) == 0 })
	if r, err := e.gov.Get(context.Background(), parked.ID); err != nil || r.Status != memory.StatusPending {
		t.Fatalf("record %v, %v: it must still wait for review", r, err)
	}
}

// A failure only the one notice meets (an error the integration does not
// know) reschedules that notice alone: with an hour's backoff, a notice of
// another record is still delivered at once.
func TestOutboxThisNoticeOnlyFailureHoldsNoOneUp(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	e := newEnv(t, notify.OutboxOptions{Poll: time.Hour, Now: clk.Now,
		Backoff: notify.Backoff{Initial: time.Hour, Max: time.Hour}})
	first := e.park("alpha")
	second := e.park("beta")
	rec := &recorder{answer: func(_ int, b []*memory.Notice) (bool, error) {
		if b[0].RecordID == first.ID {
			return true, &notify.DeliveryError{Reason: notify.ReasonRejected, ThisNoticeOnly: true, Err: errors.New("some_new_error")}
		}
		return false, nil
	}}
	e.start(rec)
	testkit.Eventually(t, "the other record's notice", func() bool { return joined(rec.delivered()) == "parked:"+second.ID })
	n := e.notices()
	if len(n) != 1 || n[0].RecordID != first.ID || n[0].Attempts != 1 || !n[0].NextAttempt.After(clk.Now()) {
		t.Fatalf("outbox %+v: the failed notice must wait for its own retry", n)
	}
}
