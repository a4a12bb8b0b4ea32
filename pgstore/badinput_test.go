package pgstore_test

import (
	"context"
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// TestTextPostgreSQLCannotHoldIsBadInput: a NUL byte or invalid UTF-8 in
// an id reaching the store directly (the domain refuses them first, see
// memory.CheckLookupID) is EINVALID, a 400, not an internal error: for
// each read by id, each scan by id, and the KV area.
func TestTextPostgreSQLCannotHoldIsBadInput(t *testing.T) {
	st := open(t, pgtest.New(t))
	ctx := context.Background()
	for _, id := range []string{"ab\x00cd", "ab\xffcd"} {
		for name, read := range map[string]func(tx memory.ReadTx) error{
			"Record":        func(tx memory.ReadTx) error { _, err := tx.Record(id); return err },
			"Slot":          func(tx memory.ReadTx) error { _, err := tx.Slot(id); return err },
			"SlotRecords":   func(tx memory.ReadTx) error { _, err := tx.SlotRecords(id); return err },
			"SubjectSlots":  func(tx memory.ReadTx) error { _, err := tx.SubjectSlots(id); return err },
			"RollbackPoint": func(tx memory.ReadTx) error { _, err := tx.RollbackPoint(id); return err },
			"ScanActive":    func(tx memory.ReadTx) error { return tx.ScanActive(id, func(*memory.Record) bool { return true }) },
			"ScanByActor": func(tx memory.ReadTx) error {
				return tx.ScanByActor("run", id, func(*memory.Record) bool { return true })
			},
			"ScanEvents":   func(tx memory.ReadTx) error { return tx.ScanEvents(id, func(*memory.Event) bool { return true }) },
			"RecordEvents": func(tx memory.ReadTx) error { _, err := tx.RecordEvents(id); return err },
			"ScanActiveIndex": func(tx memory.ReadTx) error {
				return tx.(storeapi.ActiveScanner).ScanActiveIndex(ctx, "s", memory.Scope{UserID: id}, func(storeapi.ActiveEntry, uint64) bool { return true })
			},
		} {
			err := st.View(ctx, read)
			if code := memory.ErrorCode(err); code != memory.EINVALID {
				t.Errorf("%s(%q): %v (code %s), want %s", name, id, err, code, memory.EINVALID)
			}
		}
		if _, err := st.Get(ctx, "ns", id); memory.ErrorCode(err) != memory.EINVALID {
			t.Errorf("KV Get(%q): %v, want %s", id, err, memory.EINVALID)
		}
	}
}
