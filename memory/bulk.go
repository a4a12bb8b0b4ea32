package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// BulkResult reports a quarantine or a restore.
type BulkResult struct {
	RolledBack []string `json:"rolledBack"` // versions undone that were the head
	Retracted  []string `json:"retracted"`  // versions undone that someone else had since replaced
	Rejected   []string `json:"rejected"`   // pending writes rejected
	// KeptRolledBack (restore) are versions that were active at the
	// restore's time and have been rolled back since: a restore goes back
	// by undoing, it never re-applies what a person or a quarantine undid.
	KeptRolledBack []string `json:"keptRolledBack,omitempty"`
	Slots          int      `json:"slots"`
}

// Quarantine undoes everything one run/session (kind "run") or one agent/
// user (kind "actor") wrote: in each slot its versions are rolled back from
// the head, newest first; its versions someone else has since replaced are
// retracted so no later rollback restores them; its pending writes are
// rejected. Each slot changes atomically; slots are processed in batches.
func (g *Governor) Quarantine(ctx context.Context, kind, id, reason, by string) (*BulkResult, error) {
	if err := checkNotes("reason", reason, by); err != nil {
		return nil, err
	}
	if kind != "run" && kind != "actor" {
		return nil, Errorf(EINVALID, "quarantine needs a runId or an actorId")
	}
	if id == "" {
		return nil, Errorf(EINVALID, "quarantine needs a runId or an actorId")
	}
	if err := CheckLookupID(kind+" id", id); err != nil {
		return nil, err
	}
	bySlot := map[string]map[string]bool{}
	add := func(recID, slotID string) bool {
		if bySlot[slotID] == nil {
			bySlot[slotID] = map[string]bool{}
		}
		bySlot[slotID][recID] = true
		return true
	}
	err := g.store.View(ctx, func(tx ReadTx) error {
		// Only the slot of each record is needed here; the batches read
		// the records again under their locks.
		if sc, ok := tx.(ActorSlotScanner); ok {
			return sc.ScanActorSlots(kind, id, add)
		}
		return tx.ScanByActor(kind, id, func(r *Record) bool { return add(r.ID, r.SlotID) })
	})
	if err != nil {
		return nil, err
	}
	points, err := g.rollbackPoints(ctx, bySlot)
	if err != nil {
		return nil, err
	}
	// A record approved as append moved to its own slot; the index still
	// finds it by id, and loading it inside the batch sees its current slot.
	res, err := g.bulk(ctx, slices.Collect(maps.Keys(bySlot)), points, func(tx Tx, slotID string, now time.Time, res *BulkResult) error {
		return g.quarantineSlot(tx, slotID, bySlot[slotID], res, reason, by, now)
	})
	if err != nil {
		return res, err
	}
	now := g.now()
	err = g.storeUpdate(ctx, func(tx Tx) error {
		ev := &Event{Type: EventQuarantined, At: now, By: by, Reason: fmt.Sprintf("%s %s: %s", kind, id, reason),
			Related: append(append([]string{}, res.RolledBack...), res.Retracted...)}
		eff := Effects{Events: []*Event{ev}, Notices: []*Notice{{Kind: NoticeQuarantine, At: now,
			Text: fmt.Sprintf("Quarantined %s %s by %s (%s): %d rolled back, %d retracted, %d pending rejected.%s",
				kind, id, by, reason, len(res.RolledBack), len(res.Retracted), len(res.Rejected),
				listIDs(" Undone: ", append(append([]string{}, res.RolledBack...), res.Retracted...)))}}}
		return g.apply(tx, &eff)
	})
	g.obs.RolledBack(ScopeQuarantine, reason, len(res.RolledBack)+len(res.Retracted))
	g.wake(true)
	return res, err
}

func (g *Governor) quarantineSlot(tx Tx, slotID string, ids map[string]bool, res *BulkResult, reason, by string, now time.Time) error {
	st, err := loadHead(tx, slotID)
	if err != nil {
		return err
	}
	rb := &RollbackResult{quiet: true}
	for st.Head != nil && ids[st.Head.ID] && (st.Head.Status == StatusActive || st.Head.Status == StatusDeleted) {
		if st, err = g.rollbackHead(tx, st, rb, reason, by, now); err != nil {
			return err
		}
	}
	undone := map[string]bool{}
	for _, r := range rb.RolledBack {
		res.RolledBack = append(res.RolledBack, r.ID)
		undone[r.ID] = true
	}
	for _, id := range newestFirst(ids) {
		if undone[id] {
			continue // rolled back just above
		}
		rec, err := tx.Record(id)
		if err != nil {
			return err
		}
		var eff Effects
		switch rec.Status {
		case StatusPending:
			if eff, err = PlanReject(st, rec, Review{By: by, Route: "quarantine", Note: reason}, now); err != nil {
				return err
			}
			res.Rejected = append(res.Rejected, id)
		case StatusSuperseded:
			if eff, err = Retract(rec, reason, by, now); err != nil {
				return err
			}
			res.Retracted = append(res.Retracted, id)
		default:
			continue
		}
		if err := g.apply(tx, &eff); err != nil {
			return err
		}
		if rec.Status == StatusPending && rec.SlotID == slotID {
			// The rejection touched the slot and took the write off its
			// pending list; a retraction changed neither.
			if len(eff.Slots) > 0 {
				st.Slot = eff.Slots[0]
			}
			st.Pending = others(st.Pending, id)
		}
	}
	if st.Slot != nil {
		// Bump the slot so a concurrent transition on it conflicts.
		eff := Effects{Slots: []*Slot{touchSlot(st.Slot, &Record{}, now)}}
		return g.apply(tx, &eff)
	}
	return nil
}

