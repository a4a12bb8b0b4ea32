package metrics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
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

// TestStoreSizeIsAllocatedSpace: memgate_store_size_bytes reports the
// blocks the store's files occupy, read at each scrape: far below the
// value log's preallocated length on a fresh store, and grown by what the
// writes stored. The volume series are the filesystem's.
func TestStoreSizeIsAllocatedSpace(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("allocated blocks and the volume are read on Linux only")
	}
	dir := t.TempDir()
	st := badgertest.NewWith(t, store.Options{Dir: dir})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Disk: st}))
	scrape := func() map[string]float64 {
		t.Helper()
		got := map[string]float64{}
		for _, part := range []string{"lsm", "vlog", "wal", "other"} {
			v, ok := seriesValue(t, reg, "memgate_store_size_bytes", "part", part)
			if !ok {
				t.Fatalf("memgate_store_size_bytes{part=%q} is not exported", part)
			}
			got[part] = v
		}
		for _, name := range []string{"memgate_data_volume_free_bytes", "memgate_data_volume_size_bytes", "memgate_store_write_reserve_bytes"} {
			v, ok := seriesValue(t, reg, name)
			if !ok {
				t.Fatalf("%s is not exported", name)
			}
			got[name] = v
		}
		return got
	}

	before := scrape()
	vlogs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil || len(vlogs) == 0 {
		t.Fatalf("no value log in %s: %v", dir, err)
	}
	fi, err := os.Stat(vlogs[0])
	if err != nil {
		t.Fatal(err)
	}
	if before["vlog"]*16 > float64(fi.Size()) {
		t.Errorf("vlog %v bytes on a fresh store whose value log is %d bytes long: the preallocation is counted", before["vlog"], fi.Size())
	}
	if v := before["memgate_store_write_reserve_bytes"]; v != 137<<20 {
		t.Errorf("write reserve %v, want the default 137 MiB", v)
	}
	if free, size := before["memgate_data_volume_free_bytes"], before["memgate_data_volume_size_bytes"]; free <= 0 || size < free {
		t.Errorf("volume %v bytes free of %v", free, size)
	}

	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules)})
	const n, size = 200, 8000 // to the write-ahead log: values under 1 MiB stay out of the value log
	for i := range n {
		c := write(memory.LayerKnowledge, "project-alpha", "", fmt.Sprintf("fact %d: %s", i, strings.Repeat("x", size)), "native", "run-1")
		if _, err := gov.Submit(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	after := scrape()
	if grown := after["vlog"] + after["lsm"] + after["wal"] - before["vlog"] - before["lsm"] - before["wal"]; grown < n*size {
		t.Errorf("the store grew by %v bytes after %d records of %d bytes", grown, n, size)
	}
	u, err := st.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	if after["vlog"] > float64(u.ValueLog) || after["vlog"] < float64(before["vlog"]) {
		t.Errorf("scraped vlog %v, store reports %d now and %v before", after["vlog"], u.ValueLog, before["vlog"])
	}
}

// TestUnreadableStateFailsTheScrape: when the store cannot be read, the
// scrape reports an error rather than dropping the queue and outbox series
// that alerts watch.
func TestUnreadableStateFailsTheScrape(t *testing.T) {
	st := badgertest.Open(t, store.Options{Dir: t.TempDir()})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules)})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Queue: gov, Outbox: st}))
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("gather on an open store: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "read the review queue") || !strings.Contains(err.Error(), "read the outbox") {
		t.Fatalf("gather on a closed store: %v, want errors naming the queue and the outbox", err)
	}
}

// TestUnreadableDiskFailsTheScrape: a disk usage that cannot be read fails
// the scrape rather than dropping the series the volume alerts watch.
func TestUnreadableDiskFailsTheScrape(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	st := badgertest.Open(t, store.Options{Dir: dir})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Disk: st}))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "read the disk usage") {
		t.Fatalf("gather with the data directory gone: %v, want an error naming the disk usage", err)
	}
}

// TestOnlyConfiguredSourcesAreExported: a collector without an outbox (no
// Slack configured) exports no outbox series instead of a misleading zero.
func TestOnlyConfiguredSourcesAreExported(t *testing.T) {
	e := newEnv(t, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Queue: e.gov}))
	names := testkit.MetricNames(t, reg)
	if strings.Join(names, ",") != "memgate_review_queue_depth,memgate_review_queue_oldest_age_seconds" {
		t.Fatalf("exported %v, want only the review queue", names)
	}
}
