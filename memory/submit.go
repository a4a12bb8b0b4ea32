package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// SubmitResult is the outcome of one candidate.
type SubmitResult struct {
	Outcome  Outcome `json:"outcome"`
	Record   *Record `json:"record"`             // the candidate as stored (the active record if unchanged)
	Replaced *Record `json:"replaced,omitempty"` // what it replaced, or would replace once approved
}

// Submit runs a candidate through policy and applies, parks or rejects it.
// Errors: EINVALID for bad input, ENOTFOUND for an unknown slot or a delete
// of nothing, EINTERNAL for storage failures (then nothing was written).
func (g *Governor) Submit(ctx context.Context, c Candidate) (*SubmitResult, error) {
	return g.submit(ctx, c, false)
}

// RuleBaselineAdopted names the reason Adopt adds to a decision it applied
// although policy would have parked it.
const RuleBaselineAdopted = "baseline_adopted"

// Adopt is Submit for content that was already in force before memgate
// governed it: the lines of a Markdown memory file when memgate first
// guards it. A candidate for an empty slot (no active, no pending
// version) applies even where policy would park it, with policy's risk and
// categories kept and a baseline_adopted reason added, since parking what
// the agent already reads would change nothing it acts on. Rejections
// stand (a secret is never stored), and a slot that holds anything is
// governed as by Submit.
func (g *Governor) Adopt(ctx context.Context, c Candidate) (*SubmitResult, error) {
	return g.submit(ctx, c, true)
}

