package memory

import (
	"encoding/json"
	"fmt"
	"time"
)

// MaxEventPending bounds how many of a slot's pending writes one audit event
// names: the ids a recorded policy input keeps (RecordedInput.PendingIDs)
// and the ones a parked event relates to. They are the newest ones; the
// event also keeps how many there were. So an event's size does not grow
// with the number of writes waiting in its slot, and the audit log grows
// linearly with writes.
const MaxEventPending = 16

// RecordedInput is the form in which the audit log keeps the policy input a
// write was decided on (Event.Input). It is the PolicyInput with the slot's
// pending writes referenced by id instead of embedded: a slot with n
// pending writes would otherwise make every event n records long, and the
// log quadratic. The candidate and the slot's active record ("current")
// stay embedded; they are one record each.
//
// A replay resolves the ids (see policy.Replay): it loads the records and
// gives them to the policy as they were while pending (AsPending). Ids past
// the newest MaxEventPending are not kept; a replay of the whole log knows
// them from the parked and decided events before.
//
// Events recorded before this form embed the pending records ("pending");
// ParseRecordedInput reads both.
type RecordedInput struct {
	PolicyInput
	// Pending shadows PolicyInput.Pending in JSON: only inputs recorded in
	// the old form carry it (the full records); RecordInput leaves it out.
	Pending []*Record `json:"pending,omitempty"`
	// PendingIDs are the ids of the slot's pending writes, oldest first:
	// all of them, or the newest MaxEventPending when there were more.
	PendingIDs []string `json:"pendingIds"`
	// PendingCount is how many pending writes the slot held.
	PendingCount int `json:"pendingCount"`
}

// RecordInput returns the JSON the audit log keeps for in (see
// RecordedInput). It does not change in.
func RecordInput(in *PolicyInput) (json.RawMessage, error) {
	r := RecordedInput{PolicyInput: *in, PendingIDs: PendingIDs(in.Pending, MaxEventPending),
		PendingCount: len(in.Pending)}
	r.PolicyInput.Pending = nil // shadowed, never encoded; cleared for clarity
	return MarshalStored(&r)
}

// PendingIDs returns the ids of the newest most of recs (oldest first, as
// a slot lists its pending writes); all of them if most < 0.
func PendingIDs(recs []*Record, most int) []string {
	if most >= 0 && len(recs) > most {
		recs = recs[len(recs)-most:]
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

// ParseRecordedInput decodes a policy input kept in the audit log, in
// either form. For the old form (Embedded), PolicyInput.Pending holds the
// recorded records and PendingIDs and PendingCount are filled in from
// them; for the new form, PolicyInput.Pending is empty until the caller
// resolves the ids.
func ParseRecordedInput(raw []byte) (*RecordedInput, error) {
	var r RecordedInput
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Candidate == nil {
		return nil, fmt.Errorf("no candidate")
	}
	if r.Embedded() {
		r.PolicyInput.Pending = r.Pending
		r.PendingIDs = PendingIDs(r.Pending, -1)
		r.PendingCount = len(r.Pending)
		return &r, nil
	}
	r.PolicyInput.Pending = []*Record{}
	if r.PendingIDs == nil {
		r.PendingIDs = []string{}
	}
	if r.PendingCount < len(r.PendingIDs) {
		r.PendingCount = len(r.PendingIDs)
	}
	return &r, nil
}

// Embedded reports whether the input carries the pending records
// themselves (the form recorded before pendingIds).
func (r *RecordedInput) Embedded() bool { return r.Pending != nil }

// Complete reports whether PendingIDs names every pending write.
func (r *RecordedInput) Complete() bool { return len(r.PendingIDs) >= r.PendingCount }

// AsPending returns rec, loaded now, as it was while it waited for review
// in the slot of cand (the candidate of a write decided then): status
// pending_review, without what its review, activation, replacement or
// rollback added, and in cand's slot if it was approved as an append
// since. A re-evaluation after a stale approval may have changed its
// decision and expected head; those are the current ones.
func AsPending(rec, cand *Record) *Record {
	p := rec.Clone()
	p.Status = StatusPending
	p.Review = nil
	p.DecidedAt, p.ActivatedAt, p.SupersededAt, p.RolledBackAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	p.Supersedes, p.SupersededBy, p.RollbackPoint, p.RollbackReason = "", "", "", ""
	if cand != nil && p.SlotID != cand.SlotID {
		p.SlotID, p.FactType = cand.SlotID, cand.FactType
	}
	return p
}
