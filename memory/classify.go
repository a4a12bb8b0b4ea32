package memory

import (
	"context"
	"errors"
	"fmt"
)

// place asks policy where free text goes. A failure places nothing: the
// write keeps what its writer gave (knowledge, a slot of its own), and the
// decision that follows fails closed if the policy is broken.
func (g *Governor) place(ctx context.Context, in *PolicyInput) Placement {
	placer, ok := g.policy.(Placer)
	if !ok {
		d := g.classify(ctx, in)
		return Placement{Layer: d.Layer, FactType: d.FactType, SubjectID: d.SubjectID, Value: d.Value}
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	pl, err := placer.Place(ctx, in)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		g.log.Warn("policy placement failed; keeping the writer's slot fields", "err", err, "record", in.Candidate.ID)
		return Placement{}
	}
	return pl
}

// evalWrite asks wp for the placement and the decision of an unplaced
// write in one query, bounded as classify is. Any error, a late answer or
// an invalid decision is no answer (false): the caller then asks Place
// and Classify, which fail closed as always.
func (g *Governor) evalWrite(ctx context.Context, wp WritePolicy, in *PolicyInput) (Placement, Decision, bool) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	pl, dec, err := wp.PlaceAndClassify(ctx, in)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = dec.validate()
	}
	if err != nil {
		if !errors.Is(err, ErrNoWriteQuery) {
			g.log.Debug("policy's one query gave no answer; asking placement and decision apart", "err", err, "record", in.Candidate.ID)
		}
		return Placement{}, Decision{}, false
	}
	return pl, dec, true
}

// classify evaluates policy and fails closed: any error, timeout or invalid
// decision parks the write with reason policy_error.
func (g *Governor) classify(ctx context.Context, in *PolicyInput) Decision {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	dec, err := g.policy.Classify(ctx, in)
	if err == nil {
		err = ctx.Err() // a decision that came too late is not trusted
	}
	if err == nil {
		err = dec.validate()
	}
	if err != nil {
		g.log.Warn("policy evaluation failed; parking the write", "err", err, "record", in.Candidate.ID)
		return Decision{Risk: RiskHigh, Action: ActionReview, Categories: []string{},
			Reasons:     []Reason{{Rule: "policy_error", Message: "policy could not be evaluated: " + err.Error()}},
			PolicyError: err.Error(), Revision: dec.Revision}
	}
	return dec
}

func (d *Decision) validate() error {
	switch d.Action {
	case ActionApply, ActionReview, ActionReject:
	default:
		return fmt.Errorf("policy returned action %q", d.Action)
	}
	switch d.Risk {
	case RiskLow, RiskMedium, RiskHigh:
	default:
		return fmt.Errorf("policy returned risk %q", d.Risk)
	}
	if d.Layer != "" && !d.Layer.Valid() {
		return fmt.Errorf("policy returned layer %q", d.Layer)
	}
	return nil
}
