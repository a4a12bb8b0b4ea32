package notify_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
	"github.com/memgate/memgate/store"
)

// env is a real Badger store on disk with a real governor writing notices
// into the outbox.
type env struct {
	t      *testing.T
	dir    string
	st     *store.Store
	gov    *memory.Governor
	outbox *notify.Outbox
	opts   notify.OutboxOptions
	stop   func() // ends the outbox's Run, if start began it
}

func newEnv(t *testing.T, opts notify.OutboxOptions) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), opts: opts}
	e.open()
	t.Cleanup(func() { e.close() })
	return e
}

func (e *env) open() {
	e.t.Helper()
	st := badgertest.Open(e.t, store.Options{Dir: e.dir})
	e.st = st
	o := e.opts
	o.Store = st
	e.outbox = notify.NewOutbox(o)
	e.gov = memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.ParkPolicies),
		Outbox: true, Waker: e.outbox})
}

func (e *env) close() {
	if e.st == nil {
		return
	}
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
	if err := e.st.Close(); err != nil {
		e.t.Error(err)
	}
	e.st = nil
}

// start runs the outbox, delivering through n, until the env closes.
func (e *env) start(n notify.Notifier) {
	e.t.Helper()
	e.stop = runOutbox(e.t, e.outbox, n)
}

// runOutbox runs ob in the background and returns what ends it: stop
// cancels Run's context and waits (at most 10s) for it to return.
func runOutbox(t *testing.T, ob *notify.Outbox, n notify.Notifier) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx, n) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the outbox did not stop within 10s")
		}
	}
}

// restart stops the worker and closes the database, then opens both again,
// as a process restart would.
func (e *env) restart() {
	e.t.Helper()
	e.close()
	e.open()
}

func (e *env) park(subject string) *memory.Record {
	e.t.Helper()
	res, err := e.gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerPolicy, SubjectID: subject,
		FactType: "publish.auto", Summary: "auto-publish is allowed for " + subject})
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Outcome != memory.OutcomeParked {
		e.t.Fatalf("outcome %s, want parked", res.Outcome)
	}
	return res.Record
}

func (e *env) notices() []*memory.Notice {
	e.t.Helper()
	return testkit.Notices(e.t, e.st)
}

// reminders returns the reminder notices in the outbox.
func (e *env) reminders() []*memory.Notice {
	e.t.Helper()
	var out []*memory.Notice
	for _, n := range e.notices() {
		if n.Kind == memory.NoticeReminder {
			out = append(out, n)
		}
	}
	return out
}

// recorder is a Notifier whose answer each test scripts.
type recorder struct {
	mu      sync.Mutex
	got     []string // kind:record of each delivered batch's first notice
	calls   int
	answer  func(call int, batch []*memory.Notice) (bool, error)
	batches [][]*memory.Notice
}

func (r *recorder) Notify(_ context.Context, batch []*memory.Notice) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.answer != nil {
		if retry, err := r.answer(r.calls, batch); err != nil {
			return retry, err
		}
	}
	r.batches = append(r.batches, batch)
	for _, n := range batch {
		r.got = append(r.got, string(n.Kind)+":"+n.RecordID)
	}
	return false, nil
}

func (r *recorder) delivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func (r *recorder) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func joined(s []string) string { return strings.Join(s, " ") }
