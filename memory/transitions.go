package memory

import (
	"crypto/sha256"
	"fmt"
	"time"
)

// SlotState is what the governor knows about a slot when it decides.
type SlotState struct {
	Slot    *Slot     // nil for a slot that does not exist yet
	Head    *Record   // the latest applied version (active, or a deletion); nil if none
	Pending []*Record // parked writes, oldest first
}

// Layers returns the layers the slot holds: its own, its head's and its
// pending writes'. A write to the slot is judged at least at the highest.
func (s *SlotState) Layers() []Layer {
	var out []Layer
	if s.Slot != nil {
		out = append(out, s.Slot.Layer)
	}
	if s.Head != nil {
		out = append(out, s.Head.Layer)
	}
	for _, p := range s.Pending {
		out = append(out, p.Layer)
	}
	return out
}

// Active returns the slot's active record, or nil.
func (s *SlotState) Active() *Record {
	if s.Head != nil && s.Head.Status == StatusActive {
		return s.Head
	}
	return nil
}

func (s *SlotState) headID() string {
	if s.Head == nil {
		return ""
	}
	return s.Head.ID
}

// Effects are what a transition writes. The store applies them in one
// transaction; nothing here has happened until it commits.
type Effects struct {
	Slots     []*Slot
	Records   []*Record
	Points    []*RollbackPoint
	Events    []*Event
	Notices   []*Notice
	Conflicts []string // conflict kinds, for metrics
}

func (e *Effects) event(typ EventType, rec *Record, now time.Time) *Event {
	ev := &Event{Type: typ, At: now, RecordID: rec.ID, SlotID: rec.SlotID, SubjectID: rec.SubjectID}
	e.Events = append(e.Events, ev)
	return ev
}

func (e *Effects) notice(kind NoticeKind, rec *Record, now time.Time) {
	e.Notices = append(e.Notices, &Notice{Kind: kind, RecordID: rec.ID, At: now})
}

// Outcome is what happened to a submitted candidate.
type Outcome string

const (
	OutcomeApplied   Outcome = "applied"   // active now
	OutcomeParked    Outcome = "parked"    // waits for review
	OutcomeRefused   Outcome = "rejected"  // policy rejected it
	OutcomeUnchanged Outcome = "unchanged" // it repeated the active version
)

// PlanSubmit decides what happens to a new candidate record in its slot given
// the policy decision. rec carries its id, slot id and content; Submit sets
// everything policy and time decide.
func PlanSubmit(st SlotState, rec *Record, dec Decision, now time.Time) (Effects, Outcome, error) {
	var eff Effects
	rec = rec.Clone()
	rec.CreatedAt = now
	rec.RiskLevel = dec.Risk
	rec.Categories = append([]string(nil), dec.Categories...)
	rec.Affects = append([]string(nil), dec.Affects...)
	d := dec
	rec.Decision = &d

	active := st.Active()
	if rec.Op == OpDelete && active == nil {
		return eff, "", Errorf(ENOTFOUND, "memory %s has no active version to delete", rec.SlotID)
	}
	action := dec.Effective()
	if action == ActionApply && rec.Op != OpDelete && active.SameContent(rec) {
		eff, outcome := Repeat(st, rec, now)
		return eff, outcome, nil
	}

	if action == ActionReject {
		redact(rec, dec.Redact) // before the slot is touched: a new slot copies its fields
	}
	slot := touchSlot(st.Slot, rec, now)
	slot.Versions++
	eff.Slots = append(eff.Slots, slot)

	switch action {
	case ActionReject:
		rec.Status = StatusRejected
		rec.DecidedAt = now
		eff.Records = append(eff.Records, rec)
		ev := eff.event(EventRejected, rec, now)
		ev.Actor, ev.Decision = &rec.Actor, &d
		return eff, OutcomeRefused, nil
	case ActionReview:
		rec.Status = StatusPending
		rec.ExpectedHead = st.headID()
		eff.Records = append(eff.Records, rec)
		ev := eff.event(EventParked, rec, now)
		ev.Actor, ev.Decision = &rec.Actor, &d
		if active != nil && !active.SameContent(rec) {
			eff.Conflicts = append(eff.Conflicts, ConflictOverrideParked)
			ev.Related = append(ev.Related, active.ID)
		}
		if len(st.Pending) > 0 {
			eff.Conflicts = append(eff.Conflicts, ConflictPendingPending)
			ev.Related = append(ev.Related, PendingIDs(st.Pending, MaxEventPending)...)
		}
		eff.notice(NoticeParked, rec, now)
		return eff, OutcomeParked, nil
	case ActionApply:
		if active != nil {
			eff.Conflicts = append(eff.Conflicts, ConflictOverrideApplied)
		}
		ev := activate(&eff, slot, st.Head, rec, now)
		ev.Actor, ev.Decision = &rec.Actor, &d
		return eff, OutcomeApplied, nil
	default:
		return eff, "", Errorf(EINTERNAL, "policy returned unknown action %q", action)
	}
}

