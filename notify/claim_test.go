package notify_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
	"github.com/memgate/memgate/store"
)

// leasingStore is the Badger store as several instances would share a
// database: ClaimNotices leases notices as the contract says (undelivered,
// no live lease, oldest first, in one step), on a clock the test moves.
type leasingStore struct {
	*store.Store
	clock *testkit.Clock

	mu     sync.Mutex
	leases map[string]lease // notice id → its last lease
	claims int
}

type lease struct {
	owner string
	until time.Time
}

var _ notify.Claimer = (*leasingStore)(nil)

func newLeasingStore(st *store.Store, clock *testkit.Clock) *leasingStore {
	return &leasingStore{Store: st, clock: clock, leases: map[string]lease{}}
}

func (s *leasingStore) ClaimNotices(ctx context.Context, owner string, d time.Duration, limit int) ([]*memory.Notice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	now := s.clock.Now()
	var out []*memory.Notice
	present := map[string]bool{}
	err := s.View(ctx, func(tx memory.ReadTx) error {
		return tx.ScanNotices(func(n *memory.Notice) bool {
			present[n.ID] = true
			if l, ok := s.leases[n.ID]; len(out) < limit && (!ok || !now.Before(l.until)) {
				s.leases[n.ID] = lease{owner, now.Add(d)}
				out = append(out, n)
			}
			return true
		})
	})
	for id := range s.leases { // a lease goes with its notice, as a row's columns would
		if !present[id] {
			delete(s.leases, id)
		}
	}
	return out, err
}

func (s *leasingStore) claimCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims
}

// deliveries records, across outboxes, which outbox delivered which
// notice, in the order they were delivered.
type deliveries struct {
	mu  sync.Mutex
	log []delivery
}

type delivery struct {
	by     string
	notice *memory.Notice
}

func (d *deliveries) notifier(by string) notify.Notifier {
	return notify.NotifierFunc(func(_ context.Context, batch []*memory.Notice) (bool, error) {
		time.Sleep(time.Millisecond) // a post takes a while: the other outbox runs meanwhile
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, n := range batch {
			d.log = append(d.log, delivery{by, n})
		}
		return false, nil
	})
}

func (d *deliveries) all() []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.log)
}

// TestSharedOutboxDeliversEachNoticeOnce: two outboxes on one store that
// leases notices deliver every notice exactly once between them, and a
// record's notices in the order they were written (parked before decided)
// whichever outbox holds which.
func TestSharedOutboxDeliversEachNoticeOnce(t *testing.T) {
	e := newEnv(t, quickOpts)
	ctx := context.Background()
	clock := testkit.NewClock(time.Now().UTC())
	shared := newLeasingStore(e.st, clock)
	var got deliveries
	for _, name := range []string{"a", "b"} {
		o := quickOpts
		o.Store, o.Instance, o.Poll, o.Now = shared, name, 5*time.Millisecond, clock.Now
		ob := notify.NewOutbox(o)
		t.Cleanup(runOutbox(t, ob, got.notifier(name)))
	}
	var want []string
	for i := range 40 {
		r := e.park(fmt.Sprintf("s%d", i))
		want = append(want, string(memory.NoticeParked)+":"+r.ID)
		if i%2 == 0 {
			if _, err := e.gov.Reject(ctx, r.ID, memory.Review{By: "cli", Route: "cli"}); err != nil {
				t.Fatal(err)
			}
			want = append(want, string(memory.NoticeDecided)+":"+r.ID)
		}
	}
	testkit.Eventually(t, "an empty outbox", func() bool { return len(e.notices()) == 0 })

	seen := map[string]string{} // notice id → the outbox that delivered it
	var delivered []string
	position := map[string]int{} // kind:record → position in the delivery order
	for i, d := range got.all() {
		if by, ok := seen[d.notice.ID]; ok {
			t.Fatalf("notice %s (%s of %s) delivered by %s and again by %s", d.notice.ID, d.notice.Kind, d.notice.RecordID, by, d.by)
		}
		seen[d.notice.ID] = d.by
		k := string(d.notice.Kind) + ":" + d.notice.RecordID
		delivered = append(delivered, k)
		position[k] = i
	}
	slices.Sort(delivered)
	slices.Sort(want)
	if !slices.Equal(delivered, want) {
		t.Fatalf("delivered %v\nwant      %v", delivered, want)
	}
	for k, i := range position {
		if rec, ok := strings.CutPrefix(k, string(memory.NoticeDecided)+":"); ok && position[string(memory.NoticeParked)+":"+rec] > i {
			t.Fatalf("the decided notice of %s went out before its parked notice", rec)
		}
	}
	byOutbox := map[string]int{}
	for _, by := range seen {
		byOutbox[by]++
	}
	t.Logf("delivered by outbox: %v", byOutbox)
}

