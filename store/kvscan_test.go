package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

// TestScanAndCountNamespace: a namespace's keys in byte order, both ways,
// until fn stops, and only that namespace's (not a namespace whose name
// starts with it, not keys of other prefixes).
func TestScanAndCountNamespace(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for _, k := range []string{"b", "a", "c", "", "a/b"} {
		if err := s.Put(ctx, "ev", k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "ev2", "a", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKey(ctx, []byte("ev/x"), []byte("outside")); err != nil {
		t.Fatal(err)
	}
	scan := func(newestFirst bool, limit int) (keys []string) {
		err := s.ScanNamespace(ctx, "ev", newestFirst, func(k string, v []byte) bool {
			if string(v) != "v"+k {
				t.Errorf("%q = %q", k, v)
			}
			keys = append(keys, k)
			return len(keys) < limit
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	want := []string{"", "a", "a/b", "b", "c"}
	if got := scan(false, 100); !slices.Equal(got, want) {
		t.Errorf("ascending: %q, want %q", got, want)
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := scan(true, 100); !slices.Equal(got, rev) {
		t.Errorf("descending: %q, want %q", got, rev)
	}
	if got := scan(true, 2); !slices.Equal(got, []string{"c", "b"}) {
		t.Errorf("descending, stopped after two: %q", got)
	}
	if n, err := s.CountNamespace(ctx, "ev"); err != nil || n != len(want) {
		t.Errorf("count: %d, %v; want %d", n, err, len(want))
	}
	if n, err := s.CountNamespace(ctx, "none"); err != nil || n != 0 {
		t.Errorf("count of an empty namespace: %d, %v", n, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.ScanNamespace(cancelled, "ev", false, func(string, []byte) bool { return true }); err == nil {
		t.Error("a scan with a cancelled context succeeded")
	}
}

// TestMoveKeys: keys of a caller's own prefix move into a namespace, in
// batches, across a reopen; a second run moves nothing and changes
// nothing; a key already in the namespace is kept; the store's own
// prefixes are refused.
func TestMoveKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*moveBatch + 7 // three transactions
	for i := range n {
		if err := s.PutKey(ctx, fmt.Appendf(nil, "old/ev/%04d", i), fmt.Appendf(nil, "event %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "ev", "0003", []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKey(ctx, []byte("old/other"), []byte("stays")); err != nil {
		t.Fatal(err)
	}
	moved, err := s.MoveKeys(ctx, "old/ev/", "ev")
	if err != nil || moved != n {
		t.Fatalf("moved %d, %v; want %d", moved, err, n)
	}
	s.Close()
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if moved, err := s.MoveKeys(ctx, "old/ev/", "ev"); err != nil || moved != 0 {
		t.Errorf("a second run moved %d, %v", moved, err)
	}
	for i := range n {
		v, err := s.Get(ctx, "ev", fmt.Sprintf("%04d", i))
		want := fmt.Sprintf("event %d", i)
		if i == 3 {
			want = "newer"
		}
		if err != nil || string(v) != want {
			t.Fatalf("ev/%04d = %q, %v; want %q", i, v, err, want)
		}
	}
	left := 0
	if err := s.ScanPrefix(ctx, "old/", func(k, _ []byte) bool { left++; return string(k) == "old/other" }); err != nil || left != 1 {
		t.Errorf("left under old/: %d keys, %v; want only old/other", left, err)
	}
	if _, err := s.MoveKeys(ctx, "r/", "ev"); err == nil {
		t.Error("moving the store's own records was allowed")
	}
	if _, err := s.MoveKeys(ctx, "", "ev"); err == nil {
		t.Error("moving every key was allowed")
	}
}

// openTemp opens a store in a directory of its own, closed when the test
// ends: the set-up of the tests that never reopen it.
func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestWriteBatchAndScanPrefix(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string][]byte{"em/v/1": []byte("a"), "em/v/2": []byte("b"), "em/meta": []byte("m"), "other/x": []byte("x")}
	if err := s.WriteBatch(ctx, sets, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteBatch(ctx, nil, []string{"em/v/1", "em/v/none"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"r/x", "a/y", "kv/z"} {
		if err := s.WriteBatch(ctx, map[string][]byte{k: nil}, nil); err == nil || !strings.Contains(err.Error(), "belongs to the store") {
			t.Fatalf("a write to %s: %v", k, err)
		}
	}
	if err := s.ScanPrefix(ctx, "r/", func(k, v []byte) bool { return true }); err == nil {
		t.Fatal("a scan of the store's own prefix is allowed")
	}
	if err := s.Close(); err != nil { // a clean close syncs: the batch survives a reopen
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	if err := s.ScanPrefix(ctx, "em/", func(k, v []byte) bool { got = append(got, string(k)+"="+string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "em/meta=m,em/v/2=b" {
		t.Fatalf("scan em/: %v", got)
	}
	got = nil
	s.ScanPrefix(ctx, "em/", func(k, v []byte) bool { got = append(got, string(k)); return false })
	if len(got) != 1 {
		t.Fatalf("fn returned false but the scan went on: %v", got)
	}
}

// The export scans list exactly the entities of their kind, in id order,
// whatever the status, and nothing of the indexes or of the keys other
// packages keep beside the layout (embeddings, the Mem0 event log).
func TestExportScans(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	statuses := []memory.Status{memory.StatusActive, memory.StatusPending, memory.StatusSuperseded,
		memory.StatusRejected, memory.StatusRolledBack, memory.StatusDeleted}
	err := s.Update(ctx, func(tx memory.Tx) error {
		for i, st := range slices.Backward(statuses) { // written newest id first
			id := "r" + string(rune('a'+i))
			r := &memory.Record{ID: id, SlotID: "slot-1", SubjectID: "p", Layer: memory.LayerState, Summary: string(st),
				Status: st, Actor: memory.Actor{RunID: "run-1"}, CreatedAt: at}
			if err := tx.PutRecord(r); err != nil {
				return err
			}
			if err := tx.PutRollbackPoint(&memory.RollbackPoint{ID: memory.RollbackPointID(id), SlotID: "slot-1", RecordID: id, CreatedAt: at}); err != nil {
				return err
			}
		}
		for _, id := range []string{"slot-2", "slot-1"} {
			if err := tx.PutSlot(&memory.Slot{ID: id, SubjectID: "p", Layer: memory.LayerState, Versions: 3, CreatedAt: at}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][3]string{{"slack", "rb", "ts-1"}, {"remind", "ra", "t"}, {"slack", "ra/with/slashes", ""}} {
		if err := s.Put(ctx, kv[0], kv[1], []byte(kv[2])); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteBatch(ctx, map[string][]byte{"em/v/ra": []byte("vector")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKey(ctx, []byte("mem0/ev/e1"), []byte(`{"id":"e1"}`)); err != nil {
		t.Fatal(err)
	}

	type exportTx interface {
		ScanRecords(fn func(*memory.Record) bool) error
		ScanSlots(fn func(*memory.Slot) bool) error
		ScanRollbackPoints(fn func(*memory.RollbackPoint) bool) error
		ScanKV(fn func(namespace, key string, value []byte) bool) error
	}
	for _, tc := range []struct {
		name string
		scan func(tx exportTx, limit int) ([]string, error)
		want []string
	}{
		{"records", func(tx exportTx, limit int) (out []string, err error) {
			err = tx.ScanRecords(func(r *memory.Record) bool { out = append(out, r.ID+":"+string(r.Status)); return len(out) < limit })
			return
		}, []string{"ra:active", "rb:pending_review", "rc:superseded", "rd:rejected", "re:rolled_back", "rf:deleted"}},
		{"slots", func(tx exportTx, limit int) (out []string, err error) {
			err = tx.ScanSlots(func(s *memory.Slot) bool { out = append(out, s.ID); return len(out) < limit })
			return
		}, []string{"slot-1", "slot-2"}},
		{"rollback points", func(tx exportTx, limit int) (out []string, err error) {
			err = tx.ScanRollbackPoints(func(p *memory.RollbackPoint) bool { out = append(out, p.ID); return len(out) < limit })
			return
		}, []string{"rp_ra", "rp_rb", "rp_rc", "rp_rd", "rp_re", "rp_rf"}},
		{"kv", func(tx exportTx, limit int) (out []string, err error) {
			err = tx.ScanKV(func(ns, k string, v []byte) bool { out = append(out, ns+" "+k+"="+string(v)); return len(out) < limit })
			return
		}, []string{"remind ra=t", "slack ra/with/slashes=", "slack rb=ts-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{len(tc.want) + 1, 1} { // all, then stopped by fn
				var got []string
				err := s.View(ctx, func(rtx memory.ReadTx) error {
					tx, ok := rtx.(exportTx)
					if !ok {
						t.Fatalf("%T lacks the export scans", rtx)
					}
					var err error
					got, err = tc.scan(tx, limit)
					return err
				})
				want := tc.want[:min(limit, len(tc.want))]
				if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("limit %d: got %v (%v), want %v", limit, got, err, want)
				}
			}
		})
	}
}