// Repeat records a write that states what the slot's active version
// states: nothing changes but the audit log, which keeps who repeated it.
// The governor calls it without asking policy for a free-text write the
// fact matcher found to repeat an active memory (facts.go); st must have
// an active version.
func Repeat(st SlotState, rec *Record, now time.Time) (Effects, Outcome) {
	var eff Effects
	ev := eff.event(EventUnchanged, st.Active(), now)
	ev.Actor = &rec.Actor
	return eff, OutcomeUnchanged
}

// touchSlot returns a copy of the slot to write, creating it on first use,
// at the next revision. Every transition that changes a slot's head or
// pending writes goes through it (see Slot.Rev).
func touchSlot(s *Slot, rec *Record, now time.Time) *Slot {
	if s == nil {
		return &Slot{ID: rec.SlotID, SubjectID: rec.SubjectID, FactType: rec.FactType,
			Layer: rec.Layer, Scope: rec.Scope, Rev: 1, CreatedAt: now, UpdatedAt: now}
	}
	c := *s
	c.UpdatedAt = now
	c.Rev++
	return &c
}

// activate makes rec the slot's head, superseding the previous head, and
// takes the rollback point in the same set of effects.
func activate(eff *Effects, slot *Slot, head, rec *Record, now time.Time) *Event {
	point := &RollbackPoint{ID: RollbackPointID(rec.ID), SlotID: slot.ID, SubjectID: slot.SubjectID,
		FactType: slot.FactType, RecordID: rec.ID, CreatedAt: now}
	if head != nil {
		point.Replaced = head.ID
		old := head.Clone()
		if old.Status == StatusActive {
			old.Status = StatusSuperseded
		}
		old.SupersededBy, old.SupersededAt = rec.ID, now
		eff.Records = append(eff.Records, old)
		sup := eff.event(EventSuperseded, old, now)
		sup.Related = []string{rec.ID}
	}
	rec.Supersedes = point.Replaced
	rec.RollbackPoint = point.ID
	rec.ActivatedAt = now
	rec.Status = StatusActive
	if rec.Op == OpDelete {
		rec.Status = StatusDeleted
	}
	slot.Head = rec.ID
	eff.Points = append(eff.Points, point)
	eff.Records = append(eff.Records, rec)
	ev := eff.event(EventApplied, rec, now)
	if point.Replaced != "" {
		ev.Related = []string{point.Replaced}
	}
	return ev
}