// TestSharedOutboxLeavesAnotherOutboxesNotices: notices another instance
// holds are not delivered while its lease lives, and are once it ended
// (that instance died before delivering them).
func TestSharedOutboxLeavesAnotherOutboxesNotices(t *testing.T) {
	e := newEnv(t, quickOpts)
	ctx := context.Background()
	clock := testkit.NewClock(time.Now().UTC())
	shared := newLeasingStore(e.st, clock)
	r := e.park("alpha")
	if held, err := shared.ClaimNotices(ctx, "dead instance", time.Minute, 10); err != nil || len(held) != 1 {
		t.Fatalf("claimed %d notices (%v), want the parked one", len(held), err)
	}
	rec := &recorder{}
	o := quickOpts
	o.Store, o.Instance, o.Now = shared, "alive", clock.Now
	ob := notify.NewOutbox(o)
	t.Cleanup(runOutbox(t, ob, rec))
	claims := shared.claimCount()
	ob.Wake()
	testkit.Eventually(t, "two passes", func() bool { return shared.claimCount() >= claims+2 || len(rec.delivered()) > 0 })
	if got := rec.delivered(); len(got) != 0 {
		t.Fatalf("delivered %v, held by another instance's live lease", got)
	}
	clock.Advance(2 * time.Minute)
	ob.Wake()
	testkit.Eventually(t, "delivery once the lease ended", func() bool { return len(rec.delivered()) == 1 })
	if got, want := rec.delivered()[0], "parked:"+r.ID; got != want {
		t.Fatalf("delivered %q, want %q", got, want)
	}
}

// TestRemindersOfSeveralInstancesGoOutOnce: two instances' Reminders on one
// shared store queue one notice for a round, which goes out once; a copy
// stored after that delivery (an instance that read the queue before it)
// is dropped by Once, and neither instance re-announces the round again.
func TestRemindersOfSeveralInstancesGoOutOnce(t *testing.T) {
	e := newEnv(t, quickOpts)
	ctx := context.Background()
	waiting := e.park("alpha")
	clock := testkit.NewClock(time.Now().UTC())
	shared := newLeasingStore(e.st, clock)
	var rems []*notify.Reminder
	for range 2 {
		rems = append(rems, notify.NewReminder(notify.ReminderOptions{Store: shared, KV: e.st, After: time.Hour, Now: clock.Now}))
	}
	clock.Advance(time.Hour)
	var wg sync.WaitGroup
	queued := make([]int, len(rems))
	for i, rem := range rems {
		wg.Go(func() {
			n, err := rem.Check(ctx)
			if err != nil {
				t.Error(err)
			}
			queued[i] = n
		})
	}
	wg.Wait()
	reminders := e.reminders
	stored := reminders()
	if len(stored) != 1 || stored[0].RecordID != waiting.ID {
		t.Fatalf("instances queued %v; stored reminders %+v, want one for %s", queued, stored, waiting.ID)
	}

	rec := &recorder{}
	o := quickOpts
	o.Store, o.Instance, o.Now, o.Poll = shared, "a", clock.Now, 5*time.Millisecond
	ob := notify.NewOutbox(o)
	t.Cleanup(runOutbox(t, ob, rems[0].Once(rec)))
	remindersSent := func() int {
		n := 0
		for _, d := range rec.delivered() {
			if d == string(memory.NoticeReminder)+":"+waiting.ID {
				n++
			}
		}
		return n
	}
	testkit.Eventually(t, "the reminder delivered", func() bool { return remindersSent() == 1 && len(reminders()) == 0 })

	// The late copy: stored again after its delivery.
	if err := e.st.Update(ctx, func(tx memory.Tx) error { return tx.PutNotice(stored[0]) }); err != nil {
		t.Fatal(err)
	}
	ob.Wake()
	testkit.Eventually(t, "the copy dropped", func() bool { return len(reminders()) == 0 })
	if n := remindersSent(); n != 1 {
		t.Fatalf("the round's reminder went out %d times", n)
	}
	clock.Advance(30 * time.Minute)
	for _, rem := range rems {
		if n, err := rem.Check(ctx); err != nil || n != 0 {
			t.Fatalf("queued %d reminders (%v) in a round already announced", n, err)
		}
	}
	clock.Advance(30 * time.Minute) // the next round
	if n, err := rems[1].Check(ctx); err != nil || n != 1 {
		t.Fatalf("queued %d reminders (%v) in a new round, want 1", n, err)
	}
	ob.Wake()
	testkit.Eventually(t, "the next round delivered", func() bool { return remindersSent() == 2 })
}

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
