package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Get returns a record by its id, or, given a slot id, the slot's active
// version. Errors: ENOTFOUND.
func (g *Governor) Get(ctx context.Context, id string) (*Record, error) {
	if err := CheckLookupID("id", id); err != nil {
		return nil, err
	}
	var out *Record
	err := g.store.View(ctx, func(tx ReadTx) error {
		r, err := tx.Record(id)
		if err == nil {
			out = r
			return nil
		} else if ErrorCode(err) != ENOTFOUND {
			return err
		}
		st, err := loadSlot(tx, id)
		if err != nil {
			return err
		}
		if out = st.Active(); out == nil {
			return Errorf(ENOTFOUND, "memory %s not found", id)
		}
		return nil
	})
	if err == nil && !TenantOf(ctx).Covers(out.Scope) {
		return nil, notFound(id)
	}
	return out, err
}

// ActiveInSlot returns a slot's active version, looking the id up as a slot
// id only. Get cannot answer this for free text: such a slot's id is its
// first record's id, so Get answers that (perhaps superseded) version.
// Errors: ENOTFOUND when the slot does not exist, has no active version or
// belongs to another tenant (the same answer for all three).
func (g *Governor) ActiveInSlot(ctx context.Context, slotID string) (*Record, error) {
	if err := CheckLookupID("slot id", slotID); err != nil {
		return nil, err
	}
	var out *Record
	err := g.store.View(ctx, func(tx ReadTx) error {
		st, err := loadHead(tx, slotID)
		if err != nil {
			return err
		}
		if st.Slot == nil || !TenantOf(ctx).Covers(st.Slot.Scope) {
			return notFound(slotID)
		}
		if out = st.Active(); out == nil {
			return Errorf(ENOTFOUND, "slot %s has no active version", slotID)
		}
		return nil
	})
	if err == nil && !TenantOf(ctx).Covers(out.Scope) {
		return nil, notFound(slotID)
	}
	return out, err
}

// GetActive is Get for readers of the active layer (rule 7): a record id
// answers only while that version is active; a slot id answers its active
// version. Pending, superseded, rejected and rolled-back versions are
// ENOTFOUND here; history is asked for explicitly.
func (g *Governor) GetActive(ctx context.Context, id string) (*Record, error) {
	r, err := g.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status != StatusActive {
		return nil, Errorf(ENOTFOUND, "memory %s is not active (ask for its history to see other versions)", id)
	}
	return r, nil
}

// ListFilter selects active records.
type ListFilter struct {
	SubjectID string
	Layer     Layer
	Scope     Scope  // each non-empty field must match
	Query     string // every word must appear in the summary, any case
	Limit     int    // 0 = no limit
	// After starts the list after this place in its order (a page's
	// cursor); the zero Position starts at the beginning.
	After Position
}

// Position is a place in the order List returns active records: by
// subject, then by record id (oldest first within a subject), each
// compared byte by byte, as every store keeps its index of them.
type Position struct{ SubjectID, ID string }

// PositionOf is the place of r in list order.
func PositionOf(r *Record) Position { return Position{r.SubjectID, r.ID} }

// IsZero reports whether p is the beginning.
func (p Position) IsZero() bool { return p == Position{} }

// Before reports whether p comes before the record of subject and id in
// list order, so that a page starting after p holds it.
func (p Position) Before(subject, id string) bool {
	return p.SubjectID < subject || p.SubjectID == subject && p.ID < id
}

// Match reports whether an active record passes the filter.
func (f *ListFilter) Match(r *Record, words []string) bool {
	if f.SubjectID != "" && r.SubjectID != f.SubjectID {
		return false
	}
	if f.Layer != "" && r.Layer != f.Layer {
		return false
	}
	for _, p := range [][2]string{{f.Scope.UserID, r.Scope.UserID}, {f.Scope.AgentID, r.Scope.AgentID},
		{f.Scope.AppID, r.Scope.AppID}, {f.Scope.RunID, r.Scope.RunID}} {
		if p[0] != "" && p[0] != p[1] {
			return false
		}
	}
	if len(words) > 0 {
		text := strings.ToLower(r.Summary)
		for _, w := range words {
			if !strings.Contains(text, w) {
				return false
			}
		}
	}
	return true
}

