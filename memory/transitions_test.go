package memory

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The pure transitions, without storage: given a slot state and a decision,
// which records, rollback points, events and notices does a transition write?

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func rec(id, summary string, status Status) *Record {
	return &Record{ID: id, SlotID: "slot", Layer: LayerState, SubjectID: "p", FactType: "stage", Summary: summary, Status: status}
}

func dec(a Action) Decision {
	return Decision{Risk: RiskLow, Action: a, Reasons: []Reason{{Rule: "r", Message: "m"}}}
}

func eventTypes(eff Effects) string {
	var s []string
	for _, e := range eff.Events {
		s = append(s, string(e.Type))
	}
	return strings.Join(s, ",")
}

func find(eff Effects, id string) *Record {
	for _, r := range eff.Records {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func TestSubmitTransitions(t *testing.T) {
	slot := &Slot{ID: "slot", SubjectID: "p", FactType: "stage", Head: "v1"}
	head := rec("v1", "beta", StatusActive)
	pending := rec("p1", "paused", StatusPending)
	cases := []struct {
		name       string
		st         SlotState
		cand       *Record
		action     Action
		outcome    Outcome
		status     Status
		events     string
		notices    int
		points     int
		conflicts  string
		supersedes string
	}{
		{"apply into empty slot", SlotState{}, rec("c", "beta", ""), ActionApply, OutcomeApplied, StatusActive, "applied", 0, 1, "", ""},
		{"apply over head", SlotState{Slot: slot, Head: head}, rec("c", "ga", ""), ActionApply, OutcomeApplied, StatusActive, "superseded,applied", 0, 1, "override_applied", "v1"},
		{"same content is unchanged", SlotState{Slot: slot, Head: head}, rec("c", "beta", ""), ActionApply, OutcomeUnchanged, "", "unchanged", 0, 0, "", ""},
		{"review parks against head", SlotState{Slot: slot, Head: head}, rec("c", "ga", ""), ActionReview, OutcomeParked, StatusPending, "parked", 1, 0, "override_parked", ""},
		{"review beside another pending", SlotState{Slot: slot, Head: head, Pending: []*Record{pending}}, rec("c", "ga", ""), ActionReview, OutcomeParked, StatusPending, "parked", 1, 0, "override_parked,pending_vs_pending", ""},
		{"reject keeps the record", SlotState{Slot: slot, Head: head}, rec("c", "secret", ""), ActionReject, OutcomeRefused, StatusRejected, "rejected", 0, 0, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eff, out, err := PlanSubmit(tc.st, tc.cand, dec(tc.action), t0)
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.outcome {
				t.Fatalf("outcome %s, want %s", out, tc.outcome)
			}
			if got := eventTypes(eff); got != tc.events {
				t.Fatalf("events %s, want %s", got, tc.events)
			}
			if len(eff.Notices) != tc.notices || len(eff.Points) != tc.points {
				t.Fatalf("%d notices %d points, want %d and %d", len(eff.Notices), len(eff.Points), tc.notices, tc.points)
			}
			if got := strings.Join(eff.Conflicts, ","); got != tc.conflicts {
				t.Fatalf("conflicts %q, want %q", got, tc.conflicts)
			}
			if tc.outcome == OutcomeUnchanged {
				if len(eff.Records) != 0 {
					t.Fatal("an unchanged write stored records")
				}
				return
			}
			c := find(eff, "c")
			if c == nil || c.Status != tc.status || c.Supersedes != tc.supersedes {
				t.Fatalf("candidate %+v, want status %s supersedes %q", c, tc.status, tc.supersedes)
			}
			if tc.outcome == OutcomeParked && c.ExpectedHead != tc.st.headID() {
				t.Fatalf("parked against %q, want %q", c.ExpectedHead, tc.st.headID())
			}
			if old := find(eff, "v1"); tc.outcome == OutcomeApplied && tc.st.Head != nil &&
				(old == nil || old.Status != StatusSuperseded || old.SupersededBy != "c") {
				t.Fatalf("old head %+v, want superseded by c", old)
			}
			if tc.points == 1 && (eff.Points[0].Replaced != tc.supersedes || c.RollbackPoint != eff.Points[0].ID) {
				t.Fatalf("rollback point %+v does not protect %q", eff.Points[0], tc.supersedes)
			}
			if tc.st.Head != nil && tc.st.Head.Status != StatusActive {
				t.Fatal("the input state was modified")
			}
		})
	}
}

func TestSubmitDeleteOfNothing(t *testing.T) {
	c := rec("c", "", "")
	c.Op = OpDelete
	_, _, err := PlanSubmit(SlotState{}, c, dec(ActionApply), t0)
	if ErrorCode(err) != ENOTFOUND {
		t.Fatalf("delete in an empty slot: %v, want not found", err)
	}
}

func TestApproveAndRejectTransitions(t *testing.T) {
	slot := &Slot{ID: "slot", SubjectID: "p", FactType: "stage", Head: "v1"}
	head := rec("v1", "beta", StatusActive)
	parked := rec("p1", "ga", StatusPending)
	parked.ExpectedHead = "v1"
	knowledge := rec("k1", "fact", StatusPending)
	knowledge.Layer, knowledge.ExpectedHead = LayerKnowledge, "v1"
	decided := rec("d1", "x", StatusRejected)
	cases := []struct {
		name   string
		st     SlotState
		r      *Record
		mode   ReviewMode
		reject bool
		code   string
		events string
	}{
		{"override applies", SlotState{Slot: slot, Head: head}, parked, ModeOverride, false, "", "superseded,applied,approved"},
		{"stale when head moved", SlotState{Slot: &Slot{ID: "slot", Head: "v2"}, Head: rec("v2", "paused", StatusActive)}, parked, ModeOverride, false, ESTALE, ""},
		{"stale when slot emptied", SlotState{Slot: &Slot{ID: "slot"}}, parked, ModeOverride, false, ESTALE, ""},
		{"append refused for state", SlotState{Slot: slot, Head: head}, parked, ModeAppend, false, EINVALID, ""},
		{"append for knowledge ignores the head", SlotState{Slot: &Slot{ID: "slot", Head: "v9"}, Head: rec("v9", "y", StatusActive)}, knowledge, ModeAppend, false, "", "applied,approved"},
		{"unknown mode", SlotState{Slot: slot, Head: head}, parked, "merge", false, EINVALID, ""},
		{"already decided", SlotState{Slot: slot, Head: head}, decided, ModeOverride, false, EDECIDED, ""},
		{"reject", SlotState{Slot: slot, Head: head}, parked, "", true, "", "denied"},
		{"reject decided", SlotState{Slot: slot, Head: head}, decided, "", true, EDECIDED, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var eff Effects
			var err error
			if tc.reject {
				eff, err = PlanReject(tc.st, tc.r, Review{By: "alice"}, t0)
			} else {
				eff, err = PlanApprove(tc.st, tc.r, Review{By: "alice", Mode: tc.mode}, t0)
			}
			if ErrorCode(err) != tc.code {
				t.Fatalf("error %v, want code %q", err, tc.code)
			}
			if got := eventTypes(eff); got != tc.events {
				t.Fatalf("events %q, want %q", got, tc.events)
			}
			if tc.code != "" {
				if len(eff.Records) != 0 {
					t.Fatal("a refused decision wrote records")
				}
				return
			}
			r := find(eff, tc.r.ID)
			if r.Review == nil || r.Review.By != "alice" || r.DecidedAt.IsZero() {
				t.Fatalf("decision not recorded: %+v", r.Review)
			}
			if tc.mode == ModeAppend && (r.SlotID != r.ID || r.Supersedes != "" || find(eff, "v9") != nil) {
				t.Fatalf("append should open its own slot and replace nothing: %+v", r)
			}
			if len(eff.Notices) != 1 || eff.Notices[0].Kind != NoticeDecided {
				t.Fatalf("notices %+v, want one decided", eff.Notices)
			}
		})
	}
}

