package memory

import (
	"context"
	"errors"
)

// Approve applies a parked write (see the package function Approve). A
// stale approval re-evaluates the write against the slot's new head, keeps
// it pending (a new ParkVersion) and returns ESTALE. With rv.Version set,
// an approval of a version that is no longer the parked one is refused with
// ESTALE wrapping ErrVersionChanged, and nothing changes.
// Errors: ENOTFOUND, EDECIDED, ESTALE, EINVALID.
func (g *Governor) Approve(ctx context.Context, id string, rv Review) (*Record, error) {
	return g.decide(ctx, id, rv, true)
}

// Reject denies a parked write. With rv.Version set, a rejection of a
// version that is no longer the parked one is refused like an approval.
// Errors: ENOTFOUND, EDECIDED, ESTALE.
func (g *Governor) Reject(ctx context.Context, id string, rv Review) (*Record, error) {
	return g.decide(ctx, id, rv, false)
}

// ErrVersionChanged is wrapped by the ESTALE error of a decision bound to a
// parked version (Review.Version) that is no longer the current one: the
// write was re-parked since the reviewer saw it (a replayed or outdated
// Slack button). Unlike a stale approval it changes nothing, not even the
// parked write; errors.Is tells the two apart.
var ErrVersionChanged = errors.New("the parked write changed since this decision was prepared")

// versionError is an ESTALE *Error that also matches ErrVersionChanged.
type versionError struct{ err *Error }

func (e *versionError) Error() string   { return e.err.Error() }
func (e *versionError) Unwrap() []error { return []error{e.err, ErrVersionChanged} }

// checkVersion refuses a decision bound to a parked version that is no
// longer current. It runs in the decision's transaction, under the slot's
// lock, before anything changes. A decided record is left to Approve and
// Reject, which answer EDECIDED: that is the truer answer to a late click.
func checkVersion(rec *Record, rv Review) error {
	if rv.Version == "" || rec.Status != StatusPending || rv.Version == rec.ParkVersion() {
		return nil
	}
	return &versionError{Errorf(ESTALE, "memory %s changed since this decision was prepared (version %q, now %q): "+
		"it was re-parked and re-evaluated; nothing changed. Decide again from its current review message", rec.ID, rv.Version, rec.ParkVersion())}
}

func (g *Governor) decide(ctx context.Context, id string, rv Review, approve bool) (*Record, error) {
	if err := checkNotes("note", rv.Note, rv.By); err != nil {
		return nil, err
	}
	unlock, err := g.lockSlotOf(ctx, id)
	if err != nil {
		return nil, err
	}
	now := g.now()
	var out *Record
	var staleErr error
	err = g.update(ctx, unlock, func(tx Tx) error {
		staleErr, out = nil, nil
		rec, err := tx.Record(id)
		if err != nil {
			return err
		}
		if err := checkVersion(rec, rv); err != nil {
			g.log.Warn("decision on an outdated version refused", "record", id, "by", rv.By, "route", rv.Route,
				"version", rv.Version, "current", rec.ParkVersion())
			return err
		}
		st, err := loadSlot(tx, rec.SlotID)
		if err != nil {
			return err
		}
		var eff Effects
		if approve {
			eff, err = PlanApprove(st, rec, rv, now)
		} else {
			eff, err = PlanReject(st, rec, rv, now)
		}
		if ErrorCode(err) == ESTALE {
			staleErr = err
			rec.Layer = HighestLayer(append(st.Layers(), rec.Layer)...)
			in := &PolicyInput{Op: rec.Op, Candidate: rec, Current: st.Active(), Pending: others(st.Pending, rec.ID),
				Actor: rec.Actor, Dialect: rec.Actor.Dialect}
			eff = Restale(st, rec, g.classify(ctx, in), rv.By, now)
			for _, r := range eff.Records {
				if r.ID == id {
					r.Reparked = rec.Reparked + 1 // a new ParkVersion: decisions on the old one are refused
				}
			}
		} else if err != nil {
			return err
		}
		if err := g.apply(tx, &eff); err != nil {
			return err
		}
		for _, r := range eff.Records {
			if r.ID == id {
				out = r
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	g.wake(true)
	if staleErr != nil {
		g.obs.Stale()
		return out, staleErr
	}
	g.obs.ReviewDecided(out.Review.Outcome, rv.Route, now.Sub(out.CreatedAt))
	return out, nil
}

func others(recs []*Record, id string) []*Record {
	out := []*Record{}
	for _, r := range recs {
		if r.ID != id {
			out = append(out, r)
		}
	}
	return out
}
