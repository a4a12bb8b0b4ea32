package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
)

// writer submits writes, each to a slot of its own, until stopped, and
// keeps what was acknowledged and what failed.
type writer struct {
	mu     sync.Mutex
	acked  []string
	errs   []error
	phase  int            // bumped by the test: acks and errors are counted per phase
	counts map[int][2]int // phase → acks, errors
}

func (w *writer) run(ctx context.Context, gov *memory.Governor, stop <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := gov.Submit(cctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha",
			FactType: fmt.Sprint("fact-", n), Summary: fmt.Sprint("write ", n)})
		cancel()
		w.mu.Lock()
		c := w.counts[w.phase]
		if err != nil {
			w.errs = append(w.errs, err)
			c[1]++
		} else {
			w.acked = append(w.acked, res.Record.ID)
			c[0]++
		}
		w.counts[w.phase] = c
		w.mu.Unlock()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the database is away: do not spin
		}
	}
}

// next starts a new phase.
func (w *writer) next() {
	w.mu.Lock()
	w.phase++
	w.mu.Unlock()
}

// await waits until the current phase has the acks and errors asked for.
func (w *writer) await(t *testing.T, what string, acks, errs int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		w.mu.Lock()
		c := w.counts[w.phase]
		w.mu.Unlock()
		if c[0] >= acks && c[1] >= errs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d acknowledged, %d failed; waited for %d and %d", what, c[0], c[1], acks, errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitWritable waits until Writable's code is want ("" for nil).
func awaitWritable(t *testing.T, writable func() error, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for memory.ErrorCode(writable()) != want {
		if time.Now().After(deadline) {
			t.Fatalf("Writable: %v, want code %q", writable(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDatabaseCrashUnderAWriter stops the database at once (as a crash:
// pg_ctl stop -m immediate) while a writer runs, then starts it again: the
// writes in between fail with EUNAVAILABLE, Writable says so, the same
// Store works again once the database is back, and every write that was
// acknowledged is there after the database's crash recovery.
func TestDatabaseCrashUnderAWriter(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	st := open(t, cluster.NewDB(t))
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.ParkPolicies)})
	ctx := context.Background()
	w := &writer{counts: map[int][2]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { w.run(ctx, gov, stop) })
	stopWriter := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriter()

	w.await(t, "before the crash", 20, 0)
	if err := st.Writable(); err != nil {
		t.Fatalf("Writable before the crash: %v", err)
	}
	if err := cluster.Stop(true); err != nil {
		t.Fatal(err)
	}
	w.next()
	w.await(t, "database down", 0, 5)
	awaitWritable(t, st.Writable, memory.EUNAVAILABLE)

	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	w.next()
	w.await(t, "database back", 20, 0)
	awaitWritable(t, st.Writable, "")

	stopWriter()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, err := range w.errs {
		if memory.ErrorCode(err) != memory.EUNAVAILABLE {
			t.Errorf("a write failed with code %s, want %s: %v", memory.ErrorCode(err), memory.EUNAVAILABLE, err)
		}
	}
	for _, id := range w.acked {
		if _, err := gov.Get(ctx, id); err != nil {
			t.Errorf("acknowledged write %s: %v", id, err)
		}
	}
	t.Logf("%d writes acknowledged, %d failed while the database was away", len(w.acked), len(w.errs))
}
