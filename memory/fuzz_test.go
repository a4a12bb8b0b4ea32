package memory

// Fuzz targets for the domain's input validation and for random sequences
// of the pure transitions on one slot. Run as tests they check the seeds;
// `go test -fuzz FuzzX ./memory/` explores further.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// FuzzCandidateNormalize: every dialect hands its candidates to Normalize.
// It must refuse bad input with EINVALID only, and what it accepts must be
// within the bounds a record may hold, and stay accepted unchanged.
func FuzzCandidateNormalize(f *testing.F) {
	for _, s := range []string{
		`{"summary": "x"}`, `{"op": "delete", "slotId": "s"}`, `{"op": "delete"}`, `{"op": "merge", "summary": "x"}`,
		`{"layer": "nope", "summary": "x"}`, `{"summary": " \t "}`, `{"subjectId": "a\u0007b", "summary": "x"}`,
		`{"summary": "x", "value": {"a": 1}}`, `{"value": [1, 2]}`, `{"op": "delete", "subjectId": "p", "factType": "f"}`,
		`{"summary": "x", "metadata": {"k": [1, 2, {"z": null}]}}`, `{"summary": "x", "candidateSource": "rumour"}`,
		`{"summary": "x", "candidateSource": "model-inference", "evidence": {"excerpt": "e", "sourceRef": "r"}}`,
		`{"summary": "x", "actor": {"runId": "r\n1"}}`, `{"summary": "x", "scope": {"userId": "\u00ff\u00fe"}}`,
	} {
		f.Add([]byte(s), []byte(nil))
	}
	f.Add([]byte(`{"summary": "x"}`), []byte(`{"not json`))
	f.Add([]byte(`{"summary": "x"}`), []byte(`"\xff"`))
	f.Fuzz(func(t *testing.T, body, value []byte) {
		var c Candidate
		if json.Unmarshal(body, &c) != nil {
			return
		}
		if len(value) > 0 {
			c.Value = value // bytes a dialect may pass through unparsed
		}
		if err := c.Normalize(); err != nil {
			if code := ErrorCode(err); code != EINVALID {
				t.Fatalf("Normalize: %v has code %q, want %q", err, code, EINVALID)
			}
			return
		}
		if c.Op != OpWrite && c.Op != OpDelete {
			t.Fatalf("accepted op %q", c.Op)
		}
		if c.Layer != "" && !c.Layer.Valid() || !c.CandidateSource.Valid() {
			t.Fatalf("accepted layer %q, source %q", c.Layer, c.CandidateSource)
		}
		if c.Summary != strings.TrimSpace(c.Summary) || len(c.Summary) > MaxSummaryBytes || !utf8.ValidString(c.Summary) {
			t.Fatalf("accepted summary %q", c.Summary)
		}
		if len(c.Value) > 0 && !json.Valid(c.Value) || len(c.Value) > MaxValueBytes {
			t.Fatalf("accepted value %q", c.Value)
		}
		if c.Op == OpWrite && c.Summary == "" && len(c.Value) == 0 {
			t.Fatal("accepted a write with nothing to remember")
		}
		for _, id := range []string{c.SlotID, c.SubjectID, c.FactType, c.Actor.AgentID, c.Actor.UserID, c.Actor.RunID,
			c.Actor.SessionID, c.Scope.UserID, c.Scope.AgentID, c.Scope.AppID, c.Scope.RunID} {
			if len(id) > MaxIDLen || !utf8.ValidString(id) || strings.IndexFunc(id, unicode.IsControl) >= 0 {
				t.Fatalf("accepted id %q", id)
			}
		}
		before, _ := json.Marshal(c)
		if err := c.Normalize(); err != nil {
			t.Fatalf("a normalized candidate is refused the second time: %v", err)
		}
		if after, _ := json.Marshal(c); string(after) != string(before) {
			t.Fatalf("Normalize is not idempotent:\n%s\n%s", before, after)
		}
	})
}

// slotMachine applies the pure transitions' effects to records in memory:
// a store of one slot (plus the slots approve-as-append creates).
type slotMachine struct {
	t       *testing.T
	slot    *Slot
	records map[string]*Record
	order   []string // record ids, oldest first
	points  map[string]*RollbackPoint
	now     time.Time
	seq     int
	log     []string
}

const fuzzSlotID = "slot"

