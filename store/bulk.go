package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sync/errgroup"

	"github.com/memgate/memgate/memory"
)

// What quarantine and restore use beyond memory.Tx: they touch thousands of
// records, and these skip reads and decodes the plain methods make.
var (
	_ memory.RecordReplacer   = (*tx)(nil)
	_ memory.ActorSlotScanner = (*tx)(nil)
)

// ReplaceRecord writes r over old, the version of it stored before (nil if
// there is none), which the caller read in this transaction: PutRecord
// would read and decode it again to keep the indexes in step.
func (t *tx) ReplaceRecord(old, r *memory.Record) error {
	if old != nil && old.ID != r.ID {
		return fmt.Errorf("replace record %s: the old version given is %s", r.ID, old.ID)
	}
	return t.putRecord(old, r)
}

// ScanActorSlots calls fn with the id and slot id of each record written by
// a run/session (kind "run") or an agent/user (kind "actor"), oldest first,
// until fn returns false. It reads the slot id off the start of the stored
// record instead of decoding all of it, and reads the records on up to
// GOMAXPROCS goroutines, each on a snapshot of its own: a quarantine waits
// for this scan before it can split its work.
func (t *tx) ScanActorSlots(kind, id string, fn func(recordID, slotID string) bool) error {
	var prefix []byte
	switch kind {
	case "run":
		prefix = append(key("xr/", id), 0)
	case "actor":
		prefix = append(key("xa/", id), 0)
	default:
		return memory.Errorf(memory.EINVALID, "unknown actor kind %q", kind)
	}
	var ids []string
	if err := t.scanKeys(prefix, func(recID string) (bool, error) {
		ids = append(ids, recID)
		return true, nil
	}); err != nil {
		return err
	}
	slots := make([]string, len(ids))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(ids)/minPerReader))
	if t.db == nil {
		workers = 1
	}
	var eg errgroup.Group
	for w := range workers {
		eg.Go(func() error {
			// A Badger transaction is not safe for concurrent use: each
			// worker reads from a snapshot of its own. Records are never
			// deleted, and the slot ids found are only where the batches
			// look first: they read each record again under the slot's lock.
			rt := t
			if workers > 1 {
				txn := t.db.NewTransaction(false)
				defer txn.Discard()
				rt = &tx{txn: txn}
			}
			for i := w * len(ids) / workers; i < (w+1)*len(ids)/workers; i++ {
				var err error
				if slots[i], err = rt.recordSlot(ids[i]); err != nil {
					return fmt.Errorf("memory %s of %s %s: %w", ids[i], kind, id, err)
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	for i, recID := range ids {
		if !fn(recID, slots[i]) {
			return nil
		}
	}
	return nil
}

// minPerReader is the fewest records worth a goroutine of their own.
const minPerReader = 256

// recordSlot returns the slot id of a stored record.
func (t *tx) recordSlot(recID string) (string, error) {
	item, err := t.txn.Get(key("r/", recID))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return "", memory.Errorf(memory.ENOTFOUND, "memory %s not found", recID)
	} else if err != nil {
		return "", fmt.Errorf("get: %w", err)
	}
	var slotID string
	err = item.Value(func(b []byte) error {
		var ok bool
		if slotID, ok = leadingSlotID(b, recID); ok {
			return nil
		}
		var r struct {
			SlotID string `json:"slotId"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		slotID = r.SlotID
		return nil
	})
	return slotID, err
}

// leadingSlotID reads the slot id of a record encoded by encoding/json,
// which writes a memory.Record's fields in declaration order: id, then
// slotId. Anything else (an escaped character, another encoding) is left
// to a full decode.
func leadingSlotID(b []byte, recID string) (string, bool) {
	const head, mid = `{"id":"`, `","slotId":"`
	if len(b) < len(head)+len(recID)+len(mid) || string(b[:len(head)]) != head {
		return "", false
	}
	b = b[len(head):]
	if string(b[:len(recID)]) != recID || string(b[len(recID):len(recID)+len(mid)]) != mid {
		return "", false
	}
	b = b[len(recID)+len(mid):]
	end := bytes.IndexByte(b, '"')
	if end < 0 || bytes.IndexByte(b[:end], '\\') >= 0 {
		return "", false
	}
	return string(b[:end]), true
}
