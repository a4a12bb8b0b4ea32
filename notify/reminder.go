package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// KV namespaces the Reminder keeps, per record, the due time of the last
// round it re-announced: queued by any instance (remindNamespace), and
// delivered (sentNamespace, written by Once before the outbox deletes the
// notice).
const (
	remindNamespace = "remind"
	sentNamespace   = "remind-sent"
)

// ReminderOptions configure a Reminder. Store and KV are required.
type ReminderOptions struct {
	Store memory.Store
	KV    storeapi.KV
	// After is how long an item waits before it is re-announced, and again
	// after each further After (default 1h).
	After time.Duration
	// Every is how often the queue is looked at (default After/4, at most 1m).
	Every  time.Duration
	Waker  Waker // told when reminders were queued (the Outbox)
	Logger *slog.Logger
	Now    func() time.Time
}

// Reminder re-announces parked writes that have waited longer than After by
// putting reminder notices into the outbox. It never decides anything: a
// pending item waits for a human however long it takes.
//
// Several instances on one shared store each run a Reminder, and each
// re-announces a record once per round: the n-th round falls due n·After
// after the record was parked, and its notice is the same for every
// instance (its id a ULID made from the record and the round), so
// instances that queue it together store one notice, which one outbox
// claims and delivers. An instance that read the queue before that notice
// was delivered and deleted may store it again afterwards; Once, around
// the outbox's notifier, drops it then: the delivery of a round is
// recorded in the KV area before its notice is deleted. (The KV area has
// no compare-and-swap, so the guard sits at delivery, where the outbox's
// lease already makes one instance the only deliverer of a notice.)
type Reminder struct {
	store memory.Store
	kv    storeapi.KV
	after time.Duration
	every time.Duration
	waker Waker
	log   *slog.Logger
	now   func() time.Time

	running atomic.Bool // Run is running: one loop at a time
}

// NewReminder returns a Reminder with defaults filled in; Run runs it.
func NewReminder(o ReminderOptions) *Reminder {
	r := &Reminder{store: o.Store, kv: o.KV, after: o.After, every: o.Every, waker: o.Waker,
		log: o.Logger, now: o.Now}
	if r.after <= 0 {
		r.after = time.Hour
	}
	if r.every <= 0 {
		r.every = min(r.after/4, time.Minute)
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = func() time.Time { return time.Now().UTC() }
	}
	return r
}