func (m *slotMachine) state() SlotState {
	st := SlotState{Slot: m.slot}
	if m.slot != nil && m.slot.Head != "" {
		st.Head = m.records[m.slot.Head]
	}
	for _, id := range m.ids() {
		if r := m.records[id]; r.SlotID == fuzzSlotID && r.Status == StatusPending {
			st.Pending = append(st.Pending, r)
		}
	}
	return st
}

func (m *slotMachine) ids() []string { return m.order }

func (m *slotMachine) apply(eff Effects) {
	for _, s := range eff.Slots {
		if s.ID == fuzzSlotID {
			m.slot = s
		}
	}
	for _, r := range eff.Records {
		if m.records[r.ID] == nil {
			m.order = append(m.order, r.ID) // ids grow with the sequence
		}
		m.records[r.ID] = r
	}
	for _, p := range eff.Points {
		m.points[p.ID] = p
	}
}

// pick returns the n-th record (mod count) with one of the statuses.
func (m *slotMachine) pick(n byte, statuses ...Status) *Record {
	var match []*Record
	for _, id := range m.ids() {
		if r := m.records[id]; slices.Contains(statuses, r.Status) {
			match = append(match, r)
		}
	}
	if len(match) == 0 {
		return nil
	}
	return match[int(n)%len(match)]
}

func (m *slotMachine) candidate(arg byte, op Op) *Record {
	m.seq++
	layer := LayerState
	if arg&1 == 1 {
		layer = LayerKnowledge // may be approved as append
	}
	summary := fmt.Sprintf("version %d", m.seq)
	st := m.state()
	if head := st.Active(); head != nil && arg&6 == 0 {
		summary = head.Summary // a repeat of the active version
	}
	return &Record{ID: fmt.Sprintf("r%03d", m.seq), SlotID: fuzzSlotID, Op: op, Layer: layer, SubjectID: "p",
		FactType: "f", Summary: summary, Actor: Actor{RunID: "run"}}
}

// restoreTarget follows a rollback point back past rolled-back versions,
// as the governor does.
func (m *slotMachine) restoreTarget(id string) *Record {
	for seen := 0; id != ""; seen++ {
		if seen > len(m.records) {
			m.t.Fatalf("the line of versions behind %s loops\n%s", id, strings.Join(m.log, "\n"))
		}
		r := m.records[id]
		if r.Status != StatusRolledBack {
			return r
		}
		id = r.Supersedes
	}
	return nil
}

func (m *slotMachine) step(kind, arg byte) {
	m.now = m.now.Add(time.Second)
	st := m.state()
	var eff Effects
	var err error
	var what string
	switch kind % 8 {
	case 0, 1, 2: // submit: apply, review, reject
		action := []Action{ActionApply, ActionReview, ActionReject}[kind%8]
		rec := m.candidate(arg, OpWrite)
		what = fmt.Sprintf("submit %s %s %q", rec.ID, action, rec.Summary)
		eff, _, err = PlanSubmit(st, rec, Decision{Risk: RiskLow, Action: action}, m.now)
	case 3: // delete the active version
		rec := m.candidate(arg, OpDelete)
		what = "delete " + rec.ID
		eff, _, err = PlanSubmit(st, rec, Decision{Risk: RiskLow, Action: ActionApply}, m.now)
	case 4, 5: // approve a parked write, as override or append
		rec := m.pick(arg, StatusPending, StatusActive, StatusRejected)
		if rec == nil {
			return
		}
		mode := []ReviewMode{ModeOverride, ModeAppend}[kind%8-4]
		what = fmt.Sprintf("approve %s %s", rec.ID, mode)
		eff, err = PlanApprove(st, rec, Review{By: "fuzz", Mode: mode}, m.now)
		if ErrorCode(err) == ESTALE {
			eff, err = Restale(st, rec, Decision{Risk: RiskHigh, Action: ActionReview}, "fuzz", m.now), nil
		}
	case 6: // reject
		rec := m.pick(arg, StatusPending, StatusRejected)
		if rec == nil {
			return
		}
		what = "reject " + rec.ID
		eff, err = PlanReject(st, rec, Review{By: "fuzz"}, m.now)
	case 7: // roll back a record, the head or not
		rec := m.pick(arg, StatusActive, StatusDeleted, StatusSuperseded, StatusRolledBack, StatusPending)
		if rec == nil {
			return
		}
		what = "rollback " + rec.ID
		point := m.points[rec.RollbackPoint]
		var restore *Record
		if point != nil {
			restore = m.restoreTarget(point.Replaced)
		}
		isHead := st.Head != nil && st.Head.ID == rec.ID
		eff, err = PlanRollback(st, rec, point, restore, "fuzz", "fuzz", m.now)
		if isHead && err != nil {
			m.t.Fatalf("%s: rolling back the head failed: %v\n%s", what, err, strings.Join(m.log, "\n"))
		}
		if !isHead && err == nil {
			m.t.Fatalf("%s: a version that is not the head was rolled back\n%s", what, strings.Join(m.log, "\n"))
		}
	}
	m.log = append(m.log, what)
	if err != nil {
		switch ErrorCode(err) {
		case EINVALID, ENOTFOUND, EDECIDED, ECONFLICT:
			return // refused, nothing written
		}
		m.t.Fatalf("%s: %v\n%s", what, err, strings.Join(m.log, "\n"))
	}
	before, rev := m.decidedOn(), m.rev()
	m.apply(eff)
	if m.decidedOn() != before && m.rev() != rev+1 {
		// A write decided from a snapshot at the old revision would be
		// committed against a state policy never saw.
		m.t.Fatalf("%s changed the slot's head or pending writes but took its revision from %d to %d\n%s",
			what, rev, m.rev(), strings.Join(m.log, "\n"))
	}
	m.check()
}

