package store

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
)

// TestTablesOfEitherBlockSizeRead: a data directory whose tables were
// written with Badger's 4 KB blocks (every directory before blockSize) opens
// and reads; tables written now use blockSize, which shrinks their index;
// and compacting old tables with new ones loses nothing.
func TestTablesOfEitherBlockSizeRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	apply := memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	var ids []string
	write := func(st *Store, from, to int) {
		t.Helper()
		gov := memory.NewGovernor(memory.Options{Store: st, Classifier: apply})
		for i := from; i < to; i++ {
			res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: fmt.Sprintf("s-%d", i%7),
				FactType: fmt.Sprintf("f.%d", i), Summary: fmt.Sprintf("fact %d, long enough to fill blocks of any size in a while", i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.Record.ID)
		}
	}
	readAll := func(st *Store) {
		t.Helper()
		gov := memory.NewGovernor(memory.Options{Store: st, Classifier: apply})
		for i, id := range ids {
			r, err := gov.Get(ctx, id)
			if err != nil || r.Status != memory.StatusActive || r.Summary != fmt.Sprintf("fact %d, long enough to fill blocks of any size in a while", i) {
				t.Fatalf("record %d (%s): %+v, %v", i, id, r, err)
			}
		}
		n := 0
		for s := range 7 {
			recs, err := gov.List(ctx, memory.ListFilter{SubjectID: fmt.Sprintf("s-%d", s)})
			if err != nil {
				t.Fatal(err)
			}
			n += len(recs)
		}
		if n != len(ids) {
			t.Fatalf("the subjects list %d active records, want %d", n, len(ids))
		}
	}
	// indexPerByte is the index size of the level-0 tables per byte of
	// their data: it falls as blocks grow.
	indexPerByte := func(st *Store) float64 {
		t.Helper()
		var idx, data float64
		for _, tab := range st.DB().Tables() {
			idx += float64(tab.IndexSz - tab.BloomFilterSize)
			data += float64(tab.UncompressedSize)
		}
		if data == 0 {
			t.Fatal("no tables")
		}
		return idx / data
	}

	// A directory as every earlier version wrote it: 4 KB blocks, values of
	// 4 KiB or more in the value log.
	const oldThreshold = 4 << 10
	db, err := badger.Open(badger.DefaultOptions(dir).WithBlockSize(4 << 10).WithMemTableSize(8 << 20).
		WithBlockCacheSize(8 << 20).WithValueThreshold(oldThreshold).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	old := &Store{db: db, log: slog.New(slog.DiscardHandler), threshold: oldThreshold}
	write(old, 0, 2000)
	if err := old.Close(); err != nil { // flushes the memtable into a table
		t.Fatal(err)
	}

	st, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	oldRatio := indexPerByte(st)
	readAll(st)
	write(st, 2000, 4000)
	st = reopen(t, st, Options{Dir: dir})
	tables := st.DB().Tables()
	if len(tables) != 2 {
		t.Fatalf("%d tables, want the old one and the new one", len(tables))
	}
	newest := tables[0]
	for _, tab := range tables {
		if tab.ID > newest.ID {
			newest = tab
		}
	}
	newRatio := float64(newest.IndexSz-newest.BloomFilterSize) / float64(newest.UncompressedSize)
	if newRatio > oldRatio/2 {
		t.Fatalf("block offsets per byte: %.5f in the new table, %.5f in the old: want 16 KB blocks to need a quarter", newRatio, oldRatio)
	}
	readAll(st)
	if err := st.DB().Flatten(1); err != nil {
		t.Fatal(err)
	}
	readAll(st)
}
