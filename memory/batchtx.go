package memory

import (
	"errors"
)

// RecordReplacer is implemented by transactions that can write a record
// over its stored version when the caller read that version in the same
// transaction; PutRecord reads and decodes it again to keep indexes in step.
type RecordReplacer interface {
	ReplaceRecord(old, cur *Record) error
}

// batchTx is the transaction of a quarantine or restore batch as one
// slot's steps see it. Undoing a slot reads and rewrites the same slot and
// records several times (undo the head, restore the version before, undo
// that too, bump the slot). batchTx answers repeated reads of a record or
// slot from what it read or was given, and writes each one once, in flush,
// over the version it read, so the store neither reads it again nor
// encodes the states in between. The final keys and indexes are the same:
// each index follows a record's status, and only the last status counts.
//
// Other reads (scans) go to the store and see buffered writes only once
// flushed; the bulk steps make none between flushes, and the slot-local
// scans flush first to be safe.
type batchTx struct {
	Tx
	records map[string]*batchRecord
	slots   map[string]*batchSlot
	points  map[string]*RollbackPoint // read beforehand (see rollbackPoints); shared, read only
}

type batchRecord struct {
	old   *Record // as stored when first read; a copy, so callers cannot change it
	cur   *Record // as read, or as last written
	known bool    // old was read in this transaction (else PutRecord reads it)
	dirty bool
}

type batchSlot struct {
	cur   *Slot
	dirty bool
}

func newBatchTx(tx Tx, points map[string]*RollbackPoint) *batchTx {
	return &batchTx{Tx: tx, records: map[string]*batchRecord{}, slots: map[string]*batchSlot{}, points: points}
}

func (b *batchTx) RollbackPoint(id string) (*RollbackPoint, error) {
	if p, ok := b.points[id]; ok {
		return p, nil
	}
	return b.Tx.RollbackPoint(id)
}

func (b *batchTx) Record(id string) (*Record, error) {
	if e, ok := b.records[id]; ok {
		return e.cur, nil
	}
	r, err := b.Tx.Record(id)
	if err != nil {
		return nil, err
	}
	old := *r
	b.records[id] = &batchRecord{old: &old, cur: r, known: true}
	return r, nil
}

func (b *batchTx) Slot(id string) (*Slot, error) {
	if e, ok := b.slots[id]; ok {
		return e.cur, nil
	}
	s, err := b.Tx.Slot(id)
	if err != nil {
		return nil, err
	}
	b.slots[id] = &batchSlot{cur: s}
	return s, nil
}

func (b *batchTx) PutRecord(r *Record) error {
	e, ok := b.records[r.ID]
	if !ok {
		e = &batchRecord{}
		b.records[r.ID] = e
	}
	e.cur, e.dirty = r, true
	return nil
}

func (b *batchTx) PutSlot(s *Slot) error {
	b.slots[s.ID] = &batchSlot{cur: s, dirty: true}
	return nil
}

func (b *batchTx) SlotRecords(slotID string) ([]*Record, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.SlotRecords(slotID)
}

func (b *batchTx) SlotPending(slotID string) ([]*Record, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.SlotPending(slotID)
}

// The other reads of the store see what the batch wrote only once it is
// flushed: no undo step uses them today, and flushing first keeps it so if
// one does.

func (b *batchTx) SubjectSlots(subjectID string) ([]string, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.SubjectSlots(subjectID)
}

func (b *batchTx) ScanActive(subjectID string, fn func(*Record) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanActive(subjectID, fn)
}

func (b *batchTx) ScanPending(fn func(*Record) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanPending(fn)
}

func (b *batchTx) ScanByActor(kind, id string, fn func(*Record) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanByActor(kind, id, fn)
}

func (b *batchTx) ScanEvents(after string, fn func(*Event) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanEvents(after, fn)
}

func (b *batchTx) ScanShadowed(after string, newest bool, fn func(*Event) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanShadowed(after, newest, fn)
}

func (b *batchTx) RecordEvents(recordID string) ([]*Event, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.RecordEvents(recordID)
}

func (b *batchTx) ScanNotices(fn func(*Notice) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanNotices(fn)
}

// flush writes what changed since the last flush and forgets what it read.
func (b *batchTx) flush() error {
	rr, canReplace := b.Tx.(RecordReplacer)
	for _, e := range b.records {
		if !e.dirty {
			continue
		}
		var err error
		if e.known && canReplace {
			err = rr.ReplaceRecord(e.old, e.cur)
		} else {
			err = b.Tx.PutRecord(e.cur)
		}
		if err != nil {
			return err
		}
	}
	for _, e := range b.slots {
		if e.dirty {
			if err := b.Tx.PutSlot(e.cur); err != nil {
				return err
			}
		}
	}
	clear(b.records)
	clear(b.slots)
	return nil
}

// ErrTxnTooBig is returned (wrapped) by a Store when one transaction would
// exceed its size limit.
var ErrTxnTooBig = errors.New("transaction too big")
