package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memgate/memgate/memory"
)

// OutboxOptions configure an Outbox. Store is required.
type OutboxOptions struct {
	Store   memory.Store
	Logger  *slog.Logger
	Metrics *Metrics
	Now     func() time.Time
	Backoff Backoff
	// Poll is the backstop: the outbox is looked at at least this often even
	// if no Wake arrives (default 30s).
	Poll time.Duration
	// Timeout bounds one delivery (default 30s).
	Timeout time.Duration
	// Writable, if set, is asked before each pass: while it fails (the
	// disk is full, the database is down) nothing is delivered, since a
	// delivered notice that cannot be removed would be posted again and
	// again.
	Writable func() error
	// Instance names this outbox to a Store that is a Claimer (several
	// outboxes on one database): the owner of its leases. Default:
	// host, process id and a random suffix.
	Instance string
	// Lease is how long a claimed notice stays this outbox's (default and
	// least: twice Timeout, so a delivery ends before its lease does).
	Lease time.Duration
}

// Claimer is a Store that several outboxes share (the PostgreSQL store):
// each pass leases notices to one outbox instead of reading them all, so
// each notice is delivered by one of them.
type Claimer interface {
	// ClaimNotices leases to owner, until now+lease, up to limit
	// undelivered notices that no live lease holds, oldest first, and
	// returns them. Delivery deletes a notice (Update/DeleteNotice); a
	// rescheduled one is stored with PutNotice, which may keep or clear
	// its lease.
	ClaimNotices(ctx context.Context, owner string, lease time.Duration, limit int) ([]*memory.Notice, error)
}

// scanLimit bounds how many notices one pass reads; the oldest come first,
// which is all the ordering rules need.
const scanLimit = 1000

// batchesPerPass bounds the work between two looks at the outbox.
const batchesPerPass = 50

// Outbox delivers the notices the governor stored, oldest first.
//
// Rules:
//   - a notice is deleted only after its delivery succeeded;
//   - a retryable failure (unreachable, 5xx, 429) keeps the notice, counts
//     the attempt, stores the error and schedules the next attempt with
//     exponential backoff, never sooner than the server's Retry-After; the
//     worker then pauses all deliveries until that time, since a rate limit
//     or an outage applies to every notice alike;
//   - a failure of our settings (ReasonConfig: a wrong or revoked token, a
//     missing scope, a channel the bot is not in) is never dropped, whatever
//     the Notifier says: it is retried like an outage (the same curve, capped
//     at Backoff.Max), logged at error level, counted as
//     memgate_notify_retries_total{reason="config"} and alerted on; once the
//     settings are fixed, RetryNow sends what waits without waiting out the
//     backoff;
//   - a retried failure marked ThisNoticeOnly (an error the integration does
//     not know) reschedules that notice alone: the others keep flowing;
//   - a permanent failure (a message the service can never take, e.g. too
//     long) is not retried: the notice is dropped, logged at error level and
//     counted in memgate_notify_dropped_total. The record itself loses
//     nothing: it stays in the review queue (CLI, admin API) and the
//     Reminder re-announces pending items;
//   - retryable failures are retried forever: an outage loses nothing.
//
// Delivery is at least once: a crash after a message was posted but before
// its notice was deleted posts it again after the restart.
//
// When the Store is a Claimer, outboxes on several instances share it:
// each pass claims notices (a lease of Lease to Instance) and delivers only
// those it holds. The ordering rules still read every undelivered notice: a
// held notice waits while an older one of its record is held by another
// outbox, and is looked at again soon (Backoff.Initial) for as long as the
// lease lasts. Nothing is sent within Timeout of a lease's end, and a
// rescheduled notice is let go (the store may clear its lease): either goes
// back to every outbox when its lease ends. Each notice is then delivered
// once, by one outbox; twice only across a crash, as above.
type Outbox struct {
	store    memory.Store
	claimer  Claimer // the Store, when it leases notices; nil otherwise
	instance string
	lease    time.Duration
	held     map[string]time.Time // claimed notices → lease end; the worker's only
	log      *slog.Logger
	metrics  *Metrics
	now      func() time.Time
	backoff  Backoff
	poll     time.Duration
	timeout  time.Duration
	wake     chan struct{}
	writable func() error
	retryNow atomic.Bool // set by RetryNow, taken by the worker's next pass
	running  atomic.Bool // Run is running: one worker at a time
}

