package memory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Erasure ("forget this user"): every record of a scope loses its text,
// values, metadata and evidence, whatever its status; an active one leaves
// the active layer (it becomes a deletion, the slot's head with nothing
// active), a pending one is withdrawn (rejected by "erasure", so its
// Slack message is updated to say so); the audit events of those records,
// and those that embed one as the slot's active version, lose their text
// (EraseEventText: the chain stays valid); undelivered notices about them
// are dropped. What stays: ids, times, statuses, decisions (risk, rule
// ids, action) and, on the record, a salted hash of what was removed.
//
// Erase is idempotent: run again with the same request (after a crash) it
// finishes what the first run did not and changes nothing twice. The
// caller journals the request before (see cmd/sidecar's eraser) and
// compacts the store after, so that the bytes also leave the disk.

// ErasureScope names whose memories an erasure removes: the records whose
// scope carries every id given; for a user, agent or run, also the
// records that user, agent or run wrote (Actor).
type ErasureScope struct {
	UserID  string `json:"userId,omitempty"`
	AgentID string `json:"agentId,omitempty"`
	AppID   string `json:"appId,omitempty"`
	RunID   string `json:"runId,omitempty"`
	// ScopeOnly matches the record's scope only, not who wrote it: an
	// erasure asked for on the agent listener, confined to the caller's
	// tenant, never reaches a record of another tenant's scope.
	ScopeOnly bool `json:"scopeOnly,omitempty"`
}

// Empty reports whether no id is given (which would match everything).
func (s ErasureScope) Empty() bool {
	return s.UserID == "" && s.AgentID == "" && s.AppID == "" && s.RunID == ""
}

// Matches reports whether r is in the scope.
func (s ErasureScope) Matches(r *Record) bool {
	if s.Empty() {
		return false
	}
	one := func(want, scope string, actors ...string) bool {
		return want == "" || scope == want || !s.ScopeOnly && slices.Contains(actors, want)
	}
	return one(s.UserID, r.Scope.UserID, r.Actor.UserID) &&
		one(s.AgentID, r.Scope.AgentID, r.Actor.AgentID) &&
		one(s.AppID, r.Scope.AppID) &&
		one(s.RunID, r.Scope.RunID, r.Actor.RunID, r.Actor.SessionID)
}

func (s ErasureScope) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ErasureRequest asks for an erasure. ID names it across a resumption
// ("": a new one).
type ErasureRequest struct {
	ID     string       `json:"id,omitempty"`
	Scope  ErasureScope `json:"scope"`
	Reason string       `json:"reason,omitempty"`
	By     string       `json:"by,omitempty"`
}

// ErasureCounts say what an erasure changed.
type ErasureCounts struct {
	Records int `json:"records"` // records whose text was removed, every status
	Active  int `json:"active"`  // of them, active ones that left the active layer
	Pending int `json:"pending"` // of them, pending ones withdrawn
	Events  int `json:"events"`  // audit events whose text was removed
	Notices int `json:"notices"` // undelivered notices dropped
}

func (c *ErasureCounts) add(o ErasureCounts) {
	c.Records += o.Records
	c.Active += o.Active
	c.Pending += o.Pending
	c.Events += o.Events
	c.Notices += o.Notices
}

// ErasureSummary is what the audit log keeps of an erasure (Event.Erasure).
type ErasureSummary struct {
	ID     string         `json:"id"`
	Scope  ErasureScope   `json:"scope"`
	Counts *ErasureCounts `json:"counts,omitempty"` // on the erasure_done event
}

// Erasure marks an erased record: when, by which erasure, and the salted
// SHA-256 of what was removed (summary, value, metadata, evidence, notes).
type Erasure struct {
	ID       string    `json:"id"`
	At       time.Time `json:"at"`
	Salt     string    `json:"salt"`
	TextHash string    `json:"textHash"`
}

// ErasureResult answers an erasure.
type ErasureResult struct {
	ID     string        `json:"id"`
	Scope  ErasureScope  `json:"scope"`
	Counts ErasureCounts `json:"counts"`
	// Records are the ids of the records in scope, erased now or before:
	// for what else keeps data by record (the Mem0 event log, vectors).
	Records []string `json:"-"`
}

// EventTextEraser is a transaction that can remove the text of a sealed
// audit event (both stores' are). changed is false for an event without
// text left.
type EventTextEraser interface {
	EraseEventText(id, why string) (changed bool, err error)
}

// RecordScanner is a read transaction that lists every record (both
// stores' do, for snapshots).
type RecordScanner interface {
	ScanRecords(fn func(*Record) bool) error
}

// erasureBatch is how many slots one erasure transaction handles.
const erasureBatch = 16

