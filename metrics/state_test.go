package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/store"
)

// TestOutboxDepthAndAge: the governor stores a notice with each parked
// write and decision; the collector counts what is undelivered and how long
// the oldest has waited, and delivery (deleting the notice, as the outbox
// worker does) shrinks it.
func TestOutboxDepthAndAge(t *testing.T) {
	e := newEnv(t, nil)
	e.want([]series{{"memgate_outbox_depth", nil, 0}, {"memgate_outbox_oldest_age_seconds", nil, 0}})

	e.submit(write(memory.LayerState, "project-alpha", "stage", "beta", "native", "run-1"))
	parked := e.submit(write(memory.LayerState, "project-alpha", "stage", "production", "native", "run-1")).Record
	e.clock.Advance(2 * time.Minute)
	if _, err := e.gov.Reject(e.ctx, parked.ID, memory.Review{By: "U1", Route: "slack"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	e.want([]series{{"memgate_outbox_depth", nil, 2}, {"memgate_outbox_oldest_age_seconds", nil, 180}})

	// Deliver the oldest notice the way the outbox worker does.
	var oldest *memory.Notice
	err := e.st.View(e.ctx, func(tx memory.ReadTx) error {
		return tx.ScanNotices(func(n *memory.Notice) bool { oldest = n; return false })
	})
	if err != nil || oldest == nil || oldest.Kind != memory.NoticeParked {
		t.Fatalf("oldest notice %+v, %v; want the parked notice", oldest, err)
	}
	if err := e.st.Update(e.ctx, func(tx memory.Tx) error { return tx.DeleteNotice(oldest.ID) }); err != nil {
		t.Fatal(err)
	}
	e.want([]series{{"memgate_outbox_depth", nil, 1}, {"memgate_outbox_oldest_age_seconds", nil, 60}})
}

// TestStoreSizeIsBadgersOwn: Badger measures its files when it opens and
// then once a minute, so the data is written, the store reopened, and the
// exported size must be what Badger reports.
func TestStoreSizeIsBadgersOwn(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	for i := range 200 {
		c := write(memory.LayerKnowledge, "project-alpha", "", fmt.Sprintf("fact %d: %s", i, strings.Repeat("x", 2000)), "native", "run-1")
		if _, err := gov.Submit(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = store.Open(store.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Size: st}))
	lsm, vlog := st.Size()
	if lsm+vlog < 100_000 { // compressed, but far from empty
		t.Fatalf("Badger reports lsm=%d vlog=%d after 400 kB of records", lsm, vlog)
	}
	for part, want := range map[string]int64{"lsm": lsm, "vlog": vlog} {
		if got, ok := seriesValue(t, reg, "memgate_store_size_bytes", "part", part); !ok || got != float64(want) {
			t.Errorf("memgate_store_size_bytes{part=%q} = %v (exported %v), want %d", part, got, ok, want)
		}
	}
}

// TestUnreadableStateFailsTheScrape: when the store cannot be read, the
// scrape reports an error rather than dropping the queue and outbox series
// that alerts watch.
func TestUnreadableStateFailsTheScrape(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Queue: gov, Outbox: st}))
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("gather on an open store: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "read the review queue") || !strings.Contains(err.Error(), "read the outbox") {
		t.Fatalf("gather on a closed store: %v, want errors naming the queue and the outbox", err)
	}
}

// TestOnlyConfiguredSourcesAreExported: a collector without an outbox (no
// Slack configured) exports no outbox series instead of a misleading zero.
func TestOnlyConfiguredSourcesAreExported(t *testing.T) {
	e := newEnv(t, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Queue: e.gov}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if strings.Join(names, ",") != "memgate_review_queue_depth,memgate_review_queue_oldest_age_seconds" {
		t.Fatalf("exported %v, want only the review queue", names)
	}
}
