package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storetest"
)

// chainEvents appends n events, each in an update of its own, with text
// that names it.
func chainEvents(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		err := s.Update(context.Background(), func(tx memory.Tx) error {
			in := json.RawMessage(fmt.Sprintf(`{"candidate":{"summary":"plan number %d"}}`, i))
			return tx.AppendEvent(&memory.Event{ID: fmt.Sprintf("ev%02d", i), Type: memory.EventApplied,
				At: time.Unix(int64(i), 0).UTC(), RecordID: fmt.Sprintf("r%d", i), Input: in})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// rawSet writes key=value behind the store's back, in Badger.
func rawSet(t *testing.T, s *Store, k, v []byte) {
	t.Helper()
	if err := s.DB().Update(func(txn *badger.Txn) error { return txn.Set(k, v) }); err != nil {
		t.Fatal(err)
	}
}

func rawGet(t *testing.T, s *Store, k []byte) []byte {
	t.Helper()
	var v []byte
	if err := s.DB().View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	}); err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	return v
}

func rawDelete(t *testing.T, s *Store, keys ...[]byte) {
	t.Helper()
	if err := s.DB().Update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAuditVerifyFindsTamperingOnDisk edits, removes and reorders one
// event in Badger directly, reopens the store from its directory, and
// checks that verification names the event.
func TestAuditVerifyFindsTamperingOnDisk(t *testing.T) {
	cases := []struct {
		name     string
		tamper   func(t *testing.T, s *Store)
		kind, id string
	}{
		{"untouched", func(*testing.T, *Store) {}, "", ""},
		{"text edited", func(t *testing.T, s *Store) {
			k := key("e/", "ev04")
			rawSet(t, s, k, bytes.Replace(rawGet(t, s, k), []byte("plan number 4"), []byte("plan number 5"), 1))
		}, memory.ChainChanged, "ev04"},
		{"decision edited", func(t *testing.T, s *Store) {
			k := key("e/", "ev02")
			rawSet(t, s, k, bytes.Replace(rawGet(t, s, k), []byte(`"type":"applied"`), []byte(`"type":"rejected"`), 1))
		}, memory.ChainChanged, "ev02"},
		{"event deleted", func(t *testing.T, s *Store) {
			rawDelete(t, s, key("e/", "ev06"), chainPosKey(7))
		}, memory.ChainRemoved, "ev06"},
		{"event record deleted, its position left", func(t *testing.T, s *Store) {
			rawDelete(t, s, key("e/", "ev03"))
		}, memory.ChainRemoved, "ev03"},
		{"newest event deleted", func(t *testing.T, s *Store) {
			rawDelete(t, s, key("e/", "ev09"), chainPosKey(10))
		}, memory.ChainRemoved, "ev09"},
		{"two events reordered", func(t *testing.T, s *Store) {
			rawSet(t, s, chainPosKey(3), []byte("ev03"))
			rawSet(t, s, chainPosKey(4), []byte("ev02"))
		}, memory.ChainReordered, "ev03"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(Options{Dir: dir, GroupCommit: true})
			if err != nil {
				t.Fatal(err)
			}
			chainEvents(t, s, 10)
			tc.tamper(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(Options{Dir: dir, GroupCommit: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			storetest.WantChainProblem(t, s, tc.kind, tc.id, 10)
		})
	}
}

// TestAuditChainSealsEventsWrittenBeforeIt: a store whose events carry no
// chain (written by an older memgate) has them sealed at Open, in id
// order, once; new events follow them.
func TestAuditChainSealsEventsWrittenBeforeIt(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Make it look like an older store: events as plain JSON, no chain.
	const legacy = migrationBatch + 7 // more than one batch
	rawDelete(t, s, chainMigratedKey)
	if err := s.DB().Update(func(txn *badger.Txn) error {
		for i := range legacy {
			b, _ := json.Marshal(&memory.Event{ID: fmt.Sprintf("old%04d", i), Type: memory.EventApplied, Reason: "old"})
			if err := txn.Set(key("e/", fmt.Sprintf("old%04d", i)), b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for range 2 { // the second open seals nothing more
		s, err = Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.ChainHead(context.Background())
		if err != nil || h.Seq != legacy || h.EventID != fmt.Sprintf("old%04d", legacy-1) {
			t.Fatalf("head after the migration: %+v %v", h, err)
		}
		s.Close()
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chainEvents(t, s, 3)
	rep, err := memory.VerifyChain(context.Background(), s)
	if err != nil || !rep.OK || rep.Events != legacy+3 {
		t.Fatalf("verify: %+v %v %v", rep, rep.Problem, err)
	}
	first := rawGet(t, s, chainPosKey(1))
	if string(first) != "old0000" || binary.BigEndian.Uint64(chainPosKey(1)[3:]) != 1 {
		t.Fatalf("position 1 holds %s", first)
	}
}

// TestWritesWaitOutCompaction: Compact blocks Badger's writes while it
// flushes the memtables; updates and puts made meanwhile wait and succeed.
func TestWritesWaitOutCompaction(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), GroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		for i := range 300 {
			err := s.Update(ctx, func(tx memory.Tx) error {
				return tx.AppendEvent(&memory.Event{ID: fmt.Sprintf("w%04d", i), Type: memory.EventApplied, Reason: "during compaction"})
			})
			if err == nil {
				err = s.Put(ctx, "test", fmt.Sprint(i), []byte("v"))
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 5 {
		if err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("a write during compaction: %v", err)
	}
	if rep, err := memory.VerifyChain(ctx, s); err != nil || !rep.OK || rep.Events != 300 {
		t.Fatalf("the chain: %+v %v", rep, err)
	}
}

// TestAuditVerifyWhileWritesGoOn: a running sidecar verifies its chain
// while writes (and the retention pass) append to it; events appended
// while the chain is read are not a changed head.
func TestAuditVerifyWhileWritesGoOn(t *testing.T) {
	st, err := Open(Options{Dir: t.TempDir(), GroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
	chainEvents(t, st, 2000) // a chain long enough to take a while to read
	const writers = 4
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := w; ctx.Err() == nil; i += writers {
				if _, err := gov.Submit(ctx, fact(i)); err != nil && ctx.Err() == nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 10 {
		rep, err := memory.VerifyChain(context.Background(), st)
		if err != nil || !rep.OK {
			t.Fatalf("verify while writes go on: %+v %v %v", rep, rep.Problem, err)
		}
	}
	cancel()
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
