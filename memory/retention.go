package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Retention says how long versions that are no longer current keep their
// text: superseded, rejected and rolled-back ones, per layer (policy data,
// memgate_config.retention). Past it, the retention pass erases their text
// as an erasure does (ids, times, statuses, decisions and a salted hash
// stay, and the audit events lose their text the same way). Active and
// pending records, and deletions, are never touched. Zero keeps the text
// for ever.
type Retention struct {
	Default time.Duration           `json:"default,omitempty"`
	Layers  map[Layer]time.Duration `json:"layers,omitempty"`
}

// For is the retention of a layer.
func (r Retention) For(l Layer) time.Duration {
	if d, ok := r.Layers[l]; ok {
		return d
	}
	return r.Default
}

// Enabled reports whether any layer's text is ever removed.
func (r Retention) Enabled() bool {
	return r.Default > 0 || slices.ContainsFunc(slices.Collect(maps.Values(r.Layers)), func(d time.Duration) bool { return d > 0 })
}

// retained reports whether a record's text is past its retention at now.
func (r Retention) retained(rec *Record, now time.Time) bool {
	if rec.Erased != nil {
		return false
	}
	var ended time.Time
	switch rec.Status {
	case StatusSuperseded:
		ended = rec.SupersededAt
	case StatusRejected:
		ended = rec.DecidedAt
	case StatusRolledBack:
		ended = rec.RolledBackAt
	default:
		return false
	}
	if ended.IsZero() {
		ended = rec.CreatedAt
	}
	d := r.For(rec.Layer)
	return d > 0 && !ended.Add(d).After(now)
}

// RetentionResult says what a retention pass did.
type RetentionResult struct {
	Purged  int `json:"purged"`  // versions whose text was removed
	Events  int `json:"events"`  // audit events whose text was removed
	Expired int `json:"expired"` // active records past their expiry, made deletions
	// Behind counts what was due and left for the next round (the bound).
	Behind int `json:"behind"`
}

// RetentionPass removes the text of at most most versions past their
// retention, and makes at most most active records past their expiry
// deletions (recorded as expired): one bounded round of the background
// pass. It reads every record to find them.
func (g *Governor) RetentionPass(ctx context.Context, rules Retention, most int) (RetentionResult, error) {
	now := g.now()
	var res RetentionResult
	slots, due := map[string]bool{}, map[string]bool{}
	var expire []*Record
	err := g.store.View(ctx, func(tx ReadTx) error {
		clear(slots)
		clear(due)
		res, expire = RetentionResult{}, nil
		rs, ok := tx.(RecordScanner)
		if !ok {
			return Errorf(EUNAVAILABLE, "this store cannot list its records for retention")
		}
		return rs.ScanRecords(func(r *Record) bool {
			switch {
			case r.Status == StatusActive && !r.ExpiresAt.IsZero() && !r.ExpiresAt.After(now):
				if len(expire) < most {
					expire = append(expire, r)
				} else {
					res.Behind++
				}
			case rules.retained(r, now):
				if len(due) < most {
					due[r.ID] = true
					slots[r.SlotID] = true
				} else {
					res.Behind++
				}
			}
			return true
		})
	})
	if err != nil {
		return res, fmt.Errorf("retention: %w", err)
	}
	id := "retention-" + now.UTC().Format(time.RFC3339)
	job := erasureJob{id: id, by: "retention", why: "retention", event: EventRetained,
		summary: ErasureSummary{ID: id}, match: func(r *Record) bool { return due[r.ID] && rules.retained(r, now) }}
	for batch := range slices.Chunk(slices.Sorted(maps.Keys(slots)), erasureBatch) {
		c, _, err := g.eraseSlots(ctx, job, batch)
		if err != nil {
			return res, fmt.Errorf("retention: %w", err)
		}
		res.Purged += c.Records
		res.Events += c.Events
	}
	for _, r := range expire {
		ok, err := g.expire(ctx, r.ID, now)
		if err != nil {
			return res, fmt.Errorf("retention: expire %s: %w", r.ID, err)
		}
		if ok {
			res.Expired++
		}
	}
	return res, nil
}

// expire makes an active record past its expiry a deletion, the slot's
// head with nothing active, and records it as expired.
func (g *Governor) expire(ctx context.Context, id string, now time.Time) (bool, error) {
	unlock, err := g.lockSlotOf(ctx, id)
	if err != nil {
		return false, err
	}
	done := false
	err = g.update(ctx, unlock, func(tx Tx) error {
		done = false
		r, err := tx.Record(id)
		if err != nil {
			return err
		}
		if r.Status != StatusActive || r.ExpiresAt.IsZero() || r.ExpiresAt.After(now) {
			return nil // changed meanwhile
		}
		s, err := tx.Slot(r.SlotID)
		if err != nil {
			return err
		}
		c := r.Clone()
		c.Status, c.SupersededAt = StatusDeleted, now
		if err := tx.PutRecord(c); err != nil {
			return err
		}
		if err := tx.PutSlot(touchSlot(s, nil, now)); err != nil {
			return err
		}
		done = true
		return tx.AppendEvent(&Event{ID: g.newID(), Type: EventExpired, At: now, RecordID: r.ID, SlotID: r.SlotID,
			SubjectID: r.SubjectID, By: "retention"})
	})
	return done, err
}