// PlanApprove applies a parked write. In override mode it is a compare-and-swap:
// if the slot's head is no longer the one the write meant to replace it
// fails with ESTALE and changes nothing (see Restale). In append mode the
// record moves to a slot of its own and replaces nothing.
func PlanApprove(st SlotState, rec *Record, rv Review, now time.Time) (Effects, error) {
	var eff Effects
	if rec.Status != StatusPending {
		return eff, Errorf(EDECIDED, "memory %s was already decided (%s)", rec.ID, rec.Status)
	}
	if rv.Mode == "" {
		rv.Mode = ModeOverride
	}
	rec = rec.Clone()
	rv.Outcome, rv.At = OutcomeApproved, now
	rec.Review, rec.DecidedAt = &rv, now

	var ev *Event
	switch rv.Mode {
	case ModeOverride:
		if st.headID() != rec.ExpectedHead {
			return eff, Errorf(ESTALE, "memory %s was parked against version %q, but the slot is now at %q; it was re-evaluated and waits for a new decision",
				rec.ID, rec.ExpectedHead, st.headID())
		}
		slot := touchSlot(st.Slot, rec, now)
		eff.Slots = append(eff.Slots, slot)
		ev = activate(&eff, slot, st.Head, rec, now)
	case ModeAppend:
		if !rec.Layer.AllowsAppend() {
			return eff, Errorf(EINVALID, "approve as append is allowed for knowledge and preference, not %s", rec.Layer)
		}
		if rec.Op == OpDelete {
			return eff, Errorf(EINVALID, "a deletion cannot be approved as append")
		}
		if st.Slot != nil {
			eff.Slots = append(eff.Slots, touchSlot(st.Slot, rec, now)) // it loses a pending write
		}
		own := &Slot{ID: rec.ID, SubjectID: rec.SubjectID, Layer: rec.Layer, Scope: rec.Scope,
			Versions: 1, Rev: 1, CreatedAt: now, UpdatedAt: now}
		rec.SlotID, rec.FactType, rec.ExpectedHead = own.ID, "", ""
		eff.Slots = append(eff.Slots, own)
		ev = activate(&eff, own, nil, rec, now)
	default:
		return eff, Errorf(EINVALID, "mode must be %q or %q, not %q", ModeOverride, ModeAppend, rv.Mode)
	}
	ev.Actor = &rec.Actor
	ap := eff.event(EventApproved, rec, now)
	ap.By, ap.Reason = rv.By, rv.Note
	eff.notice(NoticeDecided, rec, now)
	return eff, nil
}

// PlanReject denies a parked write.
func PlanReject(st SlotState, rec *Record, rv Review, now time.Time) (Effects, error) {
	var eff Effects
	if rec.Status != StatusPending {
		return eff, Errorf(EDECIDED, "memory %s was already decided (%s)", rec.ID, rec.Status)
	}
	rec = rec.Clone()
	rv.Outcome, rv.At, rv.Mode = OutcomeRejected, now, ""
	rec.Review, rec.DecidedAt, rec.Status = &rv, now, StatusRejected
	if st.Slot != nil {
		eff.Slots = append(eff.Slots, touchSlot(st.Slot, rec, now))
	}
	eff.Records = append(eff.Records, rec)
	ev := eff.event(EventDenied, rec, now)
	ev.By, ev.Reason = rv.By, rv.Note
	eff.notice(NoticeDecided, rec, now)
	return eff, nil
}

// Restale records that an approval found the slot changed: the parked write
// now compares against the current head, carries the re-evaluated decision
// and stays pending for a fresh human decision.
func Restale(st SlotState, rec *Record, dec Decision, by string, now time.Time) Effects {
	var eff Effects
	rec = rec.Clone()
	dec.Shadow = nil // a parked write waits for a human whatever the policy shadows
	ev := eff.event(EventStale, rec, now)
	ev.By, ev.Related = by, []string{rec.ExpectedHead, st.headID()}
	ev.Decision = &dec
	rec.ExpectedHead = st.headID()
	rec.RiskLevel = dec.Risk
	rec.Categories = append([]string(nil), dec.Categories...)
	rec.Affects = append([]string(nil), dec.Affects...)
	rec.Decision = &dec
	if st.Slot != nil {
		eff.Slots = append(eff.Slots, touchSlot(st.Slot, rec, now))
	}
	eff.Records = append(eff.Records, rec)
	eff.notice(NoticeStale, rec, now)
	return eff
}

