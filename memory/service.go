package memory

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"
)

// Options configure a Governor. Store and Classifier are required.
type Options struct {
	Store      Store
	Classifier Classifier
	Observer   Observer
	Logger     *slog.Logger
	Now        func() time.Time
	NewID      func() string
	// Outbox enables storing reviewer notifications with each transition;
	// Waker, if set, is told after commit that there is something to deliver.
	Outbox bool
	Waker  Notified
	// PolicyTimeout bounds one policy evaluation; past it the write is parked.
	PolicyTimeout time.Duration
	// BatchSlots is how many slots quarantine and restore change per transaction.
	BatchSlots int
	// Secrets scans every string a candidate carries (default: the
	// Classifier, if it is a SecretScanner). A candidate
	// with a finding is rejected and redacted whatever policy decides, so a
	// secret is never applied, parked or logged; policy sees the findings
	// as input.secrets.
	Secrets SecretScanner
	// Judge, if set, gives a model's second opinion on a candidate's text,
	// as input.judge. It is asked before the slot is locked; an error or a
	// late answer leaves the rules' verdict alone.
	Judge Judge
}

// Governor runs every memory write through policy and applies the resulting
// transition in one store transaction. It is safe for concurrent use.
type Governor struct {
	store   Store
	policy  Classifier
	obs     Observer
	log     *slog.Logger
	now     func() time.Time
	newID   func() string
	outbox  bool
	waker   Notified
	timeout time.Duration
	batch   int
	secrets SecretScanner
	judge   Judge
	stripes [256]sync.Mutex // per-slot serialization; the store's conflict detection backs it up
}

// NewGovernor returns a Governor with defaults filled in.
func NewGovernor(o Options) *Governor {
	g := &Governor{store: o.Store, policy: o.Classifier, obs: o.Observer, log: o.Logger, now: o.Now,
		newID: o.NewID, outbox: o.Outbox, waker: o.Waker, timeout: o.PolicyTimeout, batch: o.BatchSlots,
		secrets: o.Secrets, judge: o.Judge}
	if g.secrets == nil {
		g.secrets, _ = o.Classifier.(SecretScanner)
	}
	if g.obs == nil {
		g.obs = NopObserver{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = func() time.Time { return time.Now().UTC() }
	}
	if g.newID == nil {
		g.newID = NewULIDSource()
	}
	if g.timeout <= 0 {
		g.timeout = 250 * time.Millisecond
	}
	if g.batch <= 0 {
		g.batch = 32
	}
	return g
}

// NewULIDSource returns a concurrency-safe generator of monotonic ULIDs, so
// ids sort by creation time even within one millisecond.
func NewULIDSource() func() string {
	var mu sync.Mutex
	entropy := ulid.Monotonic(rand.Reader, 0)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return ulid.MustNew(ulid.Now(), entropy).String()
	}
}

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