// Erase removes the text of every record in req.Scope (see above). It is
// safe to run again with the same request.
func (g *Governor) Erase(ctx context.Context, req ErasureRequest) (*ErasureResult, error) {
	if req.Scope.Empty() {
		return nil, Errorf(EINVALID, "an erasure needs a user, agent, app or run id")
	}
	if err := checkNotes("reason", req.Reason, req.By); err != nil {
		return nil, err
	}
	if req.ID == "" {
		req.ID = g.newID()
	}
	if req.By == "" {
		req.By = "admin"
	}
	res := &ErasureResult{ID: req.ID, Scope: req.Scope}
	summary := func() *ErasureSummary { return &ErasureSummary{ID: req.ID, Scope: req.Scope} }
	if err := g.storeUpdate(ctx, func(tx Tx) error {
		return tx.AppendEvent(&Event{ID: g.newID(), Type: EventErasureStarted, At: g.now(), By: req.By, Reason: req.Reason, Erasure: summary()})
	}); err != nil {
		return nil, fmt.Errorf("erasure %s: journal: %w", req.ID, err)
	}
	slots, err := g.erasureSlots(ctx, req.Scope)
	if err != nil {
		return nil, fmt.Errorf("erasure %s: %w", req.ID, err)
	}
	job := erasureJob{id: req.ID, by: req.By, why: "erasure", event: EventErased,
		summary: ErasureSummary{ID: req.ID, Scope: req.Scope}, match: req.Scope.Matches}
	for batch := range slices.Chunk(slots, erasureBatch) {
		c, ids, err := g.eraseSlots(ctx, job, batch)
		if err != nil {
			return nil, fmt.Errorf("erasure %s: %w", req.ID, err)
		}
		res.Counts.add(c)
		res.Records = append(res.Records, ids...)
	}
	done := summary()
	done.Counts = &res.Counts
	if err := g.storeUpdate(ctx, func(tx Tx) error {
		return tx.AppendEvent(&Event{ID: g.newID(), Type: EventErasureDone, At: g.now(), By: req.By, Reason: req.Reason, Erasure: done})
	}); err != nil {
		return nil, fmt.Errorf("erasure %s: record the outcome: %w", req.ID, err)
	}
	g.wake(res.Counts.Pending > 0)
	g.log.Info("erasure done", "id", req.ID, "scope", req.Scope.String(), "by", req.By, "records", res.Counts.Records,
		"active", res.Counts.Active, "pending", res.Counts.Pending, "events", res.Counts.Events, "notices", res.Counts.Notices)
	return res, nil
}

// erasureSlots lists the slots holding a record in scope.
func (g *Governor) erasureSlots(ctx context.Context, scope ErasureScope) ([]string, error) {
	set := map[string]bool{}
	err := g.store.View(ctx, func(tx ReadTx) error {
		clear(set)
		rs, ok := tx.(RecordScanner)
		if !ok {
			return Errorf(EUNAVAILABLE, "this store cannot list its records for an erasure")
		}
		return rs.ScanRecords(func(r *Record) bool {
			if scope.Matches(r) {
				set[r.SlotID] = true
			}
			return true
		})
	})
	return slices.Sorted(maps.Keys(set)), err
}

// erasureJob is what eraseSlots does: an erasure's or a retention pass's.
type erasureJob struct {
	id, by  string
	why     string    // the erasure mark of events: "erasure", "retention"
	event   EventType // recorded for each record
	summary ErasureSummary
	match   func(*Record) bool // the records to erase, read in the transaction
}

