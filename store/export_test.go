package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

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