// Restore returns every slot of a subject to what was its head at time at
// by undoing: versions applied after it are rolled back, newest first.
// It never re-applies a version that was active then and has been rolled
// back since (that would reverse a person's or a quarantine's decision
// without review); it lists them in KeptRolledBack. Pending writes are
// left for their reviewers.
func (g *Governor) Restore(ctx context.Context, subjectID string, at time.Time, reason, by string) (*BulkResult, error) {
	if err := checkNotes("reason", reason, by); err != nil {
		return nil, err
	}
	if subjectID == "" {
		return nil, Errorf(EINVALID, "restore needs a subjectId")
	}
	if err := CheckLookupID("subjectId", subjectID); err != nil {
		return nil, err
	}
	var slots []string
	err := g.store.View(ctx, func(tx ReadTx) (err error) {
		slots, err = tx.SubjectSlots(subjectID)
		return err
	})
	if err != nil {
		return nil, err
	}
	res, err := g.bulk(ctx, slots, nil, func(tx Tx, slotID string, now time.Time, res *BulkResult) error {
		st, err := loadHead(tx, slotID)
		if err != nil {
			return err
		}
		rb := &RollbackResult{quiet: true}
		for st.Head != nil && st.Head.ActivatedAt.After(at) {
			if st, err = g.rollbackHead(tx, st, rb, reason, by, now); err != nil {
				return err
			}
		}
		for _, r := range rb.RolledBack {
			res.RolledBack = append(res.RolledBack, r.ID)
		}
		// Say so when the version active at that time is not the head now
		// because it was rolled back since: restoring it would reverse a
		// decision without review.
		if then, err := activeAt(tx, slotID, at); err != nil {
			return err
		} else if then != nil && then.Status == StatusRolledBack && (st.Head == nil || st.Head.ID != then.ID) {
			res.KeptRolledBack = append(res.KeptRolledBack, then.ID)
		}
		return nil
	})
	if err == nil {
		now := g.now()
		err = g.storeUpdate(ctx, func(tx Tx) error {
			eff := Effects{Events: []*Event{{Type: EventRestored, At: now, SubjectID: subjectID, By: by,
				Reason: fmt.Sprintf("subject %s restored to %s: %s", subjectID, at.Format(time.RFC3339), reason), Related: res.RolledBack}},
				Notices: []*Notice{{Kind: NoticeQuarantine, At: now, Text: fmt.Sprintf("Restored subject %s to %s by %s (%s): %d rolled back.%s",
					subjectID, at.Format(time.RFC3339), by, reason, len(res.RolledBack), listIDs(" Undone: ", res.RolledBack))}}}
			return g.apply(tx, &eff)
		})
	}
	g.obs.RolledBack(ScopeRestore, reason, len(res.RolledBack))
	g.wake(true)
	return res, err
}

// bulk runs fn for each slot, batching slots into transactions, and
// returns what the committed batches did. points are rollback points read
// beforehand, which fn's reads of them get instead of a read of the store. fn records into the result it is
// given, which counts only once its transaction commits: a transaction
// retried after a conflict, or split because it was too big, runs fn again.
// Batches run on up to GOMAXPROCS goroutines, each owning the slots of some
// lock stripes, so they never wait for one another and one's CPU work
// overlaps another's fsync; each slot still changes atomically. On an
// error it returns what committed before it.
func (g *Governor) bulk(ctx context.Context, slots []string, points map[string]*RollbackPoint, fn func(tx Tx, slotID string, now time.Time, res *BulkResult) error) (*BulkResult, error) {
	total := newBulkResult()
	workers := max(1, min(runtime.GOMAXPROCS(0), len(slots)/g.batch))
	parts := make([][]string, workers)
	for _, s := range slots {
		w := g.stripe(s) % workers
		parts[w] = append(parts[w], s)
	}
	var mu sync.Mutex
	eg, ctx := errgroup.WithContext(ctx)
	for _, part := range parts {
		eg.Go(func() error {
			sort.Strings(part)
			for len(part) > 0 {
				n := min(g.batch, len(part))
				for {
					res, err := g.bulkBatch(ctx, part[:n], points, fn)
					if errors.Is(err, ErrTxnTooBig) && n > 1 {
						n /= 2
						continue
					}
					if err != nil {
						return err
					}
					mu.Lock()
					total.add(res)
					mu.Unlock()
					break
				}
				part = part[n:]
			}
			return nil
		})
	}
	err := eg.Wait()
	total.sort()
	return total, err
}

