package memory

import (
	"context"
	"hash/fnv"
	"slices"
)

func (g *Governor) lock(slotIDs ...string) func() {
	idx := make([]int, 0, len(slotIDs))
	for _, id := range slotIDs {
		idx = append(idx, g.stripe(id))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx) // ascending order: no two callers deadlock
	for _, i := range idx {
		g.stripes[i].Lock()
	}
	return func() {
		for _, i := range idx {
			g.stripes[i].Unlock()
		}
	}
}

// stripe is the index of the lock that guards slotID.
func (g *Governor) stripe(slotID string) int {
	h := fnv.New32a()
	h.Write([]byte(slotID))
	return int(h.Sum32() % uint32(len(g.stripes)))
}

// busy reports whether another write holds slotID's lock (or one that
// shares its stripe) at this instant: a hint, which may be stale at once.
func (g *Governor) busy(slotID string) bool {
	m := &g.stripes[g.stripe(slotID)]
	if !m.TryLock() {
		return true
	}
	m.Unlock()
	return false
}

// update runs fn in a transaction of the store and calls unlock, which
// releases the locks of the slots fn changes: as soon as the transaction
// has committed when the store can wait for durability apart (see
// SyncDeferrer), else once it is durable. It returns once the transaction
// is durable either way.
func (g *Governor) update(ctx context.Context, unlock func(), fn func(Tx) error) error {
	d, ok := g.store.(SyncDeferrer)
	if !ok {
		defer unlock()
		return g.storeUpdate(ctx, fn)
	}
	end := g.beginWrite()
	defer end() // durable, or failed: no longer under way either way
	released := false
	release := func() {
		if !released {
			released = true
			unlock()
		}
	}
	defer release() // also if fn panics
	sync, err := d.UpdateThenSync(ctx, fn)
	release()
	if err != nil {
		return err
	}
	return sync()
}

// lockSlotOf locks the slot record id is in, for a change to that record.
func (g *Governor) lockSlotOf(ctx context.Context, id string) (unlock func(), err error) {
	slotID, err := g.slotOf(ctx, id)
	if err != nil {
		return nil, err
	}
	return g.lock(slotID), nil
}

// slotOf finds the slot a record is in, for locking before the transaction.
func (g *Governor) slotOf(ctx context.Context, id string) (string, error) {
	if err := CheckLookupID("id", id); err != nil {
		return "", err
	}
	var slotID string
	err := g.store.View(ctx, func(tx ReadTx) error {
		r, err := tx.Record(id)
		if err != nil {
			return err
		}
		slotID = r.SlotID
		return nil
	})
	return slotID, err
}
