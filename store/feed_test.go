package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// TestChangeWithoutReadIsRefused: a transaction may change a record's
// entry in the index of active records only after reading the record, so
// that Badger's conflict detection orders its change against any other
// (ActiveFeed). A write that skips the read is refused, not committed.
func TestChangeWithoutReadIsRefused(t *testing.T) {
	st, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	r := &memory.Record{ID: "r1", SlotID: "s1", SubjectID: "subj", Layer: memory.LayerKnowledge, Status: memory.StatusActive, Summary: "x"}
	for _, tc := range []struct {
		name    string
		write   func(*tx) error
		refused bool
	}{
		{"ReplaceRecord of a record never read", func(t *tx) error { return t.ReplaceRecord(nil, r) }, true},
		{"PutRecord, which reads first", func(t *tx) error { return t.PutRecord(r) }, false},
		{"ReplaceRecord after a read", func(t *tx) error {
			old, err := t.Record(r.ID)
			if err != nil {
				return err
			}
			next := *old
			next.Status = memory.StatusSuperseded
			return t.ReplaceRecord(old, &next)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := st.Update(ctx, func(mtx memory.Tx) error { return tc.write(mtx.(*tx)) })
			if refused := errors.Is(err, errReadBeforeChange); refused != tc.refused || (!tc.refused && err != nil) {
				t.Fatalf("err %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// gateFeed counts the commits between Begin and End.
type gateFeed struct {
	open    atomic.Int64
	applied atomic.Int64
}

func (f *gateFeed) Begin(uint64) { f.open.Add(1) }
func (f *gateFeed) End(_ uint64, changes []storeapi.ActiveChange, o storeapi.CommitOutcome) {
	if o == storeapi.Committed {
		f.applied.Add(int64(len(changes)))
	}
	f.open.Add(-1)
}

// TestViewAlignedPinsBetweenCommits: while writers commit changes to the
// index, every aligned snapshot's pin runs with no commit between Begin
// and End, and the snapshot holds exactly the entries of the commits the
// feed had seen end.
func TestViewAlignedPinsBetweenCommits(t *testing.T) {
	st, err := Open(Options{Dir: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	feed := &gateFeed{}
	defer st.Follow(feed)()
	ctx := context.Background()
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			for i := range 100 {
				r := &memory.Record{ID: fmt.Sprintf("r%d-%03d", w, i), SlotID: "s", SubjectID: "subj", Layer: memory.LayerKnowledge,
					Status: memory.StatusActive, Summary: "x"}
				if err := st.Update(ctx, func(mtx memory.Tx) error { return mtx.PutRecord(r) }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	checked := 0
	for checked < 200 {
		var open, applied int64
		var entries int64
		err := st.ViewAligned(ctx, func() { open, applied = feed.open.Load(), feed.applied.Load() }, func(sn storeapi.Snapshot) error {
			return sn.ScanActiveIndex(ctx, "subj", memory.Scope{}, func(storeapi.ActiveEntry, uint64) bool { entries++; return true })
		})
		if err != nil {
			t.Fatal(err)
		}
		if open != 0 || entries != applied {
			t.Fatalf("pinned with %d commits between Begin and End; the snapshot holds %d entries, the feed saw %d", open, entries, applied)
		}
		checked++
	}
	writers.Wait()
}
