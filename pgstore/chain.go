package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/memory"
)

// The audit chain (memory/chain.go) on PostgreSQL, one chain for the whole
// fleet.
//
// Why not seal inside the write transaction: an event's seal needs the
// hash of the event sealed just before it, and a SERIALIZABLE transaction
// reads the snapshot it started with, so it cannot see that event;
// locking the chain's head row FOR UPDATE makes every concurrent write of
// the fleet fail with a serialization error and run again. Serialising
// the commits instead (an advisory lock taken before COMMIT and held
// through it, with the events numbered under it) was tried: it gives the
// exact commit order but holds every writer of the fleet behind each
// other's WAL flush, and halved a two-instance fleet's write throughput
// (786 to 384 writes/s at 32 writers on one PostgreSQL 15).
//
// So a write only inserts its events, numbered from a sequence (ord, the
// column's default), and a sealer (any instance, one at a time under an
// advisory lock, in READ COMMITTED, which sees every commit) puts the
// committed events not yet in the chain into it in ord order: position
// (seq), the predecessor's hash, the sealed doc, and the head row. The
// chain's order is the order in which commits became visible to the
// sealers, ties (events committed between two seals) by ord: an event
// committed before another seal ran is never placed after events that
// seal did not see. Every instance runs a sealer, woken after its own
// commits and every sealInterval, so an instance killed between its
// COMMIT and the seal leaves nothing unsealed for long. Until it is sealed
// (milliseconds) an event is protected by the append-only trigger only.

// sealLock is the advisory lock key sealers take.
const sealLock = 0x6d656d67617402

// sealInterval is how often a sealer looks for events without waiting to
// be woken; sealBatch bounds the events one sealing transaction seals.
const (
	sealInterval = time.Second
	sealBatch    = 512
)

var _ memory.AuditChain = (*Store)(nil)

// Seal puts every numbered event not yet in the chain into it, in ord
// order, a batch per transaction.
func (s *Store) Seal(ctx context.Context) error {
	// Most wakes find nothing to seal: ask first, without a transaction
	// or the lock, so idle instances cost the database one index probe a
	// second.
	var pending bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM memgate_events WHERE seq IS NULL AND ord IS NOT NULL)").Scan(&pending); err != nil {
		if classify(err) == failUnavailable {
			return unavailable("seal the audit chain", err)
		}
		return fmt.Errorf("pgstore: seal the audit chain: %w", err)
	}
	if !pending {
		return nil
	}
	for {
		n, err := s.sealOnce(ctx)
		if err != nil {
			return err
		}
		if n < sealBatch {
			return nil
		}
	}
}

// sealOnce seals up to sealBatch events in one transaction.
func (s *Store) sealOnce(ctx context.Context) (int, error) {
	sealed := 0
	err := s.run(ctx, "seal the audit chain", rowTx, func(t *tx) error {
		sealed = 0
		if _, err := t.tx.Exec(t.ctx, "SELECT pg_advisory_xact_lock($1)", int64(sealLock)); err != nil {
			return t.fail(err)
		}
		head, err := t.chainHead()
		if err != nil {
			return err
		}
		rows, err := t.tx.Query(t.ctx, "SELECT id, doc FROM memgate_events WHERE seq IS NULL AND ord IS NOT NULL ORDER BY ord LIMIT $1", sealBatch)
		if err != nil {
			return t.fail(err)
		}
		type row struct {
			id  string
			doc []byte
		}
		pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.doc)
		})
		if err != nil {
			return t.fail(err)
		}
		for _, p := range pending {
			var e memory.Event
			if err := json.Unmarshal(p.doc, &e); err != nil {
				return fmt.Errorf("decode event %s: %w", p.id, err)
			}
			doc, next, err := memory.SealEvent(&e, head)
			if err != nil {
				return err
			}
			if err := t.exec("UPDATE memgate_events SET seq = $1, doc = $2 WHERE id = $3 AND seq IS NULL", int64(next.Seq), doc, p.id); err != nil {
				return err
			}
			head = next
		}
		if len(pending) > 0 {
			if err := t.exec(`INSERT INTO memgate_audit_head (one, seq, hash, event_id) VALUES (true, $1, $2, $3)
				ON CONFLICT (one) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, event_id = EXCLUDED.event_id`,
				int64(head.Seq), head.Hash, head.EventID); err != nil {
				return err
			}
		}
		sealed = len(pending)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pgstore: seal the audit chain: %w", err)
	}
	return sealed, nil
}

