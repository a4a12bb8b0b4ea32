package store

import (
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

func TestGroupCommitReportsAFailedSync(t *testing.T) {
	fail := errors.New("disk on fire")
	var calls atomic.Int64
	g := newGroupCommit(func() error {
		if calls.Add(1) == 1 {
			return fail
		}
		return nil
	})
	if err := g.wait(); !errors.Is(err, fail) {
		t.Fatalf("wait after a failed sync = %v, want %v", err, fail)
	}
	if err := g.wait(); err != nil {
		t.Fatalf("wait after a good sync = %v", err)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("log"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLogSyncerFollowsRotations(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"00001.mem", "00002.mem", "000001.vlog", "MANIFEST", "000007.sst"} {
		touch(t, filepath.Join(dir, name))
	}
	s, err := newLogSyncer(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.mem.fid != 2 || s.vlog.fid != 1 {
		t.Fatalf("newest logs: mem %d, vlog %d; want 2 and 1", s.mem.fid, s.vlog.fid)
	}
	// The memtable rotated twice; the old file was flushed and deleted.
	touch(t, filepath.Join(dir, "00003.mem"))
	touch(t, filepath.Join(dir, "00004.mem"))
	os.Remove(filepath.Join(dir, "00002.mem"))
	touch(t, filepath.Join(dir, "000002.vlog"))
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	if s.mem.fid != 4 || !strings.HasSuffix(s.mem.f.Name(), "00004.mem") {
		t.Fatalf("after rotations the newest memtable log is %d (%s), want 4", s.mem.fid, s.mem.f.Name())
	}
	if s.vlog.fid != 1 {
		t.Fatalf("the value log was synced (now %d) though nothing was marked for it", s.vlog.fid)
	}
	s.markVlog()
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	if s.vlog.fid != 2 || s.vlogDirty.Load() {
		t.Fatalf("after a marked sync the value log is at %d (dirty %v), want 2", s.vlog.fid, s.vlogDirty.Load())
	}
}

// groupPolicy applies everything.
func groupPolicy(context.Context, *memory.PolicyInput) (memory.Decision, error) {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
}

// TestGroupCommitStore writes concurrently through a group-commit store
// with small memtables (so the logs rotate), values large enough for the
// value log, and raw writes through DB() made durable with Sync, then
// reopens the database and finds everything.
func TestGroupCommitStore(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Options{Dir: dir, GroupCommit: true, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	firstMem := st.logs.mem.fid
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	const writers, each = 8, 150
	ids := make([][]string, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				summary := fmt.Sprintf("writer %d fact %d %s", w, i, strings.Repeat("padding ", 40))
				if i%10 == 0 {
					summary += strings.Repeat("large ", 1000) // a record over the value threshold
				}
				res, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerKnowledge,
					SubjectID: fmt.Sprintf("w%d", w), FactType: fmt.Sprintf("f%d", i), Summary: summary})
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], res.Record.ID)
			}
		})
	}
	wg.Wait()
	if err := st.Put(context.Background(), "test", "k", []byte(strings.Repeat("v", 5000))); err != nil {
		t.Fatal(err)
	}
	if st.logs.mem.fid == firstMem {
		t.Errorf("the memtable log never rotated (still %d): the test does not cover rotation", firstMem)
	}
	if err := st.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = Open(Options{Dir: dir, GroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gov = memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	for w := range writers {
		recs, err := gov.List(context.Background(), memory.ListFilter{SubjectID: fmt.Sprintf("w%d", w)})
		if err != nil || len(recs) != each {
			t.Fatalf("writer %d: %d records after reopening, %v; want %d", w, len(recs), err, each)
		}
	}
	if v, err := st.Get(context.Background(), "test", "k"); err != nil || len(v) != 5000 {
		t.Fatalf("kv value after reopening: %d bytes, %v", len(v), err)
	}
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
		if w.name == "PutKey, a value for the value log" && st.logs.vlogDirty.Load() {
			t.Errorf("%s returned with the value log not synced", w.name)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = Open(Options{Dir: dir, GroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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
