package snapshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Import writes entities in transactions of at most batchLines entities
// and about batchBytes of JSON: small enough for Badger's transaction size
// limit with its default memtable and for a PostgreSQL transaction to
// stay short, large enough that a million records take thousands of
// commits, not a million. A batch the store still finds too big is split.
const (
	batchLines = 512
	batchBytes = 512 << 10
)

// importer gathers entity lines into batches and writes each in one Update;
// kv entries go through KV.Put, after the entities before them.
type importer struct {
	ctx   context.Context
	dst   memory.Store
	kv    storeapi.KV
	batch []*line
	size  int
	wrote bool // something reached the store
}

func (w *importer) add(l *line) error {
	if l.Type == typeKV {
		if err := w.flush(); err != nil {
			return err
		}
		w.wrote = true
		if err := w.kv.Put(w.ctx, l.KV.Namespace, l.KV.Key, l.KV.Value); err != nil {
			return fmt.Errorf("kv %s/%s: %w", l.KV.Namespace, l.KV.Key, err)
		}
		return nil
	}
	w.batch = append(w.batch, l)
	w.size += entitySize(l)
	if len(w.batch) >= batchLines || w.size >= batchBytes {
		return w.flush()
	}
	return nil
}

func (w *importer) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	err := w.write(w.batch)
	w.batch, w.size = w.batch[:0], 0
	return err
}

// write stores lines in one transaction, or in halves if the store finds
// it too big.
func (w *importer) write(lines []*line) error {
	w.wrote = true
	err := w.dst.Update(w.ctx, func(tx memory.Tx) error {
		for _, l := range lines {
			if err := putEntity(tx, l); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, memory.ErrTxnTooBig) && len(lines) > 1 {
		half := len(lines) / 2
		if err := w.write(lines[:half]); err != nil {
			return err
		}
		return w.write(lines[half:])
	}
	if err != nil {
		return fmt.Errorf("write %d entities from %s %s: %w", len(lines), lines[0].Type, lines[0].entityID(), err)
	}
	return nil
}

// checkCounts compares what dst holds now with what the stream held.
func (w *importer) checkCounts(want Counts) error {
	have, err := storeCounts(w.ctx, w.dst)
	if err != nil {
		return fmt.Errorf("count what was imported: %w", err)
	}
	if have != want {
		return fmt.Errorf("the store holds %s after the import, the snapshot %s", have, want)
	}
	return nil
}

func putEntity(tx memory.Tx, l *line) error {
	switch l.Type {
	case typeSlot:
		return tx.PutSlot(l.Slot)
	case typeRecord:
		return tx.PutRecord(l.Record)
	case typePoint:
		return tx.PutRollbackPoint(l.RollbackPoint)
	case typeEvent:
		return tx.AppendEvent(l.Event)
	case typeNotice:
		return tx.PutNotice(l.Notice)
	}
	return fmt.Errorf("unknown line type %q", l.Type) // countEntity admitted it: a bug
}

// entitySize estimates an entity's bytes for batching, from its largest
// free-form parts: exact sizes would cost a second encoding.
func entitySize(l *line) int {
	const base = 512
	switch l.Type {
	case typeRecord:
		r := l.Record
		return base + len(r.Summary) + len(r.Value) + len(r.Evidence.Excerpt)
	case typeEvent:
		return base + len(l.Event.Input)
	case typeNotice:
		return base + len(l.Notice.Text)
	}
	return base
}
