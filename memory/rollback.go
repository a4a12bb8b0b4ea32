package memory

import (
	"context"
	"fmt"
	"time"
)

// RollbackResult lists what a rollback changed.
type RollbackResult struct {
	RolledBack []*Record `json:"rolledBack"`
	Restored   *Record   `json:"restored,omitempty"` // the slot's head afterwards, if any
	quiet      bool      // part of a bulk operation that notifies once
}

// Rollback undoes a record: the slot returns exactly to its rollback point.
// A record that is no longer the head needs cascade, which undoes every
// version after it first, newest first, in the same transaction.
// Errors: ENOTFOUND, ECONFLICT.
func (g *Governor) Rollback(ctx context.Context, id string, cascade bool, reason, by string) (*RollbackResult, error) {
	if err := checkNotes("reason", reason, by); err != nil {
		return nil, err
	}
	unlock, err := g.lockSlotOf(ctx, id)
	if err != nil {
		return nil, err
	}
	now := g.now()
	var res *RollbackResult
	err = g.update(ctx, unlock, func(tx Tx) error {
		res = &RollbackResult{}
		rec, err := tx.Record(id)
		if err != nil {
			return err
		}
		st, err := loadSlot(tx, rec.SlotID)
		if err != nil {
			return err
		}
		if rec.Status == StatusSuperseded && cascade {
			if !inChain(tx, st.Head, rec.ID) {
				return Errorf(ECONFLICT, "memory %s is not in the line of versions behind the slot's head", id)
			}
			for st.Head != nil && st.Head.ID != rec.ID {
				if st, err = g.rollbackHead(tx, st, res, reason, by, now); err != nil {
					return err
				}
			}
		}
		if _, err := g.rollbackRecord(tx, st, rec.ID, res, reason, by, now); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	scope := ScopeRecord
	if len(res.RolledBack) > 1 {
		scope = ScopeCascade
	}
	g.obs.RolledBack(scope, reason, len(res.RolledBack))
	g.wake(true)
	return res, nil
}

// rollbackRecord rolls back the record id, which must be the head; the pure
// Rollback explains why not when it is not.
func (g *Governor) rollbackRecord(tx Tx, st SlotState, id string, res *RollbackResult, reason, by string, now time.Time) (SlotState, error) {
	rec, err := tx.Record(id)
	if err != nil {
		return st, err
	}
	if st.Head == nil || st.Head.ID != id {
		_, err := PlanRollback(st, rec, nil, nil, reason, by, now)
		if err == nil {
			err = Errorf(ECONFLICT, "memory %s is not the slot's head", id)
		}
		return st, err
	}
	return g.rollbackHead(tx, st, res, reason, by, now)
}

// rollbackHead undoes the slot's head and returns the slot's new state.
// Bulk operations (quarantine, restore) announce themselves once, so they
// set res.Quiet to drop the per-version notices.
func (g *Governor) rollbackHead(tx Tx, st SlotState, res *RollbackResult, reason, by string, now time.Time) (SlotState, error) {
	head := st.Head
	point, err := tx.RollbackPoint(head.RollbackPoint)
	if err != nil {
		return st, fmt.Errorf("rollback point of %s: %w", head.ID, err)
	}
	restore, err := restoreTarget(tx, point.Replaced)
	if err != nil {
		return st, err
	}
	eff, err := PlanRollback(st, head, point, restore, reason, by, now)
	if err != nil {
		return st, err
	}
	if res.quiet {
		eff.Notices = nil
	}
	if err := g.apply(tx, &eff); err != nil {
		return st, err
	}
	res.RolledBack = append(res.RolledBack, eff.Records[0])
	res.Restored = nil
	// The slot's new state is what was just written: the slot with its new
	// head, the restored version, and the same pending writes (a rollback
	// decides none). Reloading it costs an index scan per version undone.
	next := SlotState{Slot: eff.Slots[0], Pending: st.Pending}
	if restore != nil {
		res.Restored = eff.Records[1]
		next.Head = eff.Records[1]
	}
	return next, nil
}

// restoreTarget follows a rollback point back past versions that were
// themselves rolled back, so an undone version is never resurrected.
func restoreTarget(tx ReadTx, id string) (*Record, error) {
	for seen := 0; id != ""; seen++ {
		r, err := tx.Record(id)
		if err != nil {
			return nil, fmt.Errorf("restore target %s: %w", id, err)
		}
		if r.Erased != nil {
			return nil, nil // an erased version is never restored: the slot is left empty
		}
		if r.Status != StatusRolledBack {
			return r, nil
		}
		if seen > 1_000_000 {
			return nil, Errorf(EINTERNAL, "version chain of %s does not end", id)
		}
		id = r.Supersedes
	}
	return nil, nil
}

func inChain(tx ReadTx, head *Record, id string) bool {
	for r := head; r != nil; {
		if r.ID == id {
			return true
		}
		if r.Supersedes == "" {
			return false
		}
		next, err := tx.Record(r.Supersedes)
		if err != nil {
			return false
		}
		r = next
	}
	return false
}