// eraseSlots erases the records job matches in some slots, in one
// transaction holding their locks.
func (g *Governor) eraseSlots(ctx context.Context, job erasureJob, slotIDs []string) (ErasureCounts, []string, error) {
	unlock := g.lock(slotIDs...)
	now := g.now()
	var counts ErasureCounts
	var ids []string
	err := g.update(ctx, unlock, func(tx Tx) error {
		counts, ids = ErasureCounts{}, nil
		ee, ok := tx.(EventTextEraser)
		if !ok {
			return Errorf(EUNAVAILABLE, "this store cannot erase the text of audit events")
		}
		erased := map[string]bool{}
		var withdrawn []*Record
		for _, slotID := range slotIDs {
			recs, err := tx.SlotRecords(slotID)
			if err != nil {
				return err
			}
			changed := false
			for _, r := range recs {
				if !job.match(r) {
					continue
				}
				erased[r.ID] = true
				ids = append(ids, r.ID)
				if r.Erased != nil {
					continue // a resumed erasure: done before
				}
				c := eraseRecord(r, job.id, now)
				switch r.Status {
				case StatusActive:
					counts.Active++
				case StatusPending:
					counts.Pending++
					withdrawn = append(withdrawn, c)
				}
				changed = changed || c.Status != r.Status
				if err := tx.PutRecord(c); err != nil {
					return err
				}
				counts.Records++
				sum := job.summary
				ev := &Event{ID: g.newID(), Type: job.event, At: now, RecordID: r.ID, SlotID: r.SlotID, SubjectID: r.SubjectID,
					By: job.by, Erasure: &sum}
				if err := tx.AppendEvent(ev); err != nil {
					return err
				}
			}
			if changed {
				s, err := tx.Slot(slotID)
				if err != nil {
					return err
				}
				if err := tx.PutSlot(touchSlot(s, nil, now)); err != nil {
					return err
				}
			}
			// The events of the slot's records: their own text, and the
			// text of an erased record they embed as the slot's active
			// version when they were decided.
			for _, r := range recs {
				evs, err := tx.RecordEvents(r.ID)
				if err != nil {
					return err
				}
				for _, ev := range evs {
					if !erased[ev.RecordID] && !embedsAny(ev, erased) {
						continue
					}
					ok, err := ee.EraseEventText(ev.ID, job.why)
					if err != nil {
						return err
					}
					if ok {
						counts.Events++
					}
				}
			}
		}
		var drop []string
		if err := tx.ScanNotices(func(n *Notice) bool {
			if erased[n.RecordID] {
				drop = append(drop, n.ID)
			}
			return true
		}); err != nil {
			return err
		}
		for _, id := range drop {
			if err := tx.DeleteNotice(id); err != nil {
				return err
			}
		}
		counts.Notices = len(drop)
		if g.outbox {
			for _, r := range withdrawn {
				// Slack renders the record as it is now: withdrawn, no text.
				n := &Notice{ID: g.newID(), Kind: NoticeDecided, RecordID: r.ID, At: now}
				if err := tx.PutNotice(n); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return counts, ids, err
}

// embedsAny reports whether an event's recorded policy input embeds one
// of the records (as the candidate or the slot's active version).
func embedsAny(ev *Event, ids map[string]bool) bool {
	if len(ev.Input) == 0 {
		return false
	}
	in, err := ParseRecordedInput(ev.Input)
	if err != nil {
		return true // unreadable: erase it rather than keep what it may hold
	}
	if in.Candidate != nil && ids[in.Candidate.ID] || in.Current != nil && ids[in.Current.ID] {
		return true
	}
	for _, p := range in.PolicyInput.Pending {
		if ids[p.ID] {
			return true
		}
	}
	return false
}

// eraseRecord returns r without its text, marked erased: an active record
// becomes a deletion, a pending one is withdrawn.
func eraseRecord(r *Record, erasureID string, now time.Time) *Record {
	c := r.Clone()
	var salt [16]byte
	rand.Read(salt[:])
	text, _ := json.Marshal(struct {
		Summary        string          `json:"summary"`
		Value          json.RawMessage `json:"value,omitempty"`
		Metadata       map[string]any  `json:"metadata,omitempty"`
		Evidence       Evidence        `json:"evidence"`
		ReviewNote     string          `json:"reviewNote,omitempty"`
		RollbackReason string          `json:"rollbackReason,omitempty"`
		Reasons        []Reason        `json:"reasons,omitempty"`
	}{r.Summary, r.Value, r.Metadata, r.Evidence, reviewNote(r), r.RollbackReason, decisionReasons(r)})
	h := sha256.New()
	h.Write(salt[:])
	h.Write(text)
	c.Erased = &Erasure{ID: erasureID, At: now, Salt: hex.EncodeToString(salt[:]), TextHash: hex.EncodeToString(h.Sum(nil))}
	c.Summary, c.Value, c.Metadata, c.Evidence, c.RollbackReason = "", nil, nil, Evidence{}, ""
	if c.Review != nil {
		c.Review.Note = ""
	}
	if c.Decision != nil {
		// Rule ids, risk and action stay; a rule's message may quote the text.
		d := *c.Decision
		d.Reasons = make([]Reason, len(c.Decision.Reasons))
		for i, x := range c.Decision.Reasons {
			d.Reasons[i] = Reason{Rule: x.Rule}
		}
		d.Value = nil
		c.Decision = &d
	}
	switch r.Status {
	case StatusActive:
		c.Status = StatusDeleted
		c.SupersededAt = now
	case StatusPending:
		c.Status = StatusRejected
		c.Review = &Review{Outcome: OutcomeRejected, By: "erasure", Note: "withdrawn: erased on request", At: now}
		c.DecidedAt = now
	}
	return c
}

func reviewNote(r *Record) string {
	if r.Review == nil {
		return ""
	}
	return r.Review.Note
}

func decisionReasons(r *Record) []Reason {
	if r.Decision == nil {
		return nil
	}
	return r.Decision.Reasons
}
