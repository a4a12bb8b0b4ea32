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

// The backstop poll is an hour in these tests: deliveries that happen prove
// the governor's Wake reached the worker.
var quickOpts = notify.OutboxOptions{Poll: time.Hour, Backoff: notify.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond}}

func TestOutboxDeliversOnWakeAndDeletes(t *testing.T) {
	e := newEnv(t, quickOpts)
	rec := &recorder{}
	e.start(rec)
	r := e.park("alpha")
	testkit.Eventually(t, "the parked notice", func() bool { return len(rec.delivered()) == 1 })
	if got, want := joined(rec.delivered()), "parked:"+r.ID; got != want {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.notices()) == 0 })
}

func TestOutboxRetriesWithBackoffAndRetryAfter(t *testing.T) {
	e := newEnv(t, quickOpts)
	rateLimited := &notify.DeliveryError{Reason: notify.ReasonRateLimited, RetryAfter: 300 * time.Millisecond, Err: errors.New("429")}
	var times []time.Time
	rec := &recorder{answer: func(call int, _ []*memory.Notice) (bool, error) {
		times = append(times, time.Now())
		switch call {
		case 1, 2:
			return true, &notify.DeliveryError{Reason: notify.ReasonServerError, Err: errors.New("503")}
		case 3:
			return true, rateLimited
		}
		return false, nil
	}}
	r := e.park("alpha")
	e.start(rec)
	// After the first failure the notice is still there, with its attempt.
	testkit.Eventually(t, "a recorded failure", func() bool {
		n := e.notices()
		return len(n) == 1 && n[0].Attempts >= 1 && n[0].LastError != "" && !n[0].NextAttempt.IsZero()
	})
	testkit.Eventually(t, "delivery after the outage", func() bool { return len(rec.delivered()) == 1 })
	if got := rec.delivered()[0]; got != "parked:"+r.ID {
		t.Fatalf("delivered %q", got)
	}
	if rec.callCount() != 4 {
		t.Fatalf("%d calls, want 4 (503, 503, 429, ok)", rec.callCount())
	}
	if gap := times[3].Sub(times[2]); gap < 280*time.Millisecond {
		t.Fatalf("retried %s after a 429 with Retry-After 300ms", gap)
	}
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.notices()) == 0 })
}

func TestOutboxDropsPermanentFailures(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := quickOpts
	opts.Metrics = notify.NewMetrics(reg)
	e := newEnv(t, opts)
	first := e.park("alpha")
	second := e.park("beta")
	rec := &recorder{answer: func(_ int, b []*memory.Notice) (bool, error) {
		if b[0].RecordID == first.ID {
			return false, &notify.DeliveryError{Reason: notify.ReasonClientError, Err: errors.New("413 request entity too large")}
		}
		return false, nil
	}}
	e.start(rec)
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.notices()) == 0 })
	if got, want := joined(rec.delivered()), "parked:"+second.ID; got != want {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	if rec.callCount() != 2 {
		t.Fatalf("%d calls: a permanent failure must not be retried", rec.callCount())
	}
	if v := testutil.ToFloat64(opts.Metrics.Dropped(notify.ReasonClientError)); v != 1 {
		t.Fatalf("dropped counter %v, want 1", v)
	}
	// The record itself is untouched: still waiting for a human.
	if got, _ := e.gov.Get(context.Background(), first.ID); got.Status != memory.StatusPending {
		t.Fatalf("record is %s, want pending", got.Status)
	}
}

func TestOutboxKeepsRecordOrder(t *testing.T) {
	e := newEnv(t, quickOpts)
	r := e.park("alpha")
	if _, err := e.gov.Approve(context.Background(), r.ID, memory.Review{By: "cli", Route: "cli"}); err != nil {
		t.Fatal(err)
	}
	other := e.park("beta")
	// The parked notice fails once; its decision must not overtake it, while
	// another record's notice is not held up for longer than the pause.
	rec := &recorder{answer: func(call int, b []*memory.Notice) (bool, error) {
		if call == 1 {
			return true, &notify.DeliveryError{Reason: notify.ReasonNetwork, Err: errors.New("connection refused")}
		}
		return false, nil
	}}
	e.start(rec)
	testkit.Eventually(t, "three deliveries", func() bool { return len(rec.delivered()) == 3 })
	got := rec.delivered()
	pos := map[string]int{}
	for i, g := range got {
		pos[g] = i
	}
	if pos["parked:"+r.ID] > pos["decided:"+r.ID] {
		t.Fatalf("decided before parked: %v", got)
	}
	if _, ok := pos["parked:"+other.ID]; !ok {
		t.Fatalf("other record not delivered: %v", got)
	}
}

func TestOutboxSurvivesRestart(t *testing.T) {
	e := newEnv(t, quickOpts)
	down := &recorder{answer: func(int, []*memory.Notice) (bool, error) {
		return true, &notify.DeliveryError{Reason: notify.ReasonNetwork, Err: errors.New("dial tcp: connection refused")}
	}}
	e.start(down)
	r := e.park("alpha")
	testkit.Eventually(t, "a failed attempt", func() bool { n := e.notices(); return len(n) == 1 && n[0].Attempts >= 1 })

	e.restart()
	if n := e.notices(); len(n) != 1 || n[0].RecordID != r.ID {
		t.Fatalf("after restart the outbox holds %+v", n)
	}
	up := &recorder{}
	e.start(up)
	// No new transition wakes this worker: it finds the old notice by itself.
	testkit.Eventually(t, "delivery after the restart", func() bool { return len(up.delivered()) == 1 })
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.notices()) == 0 })
}

func TestOutboxCoalescesRollbacksOfOneTransaction(t *testing.T) {
	e := newEnv(t, quickOpts)
	ctx := context.Background()
	var ids []string
	for _, s := range []string{"one", "two", "three"} {
		res, err := e.gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "proj", FactType: "fact",
			Summary: s, Actor: memory.Actor{RunID: "run-1"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Record.ID)
	}
	if _, err := e.gov.Rollback(ctx, ids[0], true, "bad run", "ops"); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	e.start(rec)
	testkit.Eventually(t, "the rollback batch", func() bool { return len(rec.delivered()) == 3 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.batches) != 1 {
		t.Fatalf("%d batches, want one for one cascade", len(rec.batches))
	}
}

// While the store takes no writes (a full disk), nothing is delivered: a
// notice posted but not removed would be posted again on every pass. When
// writes work again, each notice is delivered once.
func TestOutboxPausesWhileTheStoreTakesNoWrites(t *testing.T) {
	var full atomic.Bool
	full.Store(true)
	opts := quickOpts
	opts.Writable = func() error {
		if full.Load() {
			return memory.Errorf(memory.EINSUFFICIENTSTORAGE, "the disk is full")
		}
		return nil
	}
	e := newEnv(t, opts)
	rec := &recorder{}
	r := e.park("alpha")
	e.start(rec)
	time.Sleep(200 * time.Millisecond) // several passes' worth of the quick backoff
	if n := rec.callCount(); n != 0 {
		t.Fatalf("%d deliveries while the store took no writes, want 0", n)
	}
	full.Store(false)
	e.outbox.Wake()
	testkit.Eventually(t, "delivery once writes work", func() bool { return len(rec.delivered()) == 1 })
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.notices()) == 0 })
	if got := joined(rec.delivered()); got != "parked:"+r.ID {
		t.Fatalf("delivered %q, want exactly one parked:%s", got, r.ID)
	}
}

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