// PlanRollback undoes the slot's head version: it becomes rolled_back and the
// version its rollback point names becomes the head again. restore is that
// version after skipping versions that were themselves rolled back (nil for
// an empty slot). Rolling back anything but the head needs a cascade, which
// the caller runs as repeated Rollbacks of the head.
func PlanRollback(st SlotState, rec *Record, point *RollbackPoint, restore *Record, reason, by string, now time.Time) (Effects, error) {
	var eff Effects
	switch rec.Status {
	case StatusActive, StatusDeleted:
	case StatusSuperseded:
		return eff, Errorf(ECONFLICT, "memory %s is no longer the slot's head (superseded by %s); roll back with cascade to undo it and every version after it", rec.ID, rec.SupersededBy)
	case StatusRolledBack:
		return eff, Errorf(ECONFLICT, "memory %s is already rolled back", rec.ID)
	default:
		return eff, Errorf(ECONFLICT, "memory %s was never applied (%s); reject it instead", rec.ID, rec.Status)
	}
	if st.Head == nil || st.Head.ID != rec.ID {
		return eff, Errorf(ECONFLICT, "memory %s is not the slot's head (%s); roll back with cascade", rec.ID, st.headID())
	}
	if point == nil || point.RecordID != rec.ID {
		return eff, Errorf(EINTERNAL, "memory %s has no rollback point", rec.ID)
	}
	rec = rec.Clone()
	rec.Status, rec.RolledBackAt, rec.RollbackReason = StatusRolledBack, now, reason
	slot := touchSlot(st.Slot, rec, now)
	slot.Head = ""
	eff.Slots = append(eff.Slots, slot)
	eff.Records = append(eff.Records, rec)
	ev := eff.event(EventRolledBack, rec, now)
	ev.By, ev.Reason = by, reason
	if restore != nil {
		old := restore.Clone()
		if old.Status == StatusSuperseded {
			old.Status = StatusActive
		}
		old.SupersededBy, old.SupersededAt = "", time.Time{}
		slot.Head = old.ID
		eff.Records = append(eff.Records, old)
		ev.Related = []string{old.ID}
		rs := eff.event(EventRestored, old, now)
		rs.By, rs.Reason, rs.Related = by, reason, []string{rec.ID}
	}
	eff.notice(NoticeRollback, rec, now)
	return eff, nil
}

// Retract marks a version that is no longer the head as rolled back, so that
// no later rollback restores it (used by quarantine for a run's versions that
// someone else has since replaced).
func Retract(rec *Record, reason, by string, now time.Time) (Effects, error) {
	var eff Effects
	if rec.Status != StatusSuperseded {
		return eff, Errorf(ECONFLICT, "memory %s is %s, not superseded", rec.ID, rec.Status)
	}
	rec = rec.Clone()
	rec.Status, rec.RolledBackAt, rec.RollbackReason = StatusRolledBack, now, reason
	eff.Records = append(eff.Records, rec)
	ev := eff.event(EventRolledBack, rec, now)
	ev.By, ev.Reason = by, reason
	return eff, nil
}

// redact keeps only a fingerprint of a rejected candidate's content: what
// policy refuses may be exactly what must never be stored (a credential).
func redact(r *Record, fields []string) {
	sum := sha256.Sum256(append([]byte(r.Summary+"\x00"), r.Value...))
	r.Summary = fmt.Sprintf("[redacted: %d bytes rejected by policy, sha256 %x]", len(r.Summary)+len(r.Value), sum[:8])
	r.Value, r.Metadata, r.Evidence.Excerpt = nil, nil, ""
	redactFields(r, fields)
}