func (g *Governor) submit(ctx context.Context, c Candidate, adopt bool) (*SubmitResult, error) {
	if err := c.Normalize(); err != nil {
		return nil, err
	}
	tenant := TenantOf(ctx)
	if tenant.Bound() {
		var err error
		if c.Scope, err = tenant.Confine(c.Scope); err != nil {
			return nil, err
		}
	}
	now := g.now()
	rec := &Record{ID: g.newID(), SlotID: c.SlotID, Op: c.Op, Layer: c.Layer, SubjectID: c.SubjectID,
		FactType: c.FactType, Summary: c.Summary, Value: c.Value, CandidateSource: c.CandidateSource,
		Actor: c.Actor, Scope: c.Scope, Metadata: c.Metadata, Evidence: c.Evidence, CreatedAt: now, ExpiresAt: c.ExpiresAt}
	w := &write{rec: rec, byID: c.SlotID != "", adopt: adopt, apart: c.KeepApart, tenant: tenant}
	ruled, err := g.placeRecord(ctx, rec, w)
	if err != nil {
		return nil, err
	}
	if ruled == nil {
		w.placed = rec.Layer
		w.findings = ScanRecord(g.secrets, rec)
		// The judge is asked before any lock: a model's answer takes long.
		w.verdict = g.askJudge(ctx, rec, w.findings)
	}
	findings := w.findings
	if c.Related != nil && rec.Op == OpWrite && !w.byID && !adopt && len(findings) == 0 {
		if err := g.relate(ctx, w, c.Related); err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
	}
	// Free text that policy did not place is matched with the active
	// memories of its subject under the subject's fact lock, held until
	// the write has committed (facts.go).
	unlockFacts := func() {}
	if g.matchesFacts(w) {
		unlock, err := g.lockFacts(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		unlockFacts = unlock
		defer unlock()
		g.matchFact(ctx, w)
	}
	if w.match == MatchRepeat || w.match == MatchUpdate {
		ruled = nil // moved to the matched memory's slot: decided there
	}
	res, err := g.commit(ctx, w, now, unlockFacts, ruled)
	if errors.Is(err, errNoLongerRepeat) {
		// The memory changed under the write (an edit by id takes no fact
		// lock): the write goes to its slot as an update, judged as any.
		w.repeatOf, w.match = "", MatchUpdate
		res, err = g.commit(ctx, w, now, unlockFacts, nil)
	}
	return res, err
}

// errNoLongerRepeat aborts the transaction of a write the matcher found to
// repeat a memory that has changed since.
var errNoLongerRepeat = errors.New("the repeated memory changed")

// commit decides the write against its slot and applies the decision in
// one transaction; unlockFacts is released with the slot's lock. ruled,
// when not nil, is policy's decision on a snapshot already (placeRecord).
func (g *Governor) commit(ctx context.Context, w *write, now time.Time, unlockFacts func(), ruled *ruling) (*SubmitResult, error) {
	rec := w.rec
	// Policy decides from a snapshot, before the slot is locked; the
	// transaction keeps the decision if the slot is still at the revision
	// it was made at, and decides again against the new state otherwise.
	// While another write holds the slot's lock, a snapshot would most
	// likely be outdated by the time the lock is ours: the transaction
	// decides alone, and policy still runs once. A repeat is checked in
	// the transaction first, and asks policy only if it no longer is one.
	r := ruled
	if r == nil && w.repeatOf == "" && !g.busy(rec.SlotID) {
		var snap SlotState
		err := g.store.View(ctx, func(tx ReadTx) (err error) {
			snap, err = loadSlot(tx, rec.SlotID)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		if r, err = g.rule(ctx, snap, w); err != nil {
			return nil, fmt.Errorf("submit: %w", err) // an answer about the snapshot; nothing was written
		}
	}

	unlockSlot := g.lock(rec.SlotID)
	unlock := func() { unlockSlot(); unlockFacts() }
	var res *SubmitResult
	var conflicts []string
	repeated := false
	err := g.update(ctx, unlock, func(tx Tx) error {
		slot, err := tx.Slot(rec.SlotID) // a read the transaction conflicts on
		if ErrorCode(err) == ENOTFOUND {
			slot, err = nil, nil
		} else if err != nil {
			return err
		}
		if r == nil || !sameRev(slot, r.st.Slot) {
			st, err := loadRest(tx, slot)
			if err != nil {
				return err
			}
			if w.repeatOf != "" {
				if !w.repeats(st) {
					return errNoLongerRepeat
				}
				repeated = true
				eff, outcome := Repeat(st, rec, now)
				res = &SubmitResult{Outcome: outcome, Record: st.Active()}
				return g.apply(tx, &eff)
			}
			if r, err = g.rule(ctx, st, w); err != nil {
				return err
			}
		}
		repeated = false
		st, dec, in := r.st, r.dec, r.input()
		eff, outcome, err := PlanSubmit(st, rec, dec, now)
		if err != nil {
			return err
		}
		if outcome == OutcomeRefused {
			// The redacted record: the log must not keep the secret either.
			in.Candidate = eff.Records[0]
			in.Actor = eff.Records[0].Actor
		}
		if raw, err := RecordInput(in); err == nil { // pending writes by id: the log stays linear
			for _, ev := range eff.Events {
				if ev.RecordID == rec.ID || ev.Type == EventUnchanged {
					ev.Input = raw
					break
				}
			}
		}
		if err := g.apply(tx, &eff); err != nil {
			return err
		}
		res = &SubmitResult{Outcome: outcome}
		for _, r := range eff.Records {
			if r.ID == rec.ID {
				res.Record = r
			}
		}
		switch outcome {
		case OutcomeUnchanged:
			res.Record = st.Active()
		case OutcomeApplied, OutcomeParked:
			res.Replaced = st.Active()
		}
		conflicts = eff.Conflicts
		return nil
	})
	if errors.Is(err, errNoLongerRepeat) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if fo, ok := g.obs.(FactObserver); ok && w.match != "" {
		fo.FactMatched(w.match)
	}
	if repeated {
		return res, nil // no policy decision: nothing was decided
	}
	g.obs.Write(rec.Actor.Dialect, r.dec.Effective(), r.dec.Risk)
	if s := r.dec.Shadow; s != nil && res.Outcome != OutcomeUnchanged {
		g.obs.Shadowed(r.dec.Action, s.Rules)
	}
	for _, k := range conflicts {
		g.obs.Conflict(k)
	}
	g.wake(res.Outcome == OutcomeParked)
	return res, nil
}

// write is a placed candidate on its way to a decision: what does not
// depend on the slot's state.
type write struct {
	rec      *Record
	placed   Layer // its layer before the slot's layers raise it
	byID     bool  // an edit or delete of a memory named by id
	adopt    bool
	apart    bool // the writer keeps its memories apart (Candidate.KeepApart)
	tenant   Tenant
	findings []SecretFinding
	verdict  *Verdict
	match    MatchKind // what the fact matcher found ("": not matched)
	repeatOf string    // the active record the write repeats, per the matcher
}

// ruling is policy's decision on a write against one state of its slot.
type ruling struct {
	st  SlotState
	w   *write
	dec Decision
}

func (r *ruling) input() *PolicyInput {
	in := &PolicyInput{Op: r.w.rec.Op, Candidate: r.w.rec, Current: r.st.Active(), Pending: r.st.Pending,
		Actor: r.w.rec.Actor, Dialect: r.w.rec.Actor.Dialect, Secrets: r.w.findings, Judge: r.w.verdict}
	if in.Pending == nil {
		in.Pending = []*Record{}
	}
	return in
}

// rule evaluates policy on the write against the slot state st. It sets
// the record's layer from the placed one and st (a slot holding a higher
// layer judges the write at it), so a decision taken again against a
// newer state starts from the same record.
func (g *Governor) rule(ctx context.Context, st SlotState, w *write) (*ruling, error) {
	if err := g.ruleChecks(st, w); err != nil {
		return nil, err
	}
	w.rec.Layer = HighestLayer(append(st.Layers(), w.placed)...)
	r := &ruling{st: st, w: w}
	r.dec = g.ruled(r, g.classify(ctx, r.input()))
	return r, nil
}

// ruleWith is rule with the decision policy already gave about the write
// at layer in st (placeAndDecide).
func (g *Governor) ruleWith(st SlotState, w *write, layer Layer, dec Decision) (*ruling, error) {
	if err := g.ruleChecks(st, w); err != nil {
		return nil, err
	}
	w.rec.Layer = layer
	r := &ruling{st: st, w: w}
	r.dec = g.ruled(r, dec)
	return r, nil
}

// ruleChecks refuses a write by id to a slot that is gone or another
// tenant's.
func (g *Governor) ruleChecks(st SlotState, w *write) error {
	if w.byID && st.Slot == nil {
		return Errorf(ENOTFOUND, "memory %s not found", w.rec.SlotID)
	}
	if a := st.Active(); a != nil && !w.tenant.Covers(a.Scope) {
		// Reached by name in a shared slot, or by id: the active
		// version is another tenant's, which this caller cannot see.
		return notFound(w.rec.SlotID)
	}
	return nil
}

// ruled is what the governor makes of policy's decision: secrets win,
// adoption applies a baseline, shadow mode applies what it would stop.
func (g *Governor) ruled(r *ruling, dec Decision) Decision {
	dec = withSecrets(dec, r.w.findings)
	st, w := r.st, r.w
	if w.adopt && dec.Action == ActionReview && st.Active() == nil && len(st.Pending) == 0 {
		dec.Action = ActionApply
		dec.Reasons = append(slices.Clone(dec.Reasons), Reason{Rule: RuleBaselineAdopted,
			Message: "adopted as the baseline: it was in force before memgate governed it"})
	}
	return g.shadow(dec)
}

// sameRev reports whether a slot read in a transaction is at the revision
// of the one a decision was made from (both absent counts).
func sameRev(cur, seen *Slot) bool {
	if cur == nil || seen == nil {
		return cur == nil && seen == nil
	}
	return cur.Rev == seen.Rev && cur.Head == seen.Head
}

// placeRecord decides the record's slot and layer. Policy reads the
// layer the text implies (the inferred layer) for every write; free-text
// memories also get their fact type (and a subject, where the writer gave
// only a scope) from it. The record's layer is the highest of the declared
// and the inferred one: a writer's declaration can raise risk, never lower
// it (the slot's own layers are added when policy decides, in rule).
//
// With a WritePolicy, placement and decision are one query
// (placeAndDecide): the ruling it returns is policy's decision about the
// placed write in the slot state it read, or nil when there is none to
// keep.
func (g *Governor) placeRecord(ctx context.Context, rec *Record, w *write) (*ruling, error) {
	rec.DeclaredLayer = rec.Layer
	subjectFromScope := false
	if rec.SubjectID == "" && rec.SlotID == "" {
		rec.SubjectID, subjectFromScope = rec.Scope.Entity(), true
	}
	var slot *Slot
	if rec.SlotID != "" {
		err := g.store.View(ctx, func(tx ReadTx) (err error) {
			slot, err = tx.Slot(rec.SlotID)
			return err
		})
		if ErrorCode(err) == ENOTFOUND {
			// One answer for "no such slot" and "another tenant's slot":
			// slot ids can be computed, so the answers must not differ.
			return nil, notFound(rec.SlotID)
		} else if err != nil {
			return nil, err
		}
		if !TenantOf(ctx).Covers(slot.Scope) {
			return nil, notFound(rec.SlotID)
		}
		rec.SubjectID, rec.FactType = slot.SubjectID, slot.FactType
		if rec.Scope == (Scope{}) {
			rec.Scope = slot.Scope
		}
	}
	// A Placer reads the layer of every text; a plain Classifier places
	// through its decision, so it is asked only about free text.
	_, placer := g.policy.(Placer)
	freeText := rec.Layer == "" || rec.FactType == "" || subjectFromScope
	if (rec.Summary == "" && len(rec.Value) == 0) || !placer && (!freeText || slot != nil) {
		return nil, placed(ctx, rec, Placement{}, slot, subjectFromScope)
	}
	if wp, ok := g.policy.(WritePolicy); ok && g.judge == nil {
		r, ok, err := g.placeAndDecide(ctx, wp, rec, w, slot, subjectFromScope)
		if ok || err != nil {
			return r, err
		}
	}
	in := &PolicyInput{Op: rec.Op, Candidate: rec, Pending: []*Record{}, Actor: rec.Actor, Dialect: rec.Actor.Dialect}
	return nil, placed(ctx, rec, g.place(ctx, in), slot, subjectFromScope)
}

// placed gives rec the placement's layer, fact type, subject and value
// where the writer left them to it, then its slot: slot, the one of its
// subject and fact type, or one of its own.
func placed(ctx context.Context, rec *Record, pl Placement, slot *Slot, subjectFromScope bool) error {
	if pl.Layer.Valid() {
		rec.InferredLayer = pl.Layer
	}
	if slot == nil {
		if rec.FactType == "" {
			rec.FactType = pl.FactType
		}
		if subjectFromScope && pl.SubjectID != "" {
			rec.SubjectID = pl.SubjectID
		}
	}
	if len(rec.Value) == 0 && len(pl.Value) > 0 && json.Valid(pl.Value) {
		rec.Value = pl.Value
	}
	var slotLayer Layer
	if slot != nil {
		slotLayer = slot.Layer
	}
	rec.Layer = HighestLayer(rec.DeclaredLayer, rec.InferredLayer, slotLayer)
	if rec.Layer == "" {
		rec.Layer = LayerKnowledge
	}
	if slot != nil {
		return nil
	}
	if rec.SubjectID == "" {
		return Errorf(EINVALID, "subjectId is required (or a user, agent, app or run scope)")
	}
	// A subject from the scope or the placement names a slot too.
	for _, f := range []struct {
		name string
		v    *string
	}{{"subjectId", &rec.SubjectID}, {"factType", &rec.FactType}} {
		if *f.v == "" {
			continue
		}
		id, err := FoldID(*f.v)
		if err != nil {
			return Errorf(EINVALID, "%s: %v", f.name, err)
		}
		*f.v = id
	}
	if err := checkID("factType", rec.FactType); err != nil {
		return err
	}
	if err := checkID("subjectId", rec.SubjectID); err != nil {
		return err
	}
	if rec.FactType != "" {
		rec.SlotID = TenantSlotID(TenantOf(ctx), rec.SubjectID, rec.FactType)
	} else {
		if rec.Op == OpDelete {
			return Errorf(EINVALID, "a delete names a memory id, or a subjectId and factType")
		}
		rec.SlotID = rec.ID // a slot of its own
	}
	return nil
}

// placeAndDecide places rec and decides it in one query of wp (DESIGN §7).
// It guesses the placed write from a placement that changes no slot field
// (most writes: free text that names no topic, and writes that name their
// slot), reads that slot's state and asks wp about the write as sent
// (in.Unplaced), with that state, its secrets found. The placement it
// gets is applied to rec as Place's would be. The decision is kept, as a
// ruling on that state, only when it is the decision the placed write
// would get: placement changed no field the guess fixed (slot, subject,
// fact type, value: also all the secret scan reads), and the layer the
// write is judged at, which the decision read as the highest of the
// declared, inferred and slot layers, is the governor's (rule). ok false
// (nothing was placed) sends the caller to Place and Classify.
func (g *Governor) placeAndDecide(ctx context.Context, wp WritePolicy, rec *Record, w *write, slot *Slot, subjectFromScope bool) (_ *ruling, ok bool, err error) {
	guess := *rec
	if placed(ctx, &guess, Placement{}, slot, subjectFromScope) != nil {
		return nil, false, nil // the placement must supply what is missing
	}
	var st SlotState
	if guess.SlotID != guess.ID {
		err := g.store.View(ctx, func(tx ReadTx) (err error) {
			st, err = loadSlot(tx, guess.SlotID)
			return err
		})
		if err != nil {
			return nil, false, nil
		}
	}
	cand := guess
	cand.Layer = HighestLayer(append(st.Layers(), rec.DeclaredLayer)...)
	cand.InferredLayer = ""
	findings := ScanRecord(g.secrets, &guess)
	in := &PolicyInput{Op: cand.Op, Candidate: &cand, Current: st.Active(), Pending: st.Pending, Actor: cand.Actor,
		Dialect: cand.Actor.Dialect, Secrets: findings, Unplaced: true}
	if in.Pending == nil {
		in.Pending = []*Record{}
	}
	pl, dec, ok := g.evalWrite(ctx, wp, in)
	if !ok {
		return nil, false, nil
	}
	if err := placed(ctx, rec, pl, slot, subjectFromScope); err != nil {
		return nil, true, err
	}
	if rec.SlotID != guess.SlotID || rec.SubjectID != guess.SubjectID || rec.FactType != guess.FactType ||
		!bytes.Equal(rec.Value, guess.Value) {
		return nil, true, nil // placed elsewhere: decided there, in commit
	}
	// What rules.rego judges at: the highest of the candidate's layer, the
	// declared and inferred ones and the slot's active and pending ones.
	judged := func(layers ...Layer) Layer {
		if a := st.Active(); a != nil {
			layers = append(layers, a.Layer)
		}
		for _, p := range st.Pending {
			layers = append(layers, p.Layer)
		}
		if l := HighestLayer(layers...); l != "" {
			return l
		}
		return LayerKnowledge
	}
	atRule := HighestLayer(append(st.Layers(), rec.Layer)...) // rule's
	if judged(cand.Layer, rec.DeclaredLayer, rec.InferredLayer) != judged(atRule, rec.DeclaredLayer, rec.InferredLayer) {
		return nil, true, nil
	}
	w.findings, w.placed = findings, rec.Layer
	r, err := g.ruleWith(st, w, atRule, dec)
	if err != nil {
		return nil, true, nil // rule's own checks: commit finds them again
	}
	return r, true, nil
}

// askJudge asks the judge, if any, for a second opinion on the record's
// text. Never for a record with a secret (it is rejected anyway, and the
// text must not leave the process); nil when there is no answer.
func (g *Governor) askJudge(ctx context.Context, rec *Record, findings []SecretFinding) *Verdict {
	if g.judge == nil || len(findings) > 0 || rec.Summary == "" {
		return nil
	}
	v, err := g.judge.Judge(ctx, rec)
	if err != nil {
		g.log.Debug("judge gave no verdict; the rules decide alone", "err", err, "record", rec.ID)
		return nil
	}
	return v
}
