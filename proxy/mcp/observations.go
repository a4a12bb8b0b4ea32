package mcp

import (
	"cmp"
	"slices"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/memory"
)

// observations are an entity's active observations, in the order they
// were written, for add_observations to compare a new one with.
type observations struct {
	recs []*memory.Record
}

func observationsOf(active []*memory.Record) *observations {
	o := &observations{}
	for _, r := range active {
		if partOf(r).kind == partObservation {
			o.recs = append(o.recs, r)
		}
	}
	// ULIDs: the order they were written.
	slices.SortFunc(o.recs, func(a, b *memory.Record) int { return cmp.Compare(a.ID, b.ID) })
	return o
}

// has reports whether the entity holds an observation of exactly this
// text (server-memory skips those without a write).
func (o *observations) has(text string) bool {
	return slices.ContainsFunc(o.recs, func(r *memory.Record) bool { return partOf(r).text == text })
}

// related names the observation a new one repeats or states a new value
// of (facts.Compare, the fact matcher's comparison), for the governor to
// match it with (memory.Candidate.Related): a repeat first, then an
// update. Nil when there is none, or when several observations would
// take the update (unsure which: the new one stays apart, since a lost
// observation is worse than two).
func (o *observations) related(text string) *memory.FactMatch {
	var update *memory.FactMatch
	updates := 0
	for _, r := range o.recs {
		rel, why := facts.Compare(text, partOf(r).text)
		switch rel {
		case facts.Repeat:
			return &memory.FactMatch{Kind: memory.MatchRepeat, SlotID: r.SlotID, RecordID: r.ID, Reason: why}
		case facts.Update:
			updates++
			update = &memory.FactMatch{Kind: memory.MatchUpdate, SlotID: r.SlotID, RecordID: r.ID, Reason: why}
		}
	}
	if updates != 1 {
		return nil
	}
	return update
}

// applied records an observation the governor applied, in place of the
// one it replaced, if any.
func (o *observations) applied(rec, replaced *memory.Record) {
	if rec == nil {
		return
	}
	if replaced != nil {
		o.recs = slices.DeleteFunc(o.recs, func(r *memory.Record) bool { return r.SlotID == replaced.SlotID })
	}
	o.recs = append(o.recs, rec)
}