var _ Waker = (*Outbox)(nil)

// NewOutbox returns an Outbox with defaults filled in; Run runs it.
func NewOutbox(o OutboxOptions) *Outbox {
	ob := &Outbox{store: o.Store, log: o.Logger, metrics: o.Metrics, now: o.Now,
		backoff: o.Backoff.withDefaults(), poll: o.Poll, timeout: o.Timeout, wake: make(chan struct{}, 1),
		writable: o.Writable}
	if ob.log == nil {
		ob.log = slog.New(slog.DiscardHandler)
	}
	if ob.now == nil {
		ob.now = func() time.Time { return time.Now().UTC() }
	}
	if ob.poll <= 0 {
		ob.poll = 30 * time.Second
	}
	if ob.timeout <= 0 {
		ob.timeout = 30 * time.Second
	}
	if c, ok := o.Store.(Claimer); ok {
		ob.claimer, ob.instance, ob.lease = c, o.Instance, max(o.Lease, 2*ob.timeout)
		ob.held = map[string]time.Time{}
		if ob.instance == "" {
			ob.instance = DefaultInstance()
		}
	}
	return ob
}

// DefaultInstance names this process among others sharing a store: host,
// process id and a random suffix (two outboxes of one process differ).
func DefaultInstance() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "memgate"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Wake tells the worker there is something new to deliver. It never blocks
// and is safe before Run (the signal waits) and on a nil Outbox.
func (o *Outbox) Wake() {
	if o == nil {
		return
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// RetryNow tells the worker to deliver every waiting notice now instead of
// when its backoff ends, and to end a pause: call it when a problem that
// failed every delivery is known to be fixed (the Slack check passes again
// after a bot was invited to its channel). Safe before Run and on a nil
// Outbox; a notice that fails again is rescheduled as usual.
func (o *Outbox) RetryNow() {
	if o == nil {
		return
	}
	o.retryNow.Store(true)
	o.Wake()
}

// Run delivers through n until ctx ends, then returns nil; an outbox
// without a store or notifier, or one already running, is an error. An
// interrupted delivery leaves its notice in the outbox for the next run.
// The notifier is Run's argument, not an option, because it is made after
// the outbox: the outbox wakes the governor's notices, and the integration
// that delivers them (Slack) needs the governor.
func (o *Outbox) Run(ctx context.Context, n Notifier) error {
	if o.store == nil || n == nil {
		return errors.New("notify: an outbox needs a store and a notifier")
	}
	if !o.running.CompareAndSwap(false, true) {
		return errors.New("notify: outbox already running")
	}
	defer o.running.Store(false)
	o.run(ctx, n)
	return nil
}

func (o *Outbox) run(ctx context.Context, n Notifier) {
	o.log.Info("notification outbox started")
	defer o.log.Info("notification outbox stopped")
	var pausedUntil time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wait := o.poll
		early := o.retryNow.Swap(false)
		if early {
			pausedUntil = time.Time{}
		}
		if now := o.now(); now.Before(pausedUntil) {
			wait = min(wait, pausedUntil.Sub(now))
		} else {
			var next time.Time
			next, pausedUntil = o.pass(ctx, n, early)
			if !pausedUntil.IsZero() {
				next = pausedUntil
			}
			if !next.IsZero() {
				wait = min(wait, max(next.Sub(o.now()), time.Millisecond))
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-o.wake:
			timer.Stop() // Go 1.23+: no stale tick is delivered after Stop
		}
	}
}

// pass delivers what is due until nothing is, or until a retryable failure
// pauses the worker. It returns when the next notice falls due (zero: none
// waiting) and, after a retryable failure, until when to pause. early
// (RetryNow) takes every waiting notice in its first round, due or not;
// later rounds keep to the schedule, so a notice that fails again waits.
func (o *Outbox) pass(ctx context.Context, n Notifier, early bool) (next, pausedUntil time.Time) {
	if o.writable != nil {
		if err := o.writable(); err != nil {
			o.log.Warn("outbox paused: the store takes no writes, so delivered notices could not be removed", "err", err)
			return time.Time{}, o.now().Add(min(o.backoff.Max, 10*time.Second))
		}
	}
	for ctx.Err() == nil {
		outbox, err := o.load(ctx)
		if err != nil {
			o.log.Error("reading the notification outbox", "err", err)
			return o.now().Add(o.backoff.Initial), time.Time{}
		}
		now := o.now()
		dueBy := now
		if early {
			dueBy, early = farFuture, false
		}
		var mine func(*memory.Notice) bool
		if o.claimer != nil {
			mine = o.mine
		}
		batches := plan(outbox, dueBy, batchesPerPass, mine)
		if len(batches) == 0 {
			next = nextDue(outbox, now)
			if o.waitsBehind(outbox, dueBy) { // another outbox delivers the older notice meanwhile
				if soon := now.Add(o.backoff.Initial); next.IsZero() || soon.Before(next) {
					next = soon
				}
			}
			return next, time.Time{}
		}
		for _, b := range batches {
			if mine != nil && slices.ContainsFunc(b, func(n *memory.Notice) bool { return !o.mine(n) }) {
				continue // its lease ran short meanwhile: it goes back when it ends
			}
			if until, stop := o.deliver(ctx, n, b); stop {
				return time.Time{}, until
			}
		}
	}
	return time.Time{}, time.Time{}
}

// mine reports whether this outbox holds n's lease long enough to deliver
// it (a shared outbox).
func (o *Outbox) mine(n *memory.Notice) bool {
	until, ok := o.held[n.ID]
	return ok && o.now().Add(o.timeout).Before(until)
}

// waitsBehind reports whether this outbox holds a notice due by dueBy that
// plan held back: an older notice of its record is another outbox's.
func (o *Outbox) waitsBehind(outbox []*memory.Notice, dueBy time.Time) bool {
	return o.claimer != nil && slices.ContainsFunc(outbox, func(n *memory.Notice) bool {
		return o.mine(n) && !n.NextAttempt.After(dueBy)
	})
}

// farFuture is a due time every notice's NextAttempt is before.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// load reads the undelivered notices, oldest first. A shared outbox first
// claims what it can, and reads all the same: the ordering rules need the
// others too. It then forgets claims whose notice is gone or whose lease
// ended.
func (o *Outbox) load(ctx context.Context) ([]*memory.Notice, error) {
	if o.claimer != nil {
		at := o.now()
		ns, err := o.claimer.ClaimNotices(ctx, o.instance, o.lease, scanLimit)
		if err != nil {
			return nil, fmt.Errorf("notify: claim notices: %w", err)
		}
		for _, n := range ns {
			o.held[n.ID] = at.Add(o.lease)
		}
		if len(o.held) == 0 {
			return nil, nil
		}
	}
	var out []*memory.Notice
	err := o.store.View(ctx, func(tx memory.ReadTx) error {
		return tx.ScanNotices(func(n *memory.Notice) bool {
			out = append(out, n)
			return len(out) < scanLimit
		})
	})
	if err != nil || o.claimer == nil {
		return out, err
	}
	present := make(map[string]bool, len(out))
	for _, n := range out {
		present[n.ID] = true
	}
	now := o.now()
	for id, until := range o.held {
		if !present[id] || !now.Before(until) {
			delete(o.held, id)
		}
	}
	return out, nil
}

// deliver sends one batch and records the outcome. stop is true when the
// worker must pause (until) or end.
func (o *Outbox) deliver(ctx context.Context, n Notifier, batch []*memory.Notice) (until time.Time, stop bool) {
	dctx, cancel := context.WithTimeout(ctx, o.timeout)
	retry, err := n.Notify(dctx, batch)
	cancel()
	kind, first := string(batch[0].Kind), batch[0]
	// Bookkeeping finishes even while stopping: a delivered notice that is
	// not removed would be delivered again.
	book := context.WithoutCancel(ctx)
	switch {
	case err == nil:
		if err := o.remove(book, batch); err != nil {
			o.log.Error("removing delivered notices from the outbox; they will be delivered again", "err", err, "notice", first.ID)
			return o.now().Add(o.backoff.Initial), true
		}
		o.metrics.onDelivered(kind, len(batch))
		o.log.Debug("notice delivered", "kind", kind, "notice", first.ID, "record", first.RecordID, "batch", len(batch))
		return time.Time{}, false
	case ctx.Err() != nil:
		return time.Time{}, true // stopping: the notice stays as it was
	case retry || reasonOf(err) == ReasonConfig: // a settings error is never dropped
		reason := reasonOf(err)
		o.metrics.onRetry(reason)
		attempts := 0
		for _, x := range batch {
			attempts = max(attempts, x.Attempts)
		}
		attempts++
		next := o.now().Add(o.backoff.delay(attempts, retryAfterOf(err)))
		attrs := []any{"kind", kind, "notice", first.ID, "record", first.RecordID,
			"attempt", attempts, "reason", reason, "next", next, "err", err}
		if reason == ReasonConfig {
			o.log.Error("notice delivery refused: the integration's settings are wrong; the notice waits in the outbox and is retried", attrs...)
		} else {
			o.log.Warn("notice delivery failed; will retry", attrs...)
		}
		serr := o.reschedule(book, batch, attempts, next, err)
		for _, x := range batch {
			delete(o.held, x.ID) // stored anew: the store may have cleared its lease
		}
		if serr != nil {
			o.log.Error("recording a failed delivery in the outbox", "err", serr, "notice", first.ID)
		}
		if thisNoticeOnly(err) && serr == nil {
			return time.Time{}, false // the others go on; plan skips this one until next
		}
		return next, true
	default:
		reason := reasonOf(err)
		o.metrics.onDropped(reason, len(batch))
		o.log.Error("notice delivery failed permanently; dropped from the outbox (the record stays in the review queue)",
			"kind", kind, "notice", first.ID, "record", first.RecordID, "reason", reason, "err", err)
		if err := o.remove(book, batch); err != nil {
			o.log.Error("dropping a notice from the outbox", "err", err, "notice", first.ID)
			return o.now().Add(o.backoff.Initial), true
		}
		return time.Time{}, false
	}
}

func (o *Outbox) remove(ctx context.Context, batch []*memory.Notice) error {
	return o.store.Update(ctx, func(tx memory.Tx) error {
		for _, n := range batch {
			if err := tx.DeleteNotice(n.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// maxErrorLen bounds the error text stored with a notice.
const maxErrorLen = 500

func (o *Outbox) reschedule(ctx context.Context, batch []*memory.Notice, attempts int, next time.Time, cause error) error {
	msg := cause.Error()
	if len(msg) > maxErrorLen {
		msg = strings.ToValidUTF8(msg[:maxErrorLen], "")
	}
	return o.store.Update(ctx, func(tx memory.Tx) error {
		for _, n := range batch {
			c := *n
			c.Attempts, c.NextAttempt, c.LastError = attempts, next, msg
			if err := tx.PutNotice(&c); err != nil {
				return err
			}
		}
		return nil
	})
}
