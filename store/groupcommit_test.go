package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
)

func TestGroupCommitSharesSyncs(t *testing.T) {
	var flushes atomic.Int64
	g := newGroupCommit(func() error {
		flushes.Add(1)
		time.Sleep(5 * time.Millisecond) // an fsync
		return nil
	})
	const writers = 64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			if err := g.wait(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := flushes.Load(); n < 1 || n > writers/4 {
		t.Fatalf("%d writers waited through %d syncs; want them to share a few", writers, n)
	}
}

// A sync already running when a writer arrives may have started before
// its commit: the writer must wait for the next one.
func TestGroupCommitWaitsForASyncStartedAfterTheCommit(t *testing.T) {
	release := make(chan struct{})
	var flushes atomic.Int64
	g := newGroupCommit(func() error {
		if flushes.Add(1) == 1 {
			<-release
		}
		return nil
	})
	first := make(chan error)
	go func() { first <- g.wait() }()
	for flushes.Load() == 0 {
		time.Sleep(time.Millisecond) // the first sync is running
	}
	second := make(chan error)
	go func() { second <- g.wait() }()
	select {
	case err := <-second:
		t.Fatalf("the second writer returned (%v) during a sync that started before it", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := flushes.Load(); n != 2 {
		t.Fatalf("%d syncs, want 2", n)
	}
}

// A failed sync fails its waiters and every wait after it: a commit
// written before it may have had its pages written back, and lost, by it
// while its own waiter waits for a later sync.
func TestGroupCommitReportsAFailedSync(t *testing.T) {
	fail := errors.New("disk on fire")
	var calls atomic.Int64
	g := newGroupCommit(func() error {
		if calls.Add(1) == 1 {
			return fail
		}
		return nil
	})
	for i := range 3 {
		if err := g.wait(); !errors.Is(err, fail) {
			t.Fatalf("wait %d after a failed sync = %v, want %v", i, err, fail)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d syncs after the failed one, want none", n-1)
	}
}

// openLogSyncer opens a Badger database in a new directory without
// SyncWrites and a syncer for it.
func openLogSyncer(t *testing.T) (*logSyncer, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := newLogSyncer(db, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.close() })
	return s, dir
}

// TestLogSyncerSyncsEverythingWhenAFileAppears: a sync is DB.Sync alone
// unless a name appeared in the directory since the last sync (a log
// rotated: Badger created the new one), when it syncs the whole
// filesystem, as it does on the first sync.
func TestLogSyncerSyncsEverythingWhenAFileAppears(t *testing.T) {
	s, dir := openLogSyncer(t)
	var full int
	s.full = func() error { full++; return nil }
	touch := func(name string) func() {
		return func() {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("log"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, step := range []struct {
		name   string
		change func()
		full   bool
	}{
		{"first sync", func() {}, true},
		{"nothing changed", func() {}, false},
		{"a file appeared", touch("rotated"), true},
		{"nothing changed since", func() {}, false},
		{"one replaced by another", func() { os.Remove(filepath.Join(dir, "rotated")); touch("rotated2")() }, true},
		{"a file went away", func() { os.Remove(filepath.Join(dir, "rotated2")) }, false},
	} {
		step.change()
		before := full
		if err := s.sync(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := full > before; got != step.full {
			t.Errorf("%s: full sync %v, want %v", step.name, got, step.full)
		}
	}
}

// A failed full sync is retried by the next sync, which may follow a
// rotation the failed one saw.
func TestLogSyncerRetriesAFailedFullSync(t *testing.T) {
	s, _ := openLogSyncer(t)
	fail := errors.New("disk on fire")
	s.full = func() error { return fail }
	if err := s.sync(); !errors.Is(err, fail) {
		t.Fatalf("sync = %v, want %v", err, fail)
	}
	var full int
	s.full = func() error { full++; return nil }
	if err := s.sync(); err != nil || full != 1 {
		t.Fatalf("the sync after a failed one: %v, %d full syncs; want one", err, full)
	}
}

// groupPolicy applies everything.
func groupPolicy(context.Context, *memory.PolicyInput) (memory.Decision, error) {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
}

// TestGroupCommitStore writes concurrently through a group-commit store
// with small memtables, records filling them, values large enough for the
// value log and enough of them to fill a value log file, so that both logs
// rotate under the writers, then reopens the database and finds every
// acknowledged write.
func TestGroupCommitStore(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Options{Dir: dir, GroupCommit: true, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Int64
	syncFull := st.logs.full
	st.logs.full = func() error { full.Add(1); return syncFull() }
	ctx := context.Background()
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	const writers, each = 8, 150
	ids := make([][]string, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				summary := fmt.Sprintf("writer %d fact %d %s", w, i, strings.Repeat("padding ", 40))
				if i%10 == 0 {
					summary += strings.Repeat("large ", 1000) // a record of 6 KB
				}
				res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge,
					SubjectID: fmt.Sprintf("w%d", w), FactType: fmt.Sprintf("f%d", i), Summary: summary})
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], res.Record.ID)
			}
		})
	}
	// 72 MiB of values (over the value threshold, 157 KB with these
	// memtables) through a value log whose files hold 64 MiB (Open's
	// ValueLogFileSize): it rotates at least once mid-test.
	const blobs, blobSize = 36, 2 << 20
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < blobs; i += 2 {
				if err := st.Put(ctx, "test", fmt.Sprint(i), blob(i, blobSize)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The first sync is full; more mean the syncs saw the directory change
	// under the writers (memtables rotated, so did the value log).
	if n := full.Load(); n < 2 {
		t.Errorf("%d full syncs: the logs' rotations went unseen", n)
	}

	st = reopen(t, st, Options{Dir: dir, GroupCommit: true})
	gov = memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	for w := range writers {
		for _, id := range ids[w] {
			if _, err := gov.Get(ctx, id); err != nil {
				t.Fatalf("writer %d: record %s after reopening: %v", w, id, err)
			}
		}
	}
	for i := range blobs {
		if v, err := st.Get(ctx, "test", fmt.Sprint(i)); err != nil || !bytes.Equal(v, blob(i, blobSize)) {
			t.Fatalf("value %d after reopening: %d bytes, %v; want the %d written", i, len(v), err, blobSize)
		}
	}
}

// reopen closes st and opens the store again with o, as a restart would;
// the store it returns closes when the test ends.
func reopen(t *testing.T, st *Store, o Options) *Store {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// blob is n bytes that differ from one i to the next.
func blob(i, n int) []byte {
	return bytes.Repeat([]byte{byte('a' + i%26)}, n)
}

// TestWritesOutsideTheGovernorAreDurableOnReturn: under group commit, Put
// and PutKey (the Slack references, the Mem0 event log) run a sync of
// their own before they return, as Update does, so whatever a caller
// acknowledges after them is on disk.
func TestWritesOutsideTheGovernorAreDurableOnReturn(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Options{Dir: dir, GroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	var syncs atomic.Int64
	flush := st.group.flush
	st.group.flush = func() error { syncs.Add(1); return flush() }
	ctx := context.Background()
	for _, w := range []struct {
		name string
		put  func() error
	}{
		{"Put", func() error { return st.Put(ctx, "test", "k", []byte("v")) }},
		{"PutKey", func() error { return st.PutKey(ctx, []byte("mem0/ev/1"), []byte("event")) }},
		{"PutKey, a value for the value log", func() error {
			return st.PutKey(ctx, []byte("mem0/ev/2"), []byte(strings.Repeat("e", 2*valueThreshold)))
		}},
	} {
		before := syncs.Load()
		if err := w.put(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if syncs.Load() == before {
			t.Errorf("%s returned without a sync", w.name)
		}
	}
	st = reopen(t, st, Options{Dir: dir, GroupCommit: true})
	for k, n := range map[string]int{"mem0/ev/1": 5, "mem0/ev/2": 2 * valueThreshold} {
		var got []byte
		err := st.DB().View(func(txn *badger.Txn) error {
			item, err := txn.Get([]byte(k))
			if err != nil {
				return err
			}
			got, err = item.ValueCopy(nil)
			return err
		})
		if err != nil || len(got) != n {
			t.Errorf("%s after reopening: %d bytes, %v; want %d", k, len(got), err, n)
		}
	}
}

func TestPutKeyRefusesTheStoresOwnPrefixes(t *testing.T) {
	st, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, k := range []string{"r/x", "s/x", "a/subject\x00x", "e/x", "kv/ns\x00k", "o/x"} {
		if err := st.PutKey(context.Background(), []byte(k), []byte("v")); err == nil {
			t.Errorf("PutKey(%q) wrote into the store's own layout", k)
		}
	}
	if err := st.PutKey(context.Background(), []byte("mem0/ev/x"), []byte("v")); err != nil {
		t.Errorf("PutKey of a prefix of its own: %v", err)
	}
}

// BenchmarkGroupCommitOneWriter is one writer under group commit: no one
// shares its syncs, so each commit pays for a whole one (with DB.Sync, the
// value log's too).
func BenchmarkGroupCommitOneWriter(b *testing.B) {
	st, err := Open(Options{Dir: b.TempDir(), GroupCommit: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	v := []byte(`{"layer":"checkpoint","subjectId":"task","summary":"step done"}`)
	// The first sync syncs the filesystem (see logSyncer): not timed.
	if err := st.Put(ctx, "bench", "first", v); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if err := st.Put(ctx, "bench", fmt.Sprint(i), v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}