// List returns active records only, oldest first: reads never see pending,
// superseded, rejected or rolled-back versions. With Options.Active it
// reads through that index (package search keeps the active layer's index
// in memory); otherwise it loads and tests every active record of the
// subject (of all subjects without one).
func (g *Governor) List(ctx context.Context, f ListFilter) ([]*Record, error) {
	if f.Layer != "" && !f.Layer.Valid() {
		return nil, Errorf(EINVALID, "unknown layer %q", f.Layer)
	}
	if err := checkLookupIDs("subjectId", f.SubjectID); err != nil {
		return nil, err
	}
	if err := checkScope(f.Scope); err != nil {
		return nil, err
	}
	if f.SubjectID != "" {
		// Subjects are stored folded; a look-alike in a read names the same one.
		if id, err := FoldID(f.SubjectID); err == nil {
			f.SubjectID = id
		}
	}
	out := []*Record{}
	if !TenantOf(ctx).narrow(&f) {
		return out, nil
	}
	if g.active != nil {
		return g.active.ListActive(ctx, f)
	}
	words := strings.Fields(strings.ToLower(f.Query))
	var stopped error
	n := 0
	err := g.store.View(ctx, func(tx ReadTx) error {
		return tx.ScanActive(f.SubjectID, func(r *Record) bool {
			// A read whose client left stops: look every 128 records.
			if n++; n%128 == 0 && ctx.Err() != nil {
				stopped = fmt.Errorf("list: stopped after %d records: %w", n, ctx.Err())
				return false
			}
			if !f.After.Before(r.SubjectID, r.ID) {
				return true // the stores scan in list order: this page starts later
			}
			if f.Match(r, words) {
				out = append(out, r)
			}
			return f.Limit <= 0 || len(out) < f.Limit
		})
	})
	if err == nil {
		err = stopped
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// History returns every version of a slot, oldest first, pending and
// rejected ones included. Errors: ENOTFOUND.
func (g *Governor) History(ctx context.Context, slotID string) ([]*Record, error) {
	if err := CheckLookupID("slot id", slotID); err != nil {
		return nil, err
	}
	var out []*Record
	tenant := TenantOf(ctx)
	err := g.store.View(ctx, func(tx ReadTx) error {
		slot, err := tx.Slot(slotID)
		if ErrorCode(err) == ENOTFOUND {
			return notFound(slotID) // the same answer as for another tenant's slot
		} else if err != nil {
			return err
		}
		if !tenant.Covers(slot.Scope) {
			return notFound(slotID)
		}
		all, err := tx.SlotRecords(slotID)
		for _, r := range all {
			if tenant.Covers(r.Scope) {
				out = append(out, r)
			}
		}
		return err
	})
	return out, err
}

// ReviewItem is a parked write with what it would replace.
type ReviewItem struct {
	Record      *Record   `json:"record"`
	Current     *Record   `json:"current,omitempty"`     // the slot's active version now
	Conflicting []string  `json:"conflicting,omitempty"` // other pending writes to the same slot
	Stale       bool      `json:"stale"`                 // the slot changed since it was parked
	Waiting     string    `json:"waiting"`
	WaitingFor  float64   `json:"waitingSeconds"`
	ParkedAt    time.Time `json:"parkedAt"`
}

// Reviews returns the review queue, oldest first.
func (g *Governor) Reviews(ctx context.Context) ([]*ReviewItem, error) {
	now := g.now()
	out := []*ReviewItem{}
	err := g.store.View(ctx, func(tx ReadTx) error {
		var pending []*Record
		if err := tx.ScanPending(func(r *Record) bool { pending = append(pending, r); return true }); err != nil {
			return err
		}
		for _, r := range pending {
			item, err := reviewItem(tx, r, now)
			if err != nil {
				return err
			}
			out = append(out, item)
		}
		return nil
	})
	return out, err
}

// ReviewPage is a page of the review queue.
type ReviewPage struct {
	Reviews []*ReviewItem `json:"reviews"`
	Count   int           `json:"count"`
	// Next is the id to pass as after for the following page; empty when
	// the queue ended with this page.
	Next string `json:"next,omitempty"`
}

// ReviewsPage returns the review queue after a parked record's id, oldest
// first: at most limit items (limit <= 0: no bound in count) and no more
// than maxBytes of JSON (maxBytes <= 0: EventPageBytes), except that a
// page always holds the first item after the cursor. Next is set when
// items remain.
func (g *Governor) ReviewsPage(ctx context.Context, after string, limit, maxBytes int) (*ReviewPage, error) {
	if err := CheckLookupID("after", after); err != nil {
		return nil, err
	}
	if maxBytes <= 0 {
		maxBytes = EventPageBytes
	}
	now := g.now()
	var page *ReviewPage
	err := g.store.View(ctx, func(tx ReadTx) error {
		page = &ReviewPage{Reviews: []*ReviewItem{}}
		var pending []*Record
		more := false
		// The queue is scanned in id order; a page keeps the records after
		// the cursor, one more than it can hold telling that items remain.
		if err := tx.ScanPending(func(r *Record) bool {
			if r.ID <= after {
				return true
			}
			if limit > 0 && len(pending) == limit {
				more = true
				return false
			}
			pending = append(pending, r)
			return ctx.Err() == nil
		}); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reviews: %w", err)
		}
		size := pageOverhead
		for i, r := range pending {
			item, err := reviewItem(tx, r, now)
			if err != nil {
				return err
			}
			raw, err := json.Marshal(item)
			if err != nil {
				return fmt.Errorf("encode review %s: %w", r.ID, err)
			}
			if i > 0 && size+len(raw)+1 > maxBytes {
				more = true
				break
			}
			size += len(raw) + 1
			page.Reviews = append(page.Reviews, item)
		}
		if more {
			page.Next = page.Reviews[len(page.Reviews)-1].Record.ID
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	page.Count = len(page.Reviews)
	return page, nil
}

// Pending returns the parked records that keep passes, oldest first,
// without what Reviews adds to each (the slot's active version, the
// conflicting writes): a caller that only looks for its own writes reads
// the queue once.
func (g *Governor) Pending(ctx context.Context, keep func(*Record) bool) ([]*Record, error) {
	var out []*Record
	err := g.store.View(ctx, func(tx ReadTx) error {
		return tx.ScanPending(func(r *Record) bool {
			if keep(r) {
				out = append(out, r)
			}
			return true
		})
	})
	return out, err
}

// Review returns one parked write as a review item. Errors: ENOTFOUND.
func (g *Governor) Review(ctx context.Context, id string) (*ReviewItem, error) {
	if err := CheckLookupID("id", id); err != nil {
		return nil, err
	}
	var out *ReviewItem
	err := g.store.View(ctx, func(tx ReadTx) error {
		r, err := tx.Record(id)
		if err != nil {
			return err
		}
		out, err = reviewItem(tx, r, g.now())
		return err
	})
	return out, err
}

func reviewItem(tx ReadTx, r *Record, now time.Time) (*ReviewItem, error) {
	st, err := loadSlot(tx, r.SlotID)
	if err != nil {
		return nil, err
	}
	item := &ReviewItem{Record: r, Current: st.Active(), ParkedAt: r.CreatedAt,
		Stale: r.Status == StatusPending && st.headID() != r.ExpectedHead}
	for _, p := range st.Pending {
		if p.ID != r.ID {
			item.Conflicting = append(item.Conflicting, p.ID)
		}
	}
	if r.Status == StatusPending {
		d := now.Sub(r.CreatedAt)
		item.WaitingFor, item.Waiting = d.Seconds(), d.Round(time.Second).String()
	}
	return item, nil
}

// QueueStats summarizes the review queue for metrics.
type QueueStats struct {
	Depth        int
	OldestParked time.Time // zero when the queue is empty
}

// Queue returns the review queue's depth and its oldest item's age.
func (g *Governor) Queue(ctx context.Context) (QueueStats, error) {
	var q QueueStats
	err := g.store.View(ctx, func(tx ReadTx) error {
		return tx.ScanPending(func(r *Record) bool {
			if q.Depth == 0 || r.CreatedAt.Before(q.OldestParked) {
				q.OldestParked = r.CreatedAt
			}
			q.Depth++
			return true
		})
	})
	return q, err
}

// Explanation answers "why is this active?" for one record.
type Explanation struct {
	Record        *Record        `json:"record"`
	Who           Actor          `json:"who"`                     // who triggered it
	Replaced      *Record        `json:"replaced,omitempty"`      // what it replaced (or would replace)
	Evidence      Evidence       `json:"evidence"`                // on what basis
	Affects       []string       `json:"affects"`                 // what behaviour it changes
	RollbackPoint *RollbackPoint `json:"rollbackPoint,omitempty"` // where to go back to
	Rules         []Reason       `json:"rules"`                   // which policy rules fired
	Review        *Review        `json:"review,omitempty"`        // who approved or rejected it
	SupersededBy  *Record        `json:"supersededBy,omitempty"`
	Events        []*Event       `json:"events"` // its audit trail
}

// Explain answers the five questions for a record (by record or slot id).
// Errors: ENOTFOUND.
func (g *Governor) Explain(ctx context.Context, id string) (*Explanation, error) {
	if err := CheckLookupID("id", id); err != nil {
		return nil, err
	}
	var ex *Explanation
	err := g.store.View(ctx, func(tx ReadTx) error {
		r, err := tx.Record(id)
		if ErrorCode(err) == ENOTFOUND {
			st, serr := loadSlot(tx, id)
			if serr != nil || st.Head == nil {
				return err
			}
			r, err = st.Head, nil
		}
		if err != nil {
			return err
		}
		ex = &Explanation{Record: r, Who: r.Actor, Evidence: r.Evidence, Affects: r.Affects, Review: r.Review, Rules: []Reason{}}
		if ex.Affects == nil {
			ex.Affects = []string{}
		}
		if r.Decision != nil && r.Decision.Reasons != nil {
			ex.Rules = r.Decision.Reasons
		}
		replaced := r.Supersedes
		if r.Status == StatusPending {
			replaced = r.ExpectedHead
		}
		if replaced != "" {
			if ex.Replaced, err = tx.Record(replaced); err != nil {
				return err
			}
		}
		if r.RollbackPoint != "" {
			if ex.RollbackPoint, err = tx.RollbackPoint(r.RollbackPoint); err != nil {
				return err
			}
		}
		if r.SupersededBy != "" {
			if ex.SupersededBy, err = tx.Record(r.SupersededBy); err != nil {
				return err
			}
		}
		ex.Events, err = tx.RecordEvents(r.ID)
		return err
	})
	return ex, err
}

// Events returns audit events after an event id, oldest first: at most
// limit of them (0: all, which is for tests; page with EventsPage).
func (g *Governor) Events(ctx context.Context, after string, limit int) ([]*Event, error) {
	if err := CheckLookupID("after", after); err != nil {
		return nil, err
	}
	out := []*Event{}
	horizon := g.eventHorizon()
	err := g.store.View(ctx, func(tx ReadTx) error {
		return tx.ScanEvents(after, func(e *Event) bool {
			if e.ID >= horizon {
				return false
			}
			out = append(out, e)
			return limit <= 0 || len(out) < limit
		})
	})
	return out, err
}

// EventPageBytes is the default bound of a page of audit events, in bytes
// of JSON.
const EventPageBytes = 1 << 20

// EventPage is a page of the audit log.
type EventPage struct {
	Events []*Event `json:"events"`
	Count  int      `json:"count"`
	// Next is the id to pass as after for the following page; empty when
	// the log ended with this page (a client following the log then passes
	// the id of the last event it has).
	Next string `json:"next,omitempty"`
}

// pageOverhead is what a page's JSON holds besides its events: the field
// names, the count and the next cursor, with room to spare.
const pageOverhead = 128

// EventsPage returns audit events after an event id, oldest first: at most
// limit of them (limit <= 0: no bound in count), and no more than maxBytes
// of JSON for the page (maxBytes <= 0: EventPageBytes), except that a page
// always holds the first event after the cursor whatever its size. Next is
// set when events remain, so a client pages through the log with no gaps
// and no repeats: a page ends before the first id a write still under way
// in this process may use (eventHorizon), so no event commits later behind
// a cursor (a PostgreSQL fleet's other instances are not waited for). An
// event's size counts as json.Marshal encodes it, an upper bound of what
// an encoder that does not escape HTML writes.
func (g *Governor) EventsPage(ctx context.Context, after string, limit, maxBytes int) (*EventPage, error) {
	if err := CheckLookupID("after", after); err != nil {
		return nil, err
	}
	if maxBytes <= 0 {
		maxBytes = EventPageBytes
	}
	var page *EventPage
	// Asked before the snapshot is taken: see eventHorizon.
	horizon := g.eventHorizon()
	err := g.store.View(ctx, func(tx ReadTx) error {
		page = &EventPage{Events: []*Event{}}
		size := pageOverhead
		var scanErr error
		err := tx.ScanEvents(after, func(e *Event) bool {
			if e.ID >= horizon {
				return false // a transaction under way may yet write one before it
			}
			n := len(page.Events)
			if limit > 0 && n >= limit {
				page.Next = page.Events[n-1].ID // one more event: the page is full
				return false
			}
			raw, err := json.Marshal(e)
			if err != nil {
				scanErr = fmt.Errorf("encode event %s: %w", e.ID, err)
				return false
			}
			if n > 0 && size+len(raw)+1 > maxBytes {
				page.Next = page.Events[n-1].ID
				return false
			}
			size += len(raw) + 1 // and a comma
			page.Events = append(page.Events, e)
			return true
		})
		if err == nil {
			err = scanErr
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	page.Count = len(page.Events)
	return page, nil
}
