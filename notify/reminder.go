package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// KV is the small key-value area beside the records (store.Store's Get and
// Put); Get returns an error wrapping store.ErrNotFound for a missing key.
type KV interface {
	Get(ctx context.Context, namespace, key string) ([]byte, error)
	Put(ctx context.Context, namespace, key string, value []byte) error
}

// remindNamespace keeps, per record, when it was last re-announced.
const remindNamespace = "remind"

// ReminderOptions configure a Reminder. Store and KV are required.
type ReminderOptions struct {
	Store memory.Store
	KV    KV
	// After is how long an item waits before it is re-announced, and again
	// after each further After (default 1h).
	After time.Duration
	// Every is how often the queue is looked at (default After/4, at most 1m).
	Every  time.Duration
	Waker  Waker // told when reminders were queued (the Outbox)
	Logger *slog.Logger
	Now    func() time.Time
	NewID  func() string
}

// Reminder re-announces parked writes that have waited longer than After by
// putting reminder notices into the outbox. It never decides anything: a
// pending item waits for a human however long it takes.
type Reminder struct {
	store memory.Store
	kv    KV
	after time.Duration
	every time.Duration
	waker Waker
	log   *slog.Logger
	now   func() time.Time
	newID func() string

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewReminder returns a Reminder with defaults filled in; Start runs it.
func NewReminder(o ReminderOptions) *Reminder {
	r := &Reminder{store: o.Store, kv: o.KV, after: o.After, every: o.Every, waker: o.Waker,
		log: o.Logger, now: o.Now, newID: o.NewID}
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
	if r.newID == nil {
		r.newID = memory.NewULIDSource()
	}
	return r
}

// Start looks at the queue every Every until Stop or until ctx ends.
func (r *Reminder) Start(ctx context.Context) error {
	if r.store == nil || r.kv == nil {
		return errors.New("notify: a reminder needs a store and a key-value area")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return errors.New("notify: reminder already started")
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.every)
		defer t.Stop()
		for {
			if _, err := r.Check(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("checking the review queue for reminders", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the reminder loop and waits for it (or for ctx).
func (r *Reminder) Stop(ctx context.Context) error {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("notify: stopping the reminder: %w", ctx.Err())
	}
}

// Check queues a reminder for every pending item that has waited at least
// After since it was parked or last re-announced, unless one is already
// queued for it. It returns how many it queued.
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
		last, err := r.lastReminded(ctx, rec.ID)
		if err != nil {
			return 0, err
		}
		if !last.IsZero() && now.Sub(last) < r.after {
			continue
		}
		waited := now.Sub(rec.CreatedAt).Round(time.Second)
		due = append(due, &memory.Notice{ID: r.newID(), Kind: memory.NoticeReminder, RecordID: rec.ID, At: now,
			Text: fmt.Sprintf("waiting for a decision for %s", waited)})
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
	stamp, _ := now.MarshalText()
	for _, n := range due {
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

func (r *Reminder) lastReminded(ctx context.Context, id string) (time.Time, error) {
	b, err := r.kv.Get(ctx, remindNamespace, id)
	if errors.Is(err, store.ErrNotFound) {
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