func TestRollbackTransition(t *testing.T) {
	slot := &Slot{ID: "slot", Head: "v2"}
	v1 := rec("v1", "beta", StatusSuperseded)
	v1.SupersededBy = "v2"
	v2 := rec("v2", "ga", StatusActive)
	v2.Supersedes, v2.RollbackPoint = "v1", RollbackPointID("v2")
	point := &RollbackPoint{ID: RollbackPointID("v2"), RecordID: "v2", Replaced: "v1"}

	eff, err := PlanRollback(SlotState{Slot: slot, Head: v2}, v2, point, v1, "wrong", "ops", t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := eventTypes(eff); got != "rolled_back,restored" {
		t.Fatalf("events %s", got)
	}
	if r := find(eff, "v1"); r.Status != StatusActive || r.SupersededBy != "" {
		t.Fatalf("restored %+v", r)
	}
	if r := find(eff, "v2"); r.Status != StatusRolledBack || r.RollbackReason != "wrong" {
		t.Fatalf("rolled back %+v", r)
	}
	if eff.Slots[0].Head != "v1" {
		t.Fatalf("slot head %s, want v1", eff.Slots[0].Head)
	}
	for _, tc := range []struct {
		r    *Record
		code string
	}{
		{v1, ECONFLICT},                          // superseded: needs cascade
		{rec("x", "", StatusPending), ECONFLICT}, // never applied
		{rec("y", "", StatusRolledBack), ECONFLICT},
	} {
		if _, err := PlanRollback(SlotState{Slot: slot, Head: v2}, tc.r, point, nil, "", "", t0); ErrorCode(err) != tc.code {
			t.Fatalf("rollback of %s (%s): %v, want %s", tc.r.ID, tc.r.Status, err, tc.code)
		}
	}
}

// TestSlotIDsFold: look-alike subject ids and fact types name one slot.
func TestSlotIDsFold(t *testing.T) {
	for _, tc := range []struct{ subject, factType string }{
		{"proj-cafe", "publish.auto"},
		{"proj-c\u0430fe", "publish.auto"},        // Cyrillic а
		{"  proj-cafe ", "publish.auto"},          // white space
		{"proj-\u200bcafe", "publish.\u00adauto"}, // zero-width space, soft hyphen
		{"ｐｒｏｊ-cafe", "publish.aut\u043e"},        // full width; Cyrillic о
	} {
		c := Candidate{SubjectID: tc.subject, FactType: tc.factType, Summary: "x"}
		if err := c.Normalize(); err != nil {
			t.Fatalf("%q/%q: %v", tc.subject, tc.factType, err)
		}
		if c.SubjectID != "proj-cafe" || c.FactType != "publish.auto" {
			t.Errorf("%q/%q normalized to %q/%q, want proj-cafe/publish.auto", tc.subject, tc.factType, c.SubjectID, c.FactType)
		}
	}
	a, b := Candidate{SubjectID: "proj-caf\u00e9", Summary: "x"}, Candidate{SubjectID: "proj-cafe\u0301", Summary: "x"}
	if a.Normalize() != nil || b.Normalize() != nil || a.SubjectID != b.SubjectID {
		t.Errorf("composed and decomposed é name different slots: %q, %q", a.SubjectID, b.SubjectID)
	}
}

func TestCandidateNormalize(t *testing.T) {
	cases := []struct {
		name string
		c    Candidate
		msg  string // "" = valid
	}{
		{"minimal", Candidate{SubjectID: "s", Summary: "x"}, ""},
		{"value only", Candidate{SubjectID: "s", Value: []byte(`{"a":1}`)}, ""},
		{"unknown layer", Candidate{Layer: "mood", SubjectID: "s", Summary: "x"}, "unknown layer"},
		{"unknown op", Candidate{Op: "upsert", SubjectID: "s", Summary: "x"}, "op must be"},
		{"empty", Candidate{SubjectID: "s", Summary: "   "}, "summary is required"},
		{"delete without target", Candidate{Op: OpDelete, SubjectID: "s"}, "a delete names"},
		{"long summary", Candidate{SubjectID: "s", Summary: strings.Repeat("记", MaxSummaryBytes)}, "summary is"},
		{"control char", Candidate{SubjectID: "s\x07t", Summary: "x"}, "control character"},
		{"escape in a summary", Candidate{SubjectID: "s", Summary: "ok\x1b[2K\x1b[1A"}, "control character"},
		{"NUL in a summary", Candidate{SubjectID: "s", Summary: "a\x00b"}, "control character"},
		{"lone CR in evidence", Candidate{SubjectID: "s", Summary: "x", Evidence: Evidence{Excerpt: "a\rb"}}, "control character"},
		{"invalid UTF-8 in evidence", Candidate{SubjectID: "s", Summary: "x", Evidence: Evidence{Excerpt: "a\xffb"}}, "UTF-8"},
		{"CRLF, tab and newline are text", Candidate{SubjectID: "s", Summary: "line one\r\n\tline two\n"}, ""},
		{"only invisible", Candidate{SubjectID: "\u200b", Summary: "x"}, "subjectId"},
		{"long id", Candidate{SubjectID: strings.Repeat("s", MaxIDLen+1), Summary: "x"}, "subjectId is"},
		{"bad value", Candidate{SubjectID: "s", Summary: "x", Value: []byte("{")}, "not valid JSON"},
		{"number out of range", Candidate{SubjectID: "s", Summary: "x", Value: []byte(`{"n": 1e999999}`)}, "out of range"},
		{"number out of range in metadata", Candidate{SubjectID: "s", Summary: "x", Metadata: map[string]any{"n": json.Number("-1e400")}}, "out of range"},
		{"bad source", Candidate{SubjectID: "s", Summary: "x", CandidateSource: "gossip"}, "candidateSource"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Normalize()
			if tc.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.c.Op != OpWrite || tc.c.CandidateSource != SourceUser {
					t.Fatalf("defaults not filled: %+v", tc.c)
				}
				return
			}
			if ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), tc.msg) {
				t.Fatalf("error %v, want invalid containing %q", err, tc.msg)
			}
		})
	}
}

func TestKeyedSlotIDIsStableAndDistinct(t *testing.T) {
	a := KeyedSlotID("project-alpha", "publish.auto")
	if a != KeyedSlotID("project-alpha", "publish.auto") {
		t.Fatal("slot id is not stable")
	}
	// The separator keeps ("ab","c") and ("a","bc") apart.
	if KeyedSlotID("ab", "c") == KeyedSlotID("a", "bc") || a == KeyedSlotID("project-beta", "publish.auto") {
		t.Fatal("distinct slots share an id")
	}
}