// Run looks at the queue every Every until ctx ends, then returns nil; a
// reminder without a store or key-value area, or one already running, is
// an error.
func (r *Reminder) Run(ctx context.Context) error {
	if r.store == nil || r.kv == nil {
		return errors.New("notify: a reminder needs a store and a key-value area")
	}
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("notify: reminder already running")
	}
	defer r.running.Store(false)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		if _, err := r.Check(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("checking the review queue for reminders", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check queues a reminder for every pending item whose current round has
// come (it has waited at least After since it was parked, and each After
// since then starts a round) and was not re-announced yet, unless one is
// already queued for it. It returns how many it queued.
func (r *Reminder) Check(ctx context.Context) (int, error) {
	now := r.now()
	var pending []*memory.Record
	queued := map[string]bool{}
	err := r.store.View(ctx, func(tx memory.ReadTx) error {
		if err := tx.ScanPending(func(rec *memory.Record) bool {
			if now.Sub(rec.CreatedAt) >= r.after {
				pending = append(pending, rec)
			}
			return true
		}); err != nil {
			return err
		}
		return tx.ScanNotices(func(n *memory.Notice) bool {
			if n.Kind == memory.NoticeReminder {
				queued[n.RecordID] = true
			}
			return true
		})
	})
	if err != nil {
		return 0, fmt.Errorf("reminder: reading the queue: %w", err)
	}
	var due []*memory.Notice
	for _, rec := range pending {
		if queued[rec.ID] {
			continue
		}
		n := r.roundNotice(rec, now)
		reminded, err := r.lastRound(ctx, rec.ID)
		if err != nil {
			return 0, err
		}
		if !reminded.Before(n.At) {
			continue // this round was re-announced
		}
		due = append(due, n)
	}
	if len(due) == 0 {
		return 0, nil
	}
	err = r.store.Update(ctx, func(tx memory.Tx) error {
		for _, n := range due {
			if err := tx.PutNotice(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reminder: queueing: %w", err)
	}
	// Written after the notices: a crash in between re-announces once more,
	// which is better than never.
	for _, n := range due {
		stamp, _ := n.At.MarshalText()
		if err := r.kv.Put(ctx, remindNamespace, n.RecordID, stamp); err != nil {
			return len(due), fmt.Errorf("reminder: %w", err)
		}
	}
	r.log.Info("re-announcing parked writes that wait for a decision", "count", len(due), "after", r.after.String())
	if r.waker != nil {
		r.waker.Wake()
	}
	return len(due), nil
}

// roundNotice is the reminder of rec's current round as every instance
// makes it: id, time (the round's due time) and text depend only on the
// record and the round.
func (r *Reminder) roundNotice(rec *memory.Record, now time.Time) *memory.Notice {
	round := max(now.Sub(rec.CreatedAt)/r.after, 1)
	due := rec.CreatedAt.Add(round * r.after)
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", rec.ID, round))
	id := ulid.MustNew(ulid.Timestamp(due), bytes.NewReader(sum[:])).String()
	return &memory.Notice{ID: id, Kind: memory.NoticeReminder, RecordID: rec.ID, At: due,
		Text: fmt.Sprintf("waiting for a decision for %s", due.Sub(rec.CreatedAt).Round(time.Second))}
}

// lastRound returns the due time of the last round of record id that was
// queued or delivered (zero: none).
func (r *Reminder) lastRound(ctx context.Context, id string) (time.Time, error) {
	queued, err := r.stamp(ctx, remindNamespace, id)
	if err != nil {
		return time.Time{}, err
	}
	sent, err := r.stamp(ctx, sentNamespace, id)
	if err != nil {
		return time.Time{}, err
	}
	if sent.After(queued) {
		return sent, nil
	}
	return queued, nil
}

// Once wraps the outbox's notifier so that each round's reminder is
// delivered once, however many instances queued it (see Reminder): a
// reminder whose round went out already is dropped unsent, and a delivered
// one is recorded before the outbox deletes it. Other notices pass
// through.
func (r *Reminder) Once(next Notifier) Notifier {
	return NotifierFunc(func(ctx context.Context, batch []*memory.Notice) (bool, error) {
		var send, rounds []*memory.Notice
		for _, n := range batch {
			if n.Kind != memory.NoticeReminder {
				send = append(send, n)
				continue
			}
			sent, err := r.stamp(ctx, sentNamespace, n.RecordID)
			if err != nil {
				return true, &DeliveryError{Reason: ReasonInternal, ThisNoticeOnly: true, Err: err}
			}
			if !sent.Before(n.At) {
				r.log.Debug("reminder already delivered for this round; dropped", "notice", n.ID, "record", n.RecordID)
				continue
			}
			send, rounds = append(send, n), append(rounds, n)
		}
		if len(send) == 0 {
			return false, nil // the outbox deletes the duplicates
		}
		if retry, err := next.Notify(ctx, send); err != nil {
			return retry, err
		}
		for _, n := range rounds {
			stamp, _ := n.At.MarshalText()
			if err := r.kv.Put(ctx, sentNamespace, n.RecordID, stamp); err != nil {
				// Delivered: failing now would post it again. Another
				// instance's late copy of it may then be posted too.
				r.log.Error("recording a delivered reminder", "err", err, "record", n.RecordID)
			}
		}
		return false, nil
	})
}

// stamp reads a time the Reminder keeps under key id (zero: none, or
// unreadable).
func (r *Reminder) stamp(ctx context.Context, namespace, id string) (time.Time, error) {
	b, err := r.kv.Get(ctx, namespace, id)
	if errors.Is(err, storeapi.ErrNotFound) {
		return time.Time{}, nil
	} else if err != nil {
		return time.Time{}, fmt.Errorf("reminder: %w", err)
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return time.Time{}, nil // unreadable: treat as never reminded
	}
	return t, nil
}