// decidedOn is what policy reads of the slot: its head and pending writes.
func (m *slotMachine) decidedOn() string {
	st := m.state()
	b, err := json.Marshal([]any{st.Head, st.Pending})
	if err != nil {
		m.t.Fatal(err)
	}
	return string(b)
}

func (m *slotMachine) rev() uint64 {
	if m.slot == nil {
		return 0
	}
	return m.slot.Rev
}

// check holds the slot to DESIGN §1: one active version, the head is the
// active one, every applied version has its rollback point, and a parked
// write is undecided.
func (m *slotMachine) check() {
	fail := func(format string, args ...any) {
		m.t.Fatalf(format+"\n%s", append(args, strings.Join(m.log, "\n"))...)
	}
	var active []string
	for _, id := range m.ids() {
		r := m.records[id]
		if r.Status == StatusActive && r.SlotID == fuzzSlotID {
			active = append(active, id)
		}
		switch r.Status {
		case StatusActive, StatusSuperseded, StatusDeleted:
			p := m.points[r.RollbackPoint]
			if p == nil || p.RecordID != r.ID || p.Replaced != r.Supersedes {
				fail("applied %s has rollback point %+v, supersedes %q", id, p, r.Supersedes)
			}
		case StatusPending:
			if !r.DecidedAt.IsZero() || r.Review != nil {
				fail("pending %s carries a decision", id)
			}
		}
		if r.Status == StatusSuperseded && r.SupersededBy == "" {
			fail("superseded %s names no successor", id)
		}
	}
	if len(active) > 1 {
		fail("slot has %d active versions: %v", len(active), active)
	}
	head := ""
	if m.slot != nil {
		head = m.slot.Head
	}
	if len(active) == 1 && active[0] != head {
		fail("active %s is not the slot's head %q", active[0], head)
	}
	if head != "" {
		if s := m.records[head].Status; s != StatusActive && s != StatusDeleted {
			fail("the slot's head %s is %s", head, s)
		}
	}
}

// FuzzSlotTransitions runs random sequences of submits, approvals,
// rejections, stale approvals, deletions and rollbacks on one slot through
// the pure transitions and checks the slot's invariants after each, and
// that each one that changed what policy reads of the slot moved its
// revision on by one (Slot.Rev: what the governor's snapshot check trusts).
func FuzzSlotTransitions(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 7, 0, 7, 0})             // apply twice, roll back both
	f.Add([]byte{0, 2, 1, 2, 1, 4, 4, 0, 4, 1})       // two parked writes; approving one makes the other stale
	f.Add([]byte{1, 3, 5, 0, 6, 0, 5, 0})             // park knowledge, approve as append, reject again
	f.Add([]byte{0, 2, 3, 0, 7, 1, 0, 0, 2, 4, 7, 2}) // delete, rollback of a non-head, a refused submit
	f.Add([]byte{0, 2, 0, 4, 0, 6, 7, 2, 7, 1, 7, 0, 7, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := &slotMachine{t: t, records: map[string]*Record{}, points: map[string]*RollbackPoint{},
			now: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
		for i := 0; i+1 < len(ops) && i < 160; i += 2 {
			m.step(ops[i], ops[i+1])
		}
	})
}