// chainHead reads the head row (the zero head before the first seal).
func (t *tx) chainHead() (memory.ChainHead, error) {
	if err := t.flush(); err != nil {
		return memory.ChainHead{}, err
	}
	var h memory.ChainHead
	var seq int64
	err := t.tx.QueryRow(t.ctx, "SELECT seq, hash, event_id FROM memgate_audit_head").Scan(&seq, &h.Hash, &h.EventID)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.ChainHead{}, nil
	} else if err != nil {
		return h, t.fail(err)
	}
	h.Seq = uint64(seq)
	return h, nil
}

// ChainHead returns the chain's head as the database records it.
func (s *Store) ChainHead(ctx context.Context) (memory.ChainHead, error) {
	var h memory.ChainHead
	err := s.run(ctx, "read the audit chain's head", readTx, func(t *tx) error {
		var err error
		h, err = t.chainHead()
		return err
	})
	return h, err
}

// ScanChain calls fn with the sealed events from position from on, in
// order, a page per read transaction.
func (s *Store) ScanChain(ctx context.Context, from uint64, fn func(pos uint64, id string, doc []byte) error) error {
	type entry struct {
		pos int64
		id  string
		doc []byte
	}
	for {
		var page []entry
		err := s.run(ctx, "scan the audit chain", readTx, func(t *tx) error {
			rows, err := t.tx.Query(t.ctx, "SELECT seq, id, doc FROM memgate_events WHERE seq >= $1 ORDER BY seq LIMIT $2", int64(from), pageSize)
			if err != nil {
				return t.fail(err)
			}
			page, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (entry, error) {
				var e entry
				return e, r.Scan(&e.pos, &e.id, &e.doc)
			})
			return t.fail(err)
		})
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(uint64(e.pos), e.id, e.doc); err != nil {
				return err
			}
		}
		if len(page) < pageSize {
			return nil
		}
		from = uint64(page[len(page)-1].pos) + 1
	}
}

// sealer seals after this instance's commits and every sealInterval until
// ctx ends.
func (s *Store) sealer(ctx context.Context) {
	tick := time.NewTicker(sealInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.sealKick:
		case <-tick.C:
		}
		if err := s.Seal(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("pgstore: sealing the audit chain failed; trying again", "err", err)
		}
	}
}

// kickSealer wakes the sealer without waiting.
func (s *Store) kickSealer() {
	select {
	case s.sealKick <- struct{}{}:
	default:
	}
}

var _ memory.EventTextEraser = (*tx)(nil)

// EraseEventText removes the text of a stored event (memory.EraseEventText):
// its hash, and so the chain, is unchanged. The trigger lets the update
// through for this transaction only (memgate.redact). An event not yet
// sealed is changed under the sealer's lock, so a seal that read it with
// its text cannot write that back.
func (t *tx) EraseEventText(id, why string) (bool, error) {
	if err := t.flush(); err != nil {
		return false, err
	}
	var doc []byte
	var seq *int64
	err := t.tx.QueryRow(t.ctx, "SELECT doc, seq FROM memgate_events WHERE id = $1", id).Scan(&doc, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, memory.Errorf(memory.ENOTFOUND, "event %s not found", id)
	} else if err != nil {
		return false, fmt.Errorf("get event %s: %w", id, t.fail(err))
	}
	out, changed, err := memory.EraseEventText(doc, why)
	if err != nil || !changed {
		return false, err
	}
	if seq == nil {
		if err := t.exec("SELECT pg_advisory_xact_lock($1)", int64(sealLock)); err != nil {
			return false, err
		}
	}
	if err := t.exec("SELECT set_config('memgate.redact', 'on', true)"); err != nil {
		return false, err
	}
	return true, t.exec("UPDATE memgate_events SET doc = $1 WHERE id = $2", out, id)
}