// update runs fn in a transaction of the store and calls unlock, which
// releases the locks of the slots fn changes: as soon as the transaction
// has committed when the store can wait for durability apart (see
// SyncDeferrer), else once it is durable. It returns once the transaction
// is durable either way.
func (g *Governor) update(ctx context.Context, unlock func(), fn func(Tx) error) error {
	d, ok := g.store.(SyncDeferrer)
	if !ok {
		defer unlock()
		return g.store.Update(ctx, fn)
	}
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
		Actor: c.Actor, Scope: c.Scope, Metadata: c.Metadata, Evidence: c.Evidence, CreatedAt: now}
	if err := g.placeRecord(ctx, rec); err != nil {
		return nil, err
	}
	findings := ScanRecord(g.secrets, rec)
	verdict := g.askJudge(ctx, rec, findings)

	unlock := g.lock(rec.SlotID)
	var res *SubmitResult
	var conflicts []string
	var action Action
	var risk Risk
	err := g.update(ctx, unlock, func(tx Tx) error {
		st, err := loadSlot(tx, rec.SlotID)
		if err != nil {
			return err
		}
		if c.SlotID != "" && st.Slot == nil {
			return Errorf(ENOTFOUND, "memory %s not found", c.SlotID)
		}
		if a := st.Active(); a != nil && !tenant.Covers(a.Scope) {
			// Reached by name in a shared slot, or by id: the active
			// version is another tenant's, which this caller cannot see.
			return notFound(rec.SlotID)
		}
		rec.Layer = HighestLayer(append(st.Layers(), rec.Layer)...)
		in := &PolicyInput{Op: rec.Op, Candidate: rec, Current: st.Active(), Pending: st.Pending,
			Actor: rec.Actor, Dialect: rec.Actor.Dialect, Secrets: findings, Judge: verdict}
		if in.Pending == nil {
			in.Pending = []*Record{}
		}
		dec := withSecrets(g.classify(ctx, in), findings)
		if adopt && dec.Action == ActionReview && st.Active() == nil && len(st.Pending) == 0 {
			dec.Action = ActionApply
			dec.Reasons = append(slices.Clone(dec.Reasons), Reason{Rule: RuleBaselineAdopted,
				Message: "adopted as the baseline: it was in force before memgate governed it"})
		}
		eff, outcome, err := Submit(st, rec, dec, now)
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
		conflicts, action, risk = eff.Conflicts, dec.Action, dec.Risk
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	g.obs.Write(rec.Actor.Dialect, action, risk)
	for _, k := range conflicts {
		g.obs.Conflict(k)
	}
	g.wake(res.Outcome == OutcomeParked)
	return res, nil
}

// placeRecord decides the record's slot and layer. Policy reads the
// layer the text implies (the inferred layer) for every write; free-text
// memories also get their fact type (and a subject, where the writer gave
// only a scope) from it. The record's layer is the highest of the declared
// and the inferred one: a writer's declaration can raise risk, never lower
// it (the slot's own layers are added under the slot's lock, in Submit).
func (g *Governor) placeRecord(ctx context.Context, rec *Record) error {
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
			return notFound(rec.SlotID)
		} else if err != nil {
			return err
		}
		if !TenantOf(ctx).Covers(slot.Scope) {
			return notFound(rec.SlotID)
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
	if (rec.Summary != "" || len(rec.Value) > 0) && (placer || (freeText && slot == nil)) {
		in := &PolicyInput{Op: rec.Op, Candidate: rec, Pending: []*Record{}, Actor: rec.Actor, Dialect: rec.Actor.Dialect}
		pl := g.place(ctx, in)
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

// apply writes effects into tx, naming events and notices.
func (g *Governor) apply(tx Tx, eff *Effects) error {
	for _, s := range eff.Slots {
		if err := tx.PutSlot(s); err != nil {
			return err
		}
	}
	for _, r := range eff.Records {
		if err := tx.PutRecord(r); err != nil {
			return err
		}
	}
	for _, p := range eff.Points {
		if err := tx.PutRollbackPoint(p); err != nil {
			return err
		}
	}
	for _, ev := range eff.Events {
		ev.ID = g.newID()
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
	}
	if g.outbox {
		for _, n := range eff.Notices {
			n.ID = g.newID()
			if err := tx.PutNotice(n); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *Governor) wake(ok bool) {
	if ok && g.outbox && g.waker != nil {
		g.waker.Wake()
	}
}

func loadSlot(tx ReadTx, slotID string) (SlotState, error) {
	st, err := loadHead(tx, slotID)
	if err != nil || st.Slot == nil {
		return st, err
	}
	st.Pending, err = tx.SlotPending(slotID)
	return st, err
}

// slotOf finds the slot a record is in, for locking before the transaction.
func (g *Governor) slotOf(ctx context.Context, id string) (string, error) {
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
	slotID, err := g.slotOf(ctx, id)
	if err != nil {
		return nil, err
	}
	unlock := g.lock(slotID)
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
			eff, err = Approve(st, rec, rv, now)
		} else {
			eff, err = Reject(st, rec, rv, now)
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

// RollbackResult lists what a rollback changed.
type RollbackResult struct {
	RolledBack []*Record `json:"rolledBack"`
	Restored   *Record   `json:"restored,omitempty"` // the slot's head afterwards, if any
	quiet      bool      // part of a bulk operation that notifies once
}

// Rollback undoes a record: the slot returns exactly to its rollback point.
// A record that is no longer the head needs cascade, which undoes every
// version after it first, newest first, in the same transaction.
// Errors: ENOTFOUND, ECONFLICT.
func (g *Governor) Rollback(ctx context.Context, id string, cascade bool, reason, by string) (*RollbackResult, error) {
	slotID, err := g.slotOf(ctx, id)
	if err != nil {
		return nil, err
	}
	unlock := g.lock(slotID)
	now := g.now()
	var res *RollbackResult
	err = g.update(ctx, unlock, func(tx Tx) error {
		res = &RollbackResult{}
		rec, err := tx.Record(id)
		if err != nil {
			return err
		}
		st, err := loadSlot(tx, rec.SlotID)
		if err != nil {
			return err
		}
		if rec.Status == StatusSuperseded && cascade {
			if !inChain(tx, st.Head, rec.ID) {
				return Errorf(ECONFLICT, "memory %s is not in the line of versions behind the slot's head", id)
			}
			for st.Head != nil && st.Head.ID != rec.ID {
				if st, err = g.rollbackHead(tx, st, res, reason, by, now); err != nil {
					return err
				}
			}
		}
		if _, err := g.rollbackRecord(tx, st, rec.ID, res, reason, by, now); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	scope := ScopeRecord
	if len(res.RolledBack) > 1 {
		scope = ScopeCascade
	}
	g.obs.RolledBack(scope, reason, len(res.RolledBack))
	g.wake(true)
	return res, nil
}

// rollbackRecord rolls back the record id, which must be the head; the pure
// Rollback explains why not when it is not.
func (g *Governor) rollbackRecord(tx Tx, st SlotState, id string, res *RollbackResult, reason, by string, now time.Time) (SlotState, error) {
	rec, err := tx.Record(id)
	if err != nil {
		return st, err
	}
	if st.Head == nil || st.Head.ID != id {
		_, err := Rollback(st, rec, nil, nil, reason, by, now)
		if err == nil {
			err = Errorf(ECONFLICT, "memory %s is not the slot's head", id)
		}
		return st, err
	}
	return g.rollbackHead(tx, st, res, reason, by, now)
}

// rollbackHead undoes the slot's head and returns the slot's new state.
// Bulk operations (quarantine, restore) announce themselves once, so they
// set res.Quiet to drop the per-version notices.
func (g *Governor) rollbackHead(tx Tx, st SlotState, res *RollbackResult, reason, by string, now time.Time) (SlotState, error) {
	head := st.Head
	point, err := tx.RollbackPoint(head.RollbackPoint)
	if err != nil {
		return st, fmt.Errorf("rollback point of %s: %w", head.ID, err)
	}
	restore, err := restoreTarget(tx, point.Replaced)
	if err != nil {
		return st, err
	}
	eff, err := Rollback(st, head, point, restore, reason, by, now)
	if err != nil {
		return st, err
	}
	if res.quiet {
		eff.Notices = nil
	}
	if err := g.apply(tx, &eff); err != nil {
		return st, err
	}
	res.RolledBack = append(res.RolledBack, eff.Records[0])
	res.Restored = nil
	// The slot's new state is what was just written: the slot with its new
	// head, the restored version, and the same pending writes (a rollback
	// decides none). Reloading it costs an index scan per version undone.
	next := SlotState{Slot: eff.Slots[0], Pending: st.Pending}
	if restore != nil {
		res.Restored = eff.Records[1]
		next.Head = eff.Records[1]
	}
	return next, nil
}

// restoreTarget follows a rollback point back past versions that were
// themselves rolled back, so an undone version is never resurrected.
func restoreTarget(tx ReadTx, id string) (*Record, error) {
	for seen := 0; id != ""; seen++ {
		r, err := tx.Record(id)
		if err != nil {
			return nil, fmt.Errorf("restore target %s: %w", id, err)
		}
		if r.Status != StatusRolledBack {
			return r, nil
		}
		if seen > 1_000_000 {
			return nil, Errorf(EINTERNAL, "version chain of %s does not end", id)
		}
		id = r.Supersedes
	}
	return nil, nil
}

func inChain(tx ReadTx, head *Record, id string) bool {
	for r := head; r != nil; {
		if r.ID == id {
			return true
		}
		if r.Supersedes == "" {
			return false
		}
		next, err := tx.Record(r.Supersedes)
		if err != nil {
			return false
		}
		r = next
	}
	return false
}

// BulkResult reports a quarantine or a restore.
type BulkResult struct {
	RolledBack []string `json:"rolledBack"` // versions undone that were the head
	Retracted  []string `json:"retracted"`  // versions undone that someone else had since replaced
	Rejected   []string `json:"rejected"`   // pending writes rejected
	Slots      int      `json:"slots"`
}

// Quarantine undoes everything one run/session (kind "run") or one agent/
// user (kind "actor") wrote: in each slot its versions are rolled back from
// the head, newest first; its versions someone else has since replaced are
// retracted so no later rollback restores them; its pending writes are
// rejected. Each slot changes atomically; slots are processed in batches.
func (g *Governor) Quarantine(ctx context.Context, kind, id, reason, by string) (*BulkResult, error) {
	if kind != "run" && kind != "actor" {
		return nil, Errorf(EINVALID, "quarantine needs a runId or an actorId")
	}
	if id == "" {
		return nil, Errorf(EINVALID, "quarantine needs a runId or an actorId")
	}
	bySlot := map[string]map[string]bool{}
	add := func(recID, slotID string) bool {
		if bySlot[slotID] == nil {
			bySlot[slotID] = map[string]bool{}
		}
		bySlot[slotID][recID] = true
		return true
	}
	err := g.store.View(ctx, func(tx ReadTx) error {
		// Only the slot of each record is needed here; the batches read
		// the records again under their locks.
		if sc, ok := tx.(ActorSlotScanner); ok {
			return sc.ScanActorSlots(kind, id, add)
		}
		return tx.ScanByActor(kind, id, func(r *Record) bool { return add(r.ID, r.SlotID) })
	})
	if err != nil {
		return nil, err
	}
	points, err := g.rollbackPoints(ctx, bySlot)
	if err != nil {
		return nil, err
	}
	// A record approved as append moved to its own slot; the index still
	// finds it by id, and loading it inside the batch sees its current slot.
	res, err := g.bulk(ctx, slices.Collect(maps.Keys(bySlot)), points, func(tx Tx, slotID string, now time.Time, res *BulkResult) error {
		return g.quarantineSlot(tx, slotID, bySlot[slotID], res, reason, by, now)
	})
	if err != nil {
		return res, err
	}
	now := g.now()
	err = g.store.Update(ctx, func(tx Tx) error {
		ev := &Event{Type: EventQuarantined, At: now, By: by, Reason: fmt.Sprintf("%s %s: %s", kind, id, reason),
			Related: append(append([]string{}, res.RolledBack...), res.Retracted...)}
		eff := Effects{Events: []*Event{ev}, Notices: []*Notice{{Kind: NoticeQuarantine, At: now,
			Text: fmt.Sprintf("Quarantined %s %s by %s (%s): %d rolled back, %d retracted, %d pending rejected.%s",
				kind, id, by, reason, len(res.RolledBack), len(res.Retracted), len(res.Rejected),
				listIDs(" Undone: ", append(append([]string{}, res.RolledBack...), res.Retracted...)))}}}
		return g.apply(tx, &eff)
	})
	g.obs.RolledBack(ScopeQuarantine, reason, len(res.RolledBack)+len(res.Retracted))
	g.wake(true)
	return res, err
}

func (g *Governor) quarantineSlot(tx Tx, slotID string, ids map[string]bool, res *BulkResult, reason, by string, now time.Time) error {
	st, err := loadHead(tx, slotID)
	if err != nil {
		return err
	}
	rb := &RollbackResult{quiet: true}
	for st.Head != nil && ids[st.Head.ID] && (st.Head.Status == StatusActive || st.Head.Status == StatusDeleted) {
		if st, err = g.rollbackHead(tx, st, rb, reason, by, now); err != nil {
			return err
		}
	}
	undone := map[string]bool{}
	for _, r := range rb.RolledBack {
		res.RolledBack = append(res.RolledBack, r.ID)
		undone[r.ID] = true
	}
	for _, id := range newestFirst(ids) {
		if undone[id] {
			continue // rolled back just above
		}
		rec, err := tx.Record(id)
		if err != nil {
			return err
		}
		var eff Effects
		switch rec.Status {
		case StatusPending:
			if eff, err = Reject(st, rec, Review{By: by, Route: "quarantine", Note: reason}, now); err != nil {
				return err
			}
			res.Rejected = append(res.Rejected, id)
		case StatusSuperseded:
			if eff, err = Retract(rec, reason, by, now); err != nil {
				return err
			}
			res.Retracted = append(res.Retracted, id)
		default:
			continue
		}
		if err := g.apply(tx, &eff); err != nil {
			return err
		}
		if rec.Status == StatusPending && rec.SlotID == slotID {
			// The rejection touched the slot and took the write off its
			// pending list; a retraction changed neither.
			if len(eff.Slots) > 0 {
				st.Slot = eff.Slots[0]
			}
			st.Pending = others(st.Pending, id)
		}
	}
	if st.Slot != nil {
		// Bump the slot so a concurrent transition on it conflicts.
		eff := Effects{Slots: []*Slot{touchSlot(st.Slot, &Record{}, now)}}
		return g.apply(tx, &eff)
	}
	return nil
}

// Restore returns every slot of a subject to what was its head at time at:
// versions applied after it are rolled back, newest first. Pending writes
// are left for their reviewers.
func (g *Governor) Restore(ctx context.Context, subjectID string, at time.Time, reason, by string) (*BulkResult, error) {
	if subjectID == "" {
		return nil, Errorf(EINVALID, "restore needs a subjectId")
	}
	var slots []string
	err := g.store.View(ctx, func(tx ReadTx) (err error) {
		slots, err = tx.SubjectSlots(subjectID)
		return err
	})
	if err != nil {
		return nil, err
	}
	res, err := g.bulk(ctx, slots, nil, func(tx Tx, slotID string, now time.Time, res *BulkResult) error {
		st, err := loadHead(tx, slotID)
		if err != nil {
			return err
		}
		rb := &RollbackResult{quiet: true}
		for st.Head != nil && st.Head.ActivatedAt.After(at) {
			if st, err = g.rollbackHead(tx, st, rb, reason, by, now); err != nil {
				return err
			}
		}
		for _, r := range rb.RolledBack {
			res.RolledBack = append(res.RolledBack, r.ID)
		}
		return nil
	})
	if err == nil {
		now := g.now()
		err = g.store.Update(ctx, func(tx Tx) error {
			eff := Effects{Events: []*Event{{Type: EventRestored, At: now, SubjectID: subjectID, By: by,
				Reason: fmt.Sprintf("subject %s restored to %s: %s", subjectID, at.Format(time.RFC3339), reason), Related: res.RolledBack}},
				Notices: []*Notice{{Kind: NoticeQuarantine, At: now, Text: fmt.Sprintf("Restored subject %s to %s by %s (%s): %d rolled back.%s",
					subjectID, at.Format(time.RFC3339), by, reason, len(res.RolledBack), listIDs(" Undone: ", res.RolledBack))}}}
			return g.apply(tx, &eff)
		})
	}
	g.obs.RolledBack(ScopeRestore, reason, len(res.RolledBack))
	g.wake(true)
	return res, err
}

// bulk runs fn for each slot, batching slots into transactions, and
// returns what the committed batches did. points are rollback points read
// beforehand, which fn's reads of them get instead of a read of the store. fn records into the result it is
// given, which counts only once its transaction commits: a transaction
// retried after a conflict, or split because it was too big, runs fn again.
// Batches run on up to GOMAXPROCS goroutines, each owning the slots of some
// lock stripes, so they never wait for one another and one's CPU work
// overlaps another's fsync; each slot still changes atomically. On an
// error it returns what committed before it.
func (g *Governor) bulk(ctx context.Context, slots []string, points map[string]*RollbackPoint, fn func(tx Tx, slotID string, now time.Time, res *BulkResult) error) (*BulkResult, error) {
	total := newBulkResult()
	workers := max(1, min(runtime.GOMAXPROCS(0), len(slots)/g.batch))
	parts := make([][]string, workers)
	for _, s := range slots {
		w := g.stripe(s) % workers
		parts[w] = append(parts[w], s)
	}
	var mu sync.Mutex
	eg, ctx := errgroup.WithContext(ctx)
	for _, part := range parts {
		eg.Go(func() error {
			sort.Strings(part)
			for len(part) > 0 {
				n := min(g.batch, len(part))
				for {
					res, err := g.bulkBatch(ctx, part[:n], points, fn)
					if errors.Is(err, ErrTxnTooBig) && n > 1 {
						n /= 2
						continue
					}
					if err != nil {
						return err
					}
					mu.Lock()
					total.add(res)
					mu.Unlock()
					break
				}
				part = part[n:]
			}
			return nil
		})
	}
	err := eg.Wait()
	total.sort()
	return total, err
}

func (g *Governor) bulkBatch(ctx context.Context, slots []string, points map[string]*RollbackPoint, fn func(Tx, string, time.Time, *BulkResult) error) (*BulkResult, error) {
	unlock := g.lock(slots...)
	defer unlock()
	now := g.now()
	var res *BulkResult
	err := g.store.Update(ctx, func(tx Tx) error {
		res = newBulkResult() // an attempt that does not commit leaves nothing behind
		btx := newBatchTx(tx, points)
		for _, s := range slots {
			if err := fn(btx, s, now, res); err != nil {
				return fmt.Errorf("slot %s: %w", s, err)
			}
			if err := btx.flush(); err != nil {
				return fmt.Errorf("slot %s: %w", s, err)
			}
		}
		return nil
	})
	return res, err
}

// loadHead is loadSlot without the pending writes, which undoing versions
// does not look at (Rollback, Retract and Reject decide on the slot and
// its head): quarantine and restore skip a prefix scan per slot. A
// concurrent park still conflicts on the slot key, which both write.
func loadHead(tx ReadTx, slotID string) (SlotState, error) {
	var st SlotState
	slot, err := tx.Slot(slotID)
	if ErrorCode(err) == ENOTFOUND {
		return st, nil
	} else if err != nil {
		return st, err
	}
	st.Slot = slot
	if slot.Head != "" {
		if st.Head, err = tx.Record(slot.Head); err != nil {
			return st, fmt.Errorf("slot %s head: %w", slotID, err)
		}
	}
	return st, nil
}

// RecordReplacer is implemented by transactions that can write a record
// over its stored version when the caller read that version in the same
// transaction; PutRecord reads and decodes it again to keep indexes in step.
type RecordReplacer interface {
	ReplaceRecord(old, cur *Record) error
}

// ActorSlotScanner is implemented by read transactions that can list the
// records of a run/session (kind "run") or agent/user (kind "actor") with
// their slot ids, oldest first, without decoding each record.
type ActorSlotScanner interface {
	ScanActorSlots(kind, id string, fn func(recordID, slotID string) bool) error
}

// batchTx is the transaction of a quarantine or restore batch as one
// slot's steps see it. Undoing a slot reads and rewrites the same slot and
// records several times (undo the head, restore the version before, undo
// that too, bump the slot). batchTx answers repeated reads of a record or
// slot from what it read or was given, and writes each one once, in flush,
// over the version it read, so the store neither reads it again nor
// encodes the states in between. The final keys and indexes are the same:
// each index follows a record's status, and only the last status counts.
//
// Other reads (scans) go to the store and see buffered writes only once
// flushed; the bulk steps make none between flushes, and the slot-local
// scans flush first to be safe.
type batchTx struct {
	Tx
	records map[string]*batchRecord
	slots   map[string]*batchSlot
	points  map[string]*RollbackPoint // read beforehand (see rollbackPoints); shared, read only
}

type batchRecord struct {
	old   *Record // as stored when first read; a copy, so callers cannot change it
	cur   *Record // as read, or as last written
	known bool    // old was read in this transaction (else PutRecord reads it)
	dirty bool
}

type batchSlot struct {
	cur   *Slot
	dirty bool
}

func newBatchTx(tx Tx, points map[string]*RollbackPoint) *batchTx {
	return &batchTx{Tx: tx, records: map[string]*batchRecord{}, slots: map[string]*batchSlot{}, points: points}
}

func (b *batchTx) RollbackPoint(id string) (*RollbackPoint, error) {
	if p, ok := b.points[id]; ok {
		return p, nil
	}
	return b.Tx.RollbackPoint(id)
}

// rollbackPoints reads the rollback points of the records a quarantine
// undoes, before its batches start: in id order, so neighbouring reads
// share Badger's blocks, which a batch reading them slot by slot would
// each load, and on up to GOMAXPROCS snapshots at once. A rollback point
// never changes once written, so a batch may use one read in any snapshot;
// records never applied have none.
func (g *Governor) rollbackPoints(ctx context.Context, bySlot map[string]map[string]bool) (map[string]*RollbackPoint, error) {
	var ids []string
	for _, recs := range bySlot {
		for id := range recs {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	parts := max(1, min(runtime.GOMAXPROCS(0), len(ids)/256))
	found := make([][]*RollbackPoint, parts)
	eg, ctx := errgroup.WithContext(ctx)
	for w := range parts {
		eg.Go(func() error {
			return g.store.View(ctx, func(tx ReadTx) error {
				for _, id := range ids[w*len(ids)/parts : (w+1)*len(ids)/parts] {
					p, err := tx.RollbackPoint(RollbackPointID(id))
					if ErrorCode(err) == ENOTFOUND {
						continue
					} else if err != nil {
						return fmt.Errorf("rollback point of %s: %w", id, err)
					}
					found[w] = append(found[w], p)
				}
				return nil
			})
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	points := make(map[string]*RollbackPoint, len(ids))
	for _, ps := range found {
		for _, p := range ps {
			points[p.ID] = p
		}
	}
	return points, nil
}

func (b *batchTx) Record(id string) (*Record, error) {
	if e, ok := b.records[id]; ok {
		return e.cur, nil
	}
	r, err := b.Tx.Record(id)
	if err != nil {
		return nil, err
	}
	old := *r
	b.records[id] = &batchRecord{old: &old, cur: r, known: true}
	return r, nil
}

func (b *batchTx) Slot(id string) (*Slot, error) {
	if e, ok := b.slots[id]; ok {
		return e.cur, nil
	}
	s, err := b.Tx.Slot(id)
	if err != nil {
		return nil, err
	}
	b.slots[id] = &batchSlot{cur: s}
	return s, nil
}

func (b *batchTx) PutRecord(r *Record) error {
	e, ok := b.records[r.ID]
	if !ok {
		e = &batchRecord{}
		b.records[r.ID] = e
	}
	e.cur, e.dirty = r, true
	return nil
}

func (b *batchTx) PutSlot(s *Slot) error {
	b.slots[s.ID] = &batchSlot{cur: s, dirty: true}
	return nil
}

func (b *batchTx) SlotRecords(slotID string) ([]*Record, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.SlotRecords(slotID)
}

func (b *batchTx) SlotPending(slotID string) ([]*Record, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.SlotPending(slotID)
}

// The other reads of the store see what the batch wrote only once it is
// flushed: no undo step uses them today, and flushing first keeps it so if
// one does.

func (b *batchTx) SubjectSlots(subjectID string) ([]string, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.SubjectSlots(subjectID)
}

func (b *batchTx) ScanActive(subjectID string, fn func(*Record) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanActive(subjectID, fn)
}

func (b *batchTx) ScanPending(fn func(*Record) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanPending(fn)
}

func (b *batchTx) ScanByActor(kind, id string, fn func(*Record) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanByActor(kind, id, fn)
}

func (b *batchTx) ScanEvents(after string, fn func(*Event) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanEvents(after, fn)
}

func (b *batchTx) RecordEvents(recordID string) ([]*Event, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	return b.Tx.RecordEvents(recordID)
}

func (b *batchTx) ScanNotices(fn func(*Notice) bool) error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.Tx.ScanNotices(fn)
}

// flush writes what changed since the last flush and forgets what it read.
func (b *batchTx) flush() error {
	rr, canReplace := b.Tx.(RecordReplacer)
	for _, e := range b.records {
		if !e.dirty {
			continue
		}
		var err error
		if e.known && canReplace {
			err = rr.ReplaceRecord(e.old, e.cur)
		} else {
			err = b.Tx.PutRecord(e.cur)
		}
		if err != nil {
			return err
		}
	}
	for _, e := range b.slots {
		if e.dirty {
			if err := b.Tx.PutSlot(e.cur); err != nil {
				return err
			}
		}
	}
	clear(b.records)
	clear(b.slots)
	return nil
}

func newBulkResult() *BulkResult {
	return &BulkResult{RolledBack: []string{}, Retracted: []string{}, Rejected: []string{}}
}

func (r *BulkResult) add(o *BulkResult) {
	r.RolledBack = append(r.RolledBack, o.RolledBack...)
	r.Retracted = append(r.Retracted, o.Retracted...)
	r.Rejected = append(r.Rejected, o.Rejected...)
	r.Slots += o.Slots
}

// sort orders the ids (ULIDs: by time), whichever worker undid them.
func (r *BulkResult) sort() {
	slices.Sort(r.RolledBack)
	slices.Sort(r.Retracted)
	slices.Sort(r.Rejected)
}

// ErrTxnTooBig is returned (wrapped) by a Store when one transaction would
// exceed its size limit.
var ErrTxnTooBig = errors.New("transaction too big")

// newestFirst returns the ids (ULIDs, sortable by time) newest first.
func newestFirst(m map[string]bool) []string {
	out := slices.Sorted(maps.Keys(m))
	slices.Reverse(out)
	return out
}

// listIDs names up to 20 ids for a human-readable summary.
func listIDs(prefix string, ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	const most = 20
	if len(ids) <= most {
		return prefix + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s%s and %d more", prefix, strings.Join(ids[:most], ", "), len(ids)-most)
}