func (g *Governor) bulkBatch(ctx context.Context, slots []string, points map[string]*RollbackPoint, fn func(Tx, string, time.Time, *BulkResult) error) (*BulkResult, error) {
	unlock := g.lock(slots...)
	defer unlock()
	now := g.now()
	var res *BulkResult
	err := g.storeUpdate(ctx, func(tx Tx) error {
		res = newBulkResult() // an attempt that does not commit leaves nothing behind
		btx := newBatchTx(tx, points)
		for _, s := range slots {
			if err := fn(btx, s, now, res); err != nil {
				return fmt.Errorf("slot %s: %w", s, err)
			}
			if err := btx.flush(); err != nil {
				return fmt.Errorf("slot %s: %w", s, err)
			}
		}
		return nil
	})
	return res, err
}

// ActorSlotScanner is implemented by read transactions that can list the
// records of a run/session (kind "run") or agent/user (kind "actor") with
// their slot ids, oldest first, without decoding each record.
type ActorSlotScanner interface {
	ScanActorSlots(kind, id string, fn func(recordID, slotID string) bool) error
}

// rollbackPoints reads the rollback points of the records a quarantine
// undoes, before its batches start: in id order, so neighbouring reads
// share Badger's blocks, which a batch reading them slot by slot would
// each load, and on up to GOMAXPROCS snapshots at once. A rollback point
// never changes once written, so a batch may use one read in any snapshot;
// records never applied have none.
func (g *Governor) rollbackPoints(ctx context.Context, bySlot map[string]map[string]bool) (map[string]*RollbackPoint, error) {
	var ids []string
	for _, recs := range bySlot {
		for id := range recs {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	parts := max(1, min(runtime.GOMAXPROCS(0), len(ids)/256))
	found := make([][]*RollbackPoint, parts)
	eg, ctx := errgroup.WithContext(ctx)
	for w := range parts {
		eg.Go(func() error {
			return g.store.View(ctx, func(tx ReadTx) error {
				for _, id := range ids[w*len(ids)/parts : (w+1)*len(ids)/parts] {
					p, err := tx.RollbackPoint(RollbackPointID(id))
					if ErrorCode(err) == ENOTFOUND {
						continue
					} else if err != nil {
						return fmt.Errorf("rollback point of %s: %w", id, err)
					}
					found[w] = append(found[w], p)
				}
				return nil
			})
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	points := make(map[string]*RollbackPoint, len(ids))
	for _, ps := range found {
		for _, p := range ps {
			points[p.ID] = p
		}
	}
	return points, nil
}

func newBulkResult() *BulkResult {
	return &BulkResult{RolledBack: []string{}, Retracted: []string{}, Rejected: []string{}}
}

func (r *BulkResult) add(o *BulkResult) {
	r.RolledBack = append(r.RolledBack, o.RolledBack...)
	r.Retracted = append(r.Retracted, o.Retracted...)
	r.Rejected = append(r.Rejected, o.Rejected...)
	r.KeptRolledBack = append(r.KeptRolledBack, o.KeptRolledBack...)
	r.Slots += o.Slots
}

// activeAt returns the version of a slot that was active at time at, or
// nil: activated at or before it and neither superseded nor rolled back by
// then.
func activeAt(tx ReadTx, slotID string, at time.Time) (*Record, error) {
	recs, err := tx.SlotRecords(slotID)
	if err != nil {
		return nil, err
	}
	for _, r := range slices.Backward(recs) {
		if r.ActivatedAt.IsZero() || r.ActivatedAt.After(at) {
			continue
		}
		if (!r.SupersededAt.IsZero() && !r.SupersededAt.After(at)) || (!r.RolledBackAt.IsZero() && !r.RolledBackAt.After(at)) {
			continue
		}
		return r, nil
	}
	return nil, nil
}

// sort orders the ids (ULIDs: by time), whichever worker undid them.
func (r *BulkResult) sort() {
	slices.Sort(r.RolledBack)
	slices.Sort(r.Retracted)
	slices.Sort(r.Rejected)
	slices.Sort(r.KeptRolledBack)
}

// newestFirst returns the ids (ULIDs, sortable by time) newest first.
func newestFirst(m map[string]bool) []string {
	out := slices.Sorted(maps.Keys(m))
	slices.Reverse(out)
	return out
}

// listIDs names up to 20 ids for a human-readable summary.
func listIDs(prefix string, ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	const most = 20
	if len(ids) <= most {
		return prefix + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s%s and %d more", prefix, strings.Join(ids[:most], ", "), len(ids)-most)
}
