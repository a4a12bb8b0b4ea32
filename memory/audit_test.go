package memory

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// pendingRecs returns n pending records of the slot, oldest first.
func pendingRecs(n int) []*Record {
	out := make([]*Record, n)
	for i := range out {
		out[i] = rec(fmt.Sprintf("p%03d", i), fmt.Sprintf("stage %d", i), StatusPending)
	}
	return out
}

func TestRecordInputReferencesPendingByID(t *testing.T) {
	head := rec("v1", "beta", StatusActive)
	cases := []struct {
		name    string
		pending int
		wantIDs []string
	}{
		{"no pending writes", 0, []string{}},
		{"a few", 3, []string{"p000", "p001", "p002"}},
		{"exactly the bound", MaxEventPending, PendingIDs(pendingRecs(MaxEventPending), -1)},
		{"more than the bound keeps the newest", 300, PendingIDs(pendingRecs(300)[300-MaxEventPending:], -1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pending := pendingRecs(tc.pending)
			in := &PolicyInput{Op: OpWrite, Candidate: rec("c", "ga", ""), Current: head, Pending: pending,
				Actor: Actor{AgentID: "a"}, Dialect: "native"}
			raw, err := RecordInput(in)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if _, ok := doc["pending"]; ok {
				t.Fatalf("the recorded input embeds the pending records: %s", raw)
			}
			for _, k := range []string{"op", "candidate", "current", "actor", "dialect", "secrets", "judge", "pendingIds", "pendingCount"} {
				if _, ok := doc[k]; !ok {
					t.Errorf("recorded input has no %q: %s", k, raw)
				}
			}
			if len(in.Pending) != tc.pending {
				t.Fatal("RecordInput changed its input")
			}
			got, err := ParseRecordedInput(raw)
			if err != nil {
				t.Fatal(err)
			}
			if got.Embedded() || !slices.Equal(got.PendingIDs, tc.wantIDs) || got.PendingCount != tc.pending ||
				got.Complete() != (tc.pending <= MaxEventPending) || len(got.PolicyInput.Pending) != 0 {
				t.Fatalf("parsed %+v", got)
			}
			if got.Candidate.ID != "c" || got.Current == nil || got.Current.ID != "v1" || got.Dialect != "native" {
				t.Fatalf("parsed input %+v", got.PolicyInput)
			}
			if len(raw) > 2000 {
				t.Errorf("recorded input of %d bytes", len(raw))
			}
		})
	}
}

func TestParseRecordedInputReadsBothForms(t *testing.T) {
	pending := pendingRecs(20)
	old, err := json.Marshal(&PolicyInput{Op: OpWrite, Candidate: rec("c", "ga", ""), Pending: pending})
	if err != nil {
		t.Fatal(err)
	}
	oldEmpty, _ := json.Marshal(&PolicyInput{Op: OpWrite, Candidate: rec("c", "ga", ""), Pending: []*Record{}})
	cases := []struct {
		name     string
		raw      string
		embedded bool
		pending  int // records in PolicyInput.Pending
		ids      int
		count    int
		err      string
	}{
		{"old form with pending records", string(old), true, 20, 20, 20, ""},
		{"old form with none", string(oldEmpty), true, 0, 0, 0, ""},
		{"new form", `{"op":"write","candidate":{"id":"c","slotId":"slot"},"current":null,"pendingIds":["p1","p2"],"pendingCount":40}`, false, 0, 2, 40, ""},
		{"new form, count missing", `{"candidate":{"id":"c"},"pendingIds":["p1"]}`, false, 0, 1, 1, ""},
		{"neither", `{"candidate":{"id":"c"}}`, false, 0, 0, 0, ""},
		{"no candidate", `{"pendingIds":[]}`, false, 0, 0, 0, "no candidate"},
		{"not an input", `{"candidate": 7}`, false, 0, 0, 0, "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRecordedInput([]byte(tc.raw))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Embedded() != tc.embedded || len(got.PolicyInput.Pending) != tc.pending || got.PolicyInput.Pending == nil ||
				len(got.PendingIDs) != tc.ids || got.PendingCount != tc.count {
				t.Fatalf("parsed embedded=%v pending=%d ids=%v count=%d", got.Embedded(), len(got.PolicyInput.Pending), got.PendingIDs, got.PendingCount)
			}
		})
	}
}

func TestAsPending(t *testing.T) {
	cand := rec("c", "ga", "")
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	approved := rec("p1", "paused", StatusSuperseded)
	approved.Review = &Review{Outcome: OutcomeApproved, By: "ann", At: now}
	approved.DecidedAt, approved.ActivatedAt, approved.SupersededAt = now, now, now
	approved.Supersedes, approved.SupersededBy, approved.RollbackPoint = "v1", "v2", "rp_p1"
	appended := rec("p2", "note", StatusActive)
	appended.SlotID, appended.FactType = "p2", ""
	rolled := rec("p3", "x", StatusRolledBack)
	rolled.RolledBackAt, rolled.RollbackReason = now, "oops"
	denied := rec("p4", "y", StatusRejected)
	denied.Review = &Review{Outcome: OutcomeRejected, By: "bob", At: now}
	for _, r := range []*Record{approved, appended, rolled, denied, rec("p5", "z", StatusPending)} {
		t.Run(r.ID, func(t *testing.T) {
			before := *r
			p := AsPending(r, cand)
			if p.Status != StatusPending || p.Review != nil || !p.DecidedAt.IsZero() || !p.ActivatedAt.IsZero() ||
				!p.SupersededAt.IsZero() || !p.RolledBackAt.IsZero() || p.Supersedes != "" || p.SupersededBy != "" ||
				p.RollbackPoint != "" || p.RollbackReason != "" {
				t.Fatalf("as pending: %+v", p)
			}
			if p.SlotID != cand.SlotID || p.FactType != cand.FactType || p.ID != r.ID || p.Summary != r.Summary {
				t.Fatalf("as pending: slot %s/%s id %s", p.SlotID, p.FactType, p.ID)
			}
			if r.Status != before.Status || r.SlotID != before.SlotID || r.Review != before.Review {
				t.Fatal("AsPending changed the record it was given")
			}
		})
	}
}

// A parked write's event relates to the active version and at most
// MaxEventPending pending writes, however many wait in the slot.
func TestParkedEventRelatedIsBounded(t *testing.T) {
	slot := &Slot{ID: "slot", SubjectID: "p", FactType: "stage", Head: "v1"}
	head := rec("v1", "beta", StatusActive)
	for _, n := range []int{0, 1, MaxEventPending, MaxEventPending + 1, 400} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			pending := pendingRecs(n)
			eff, out, err := PlanSubmit(SlotState{Slot: slot, Head: head, Pending: pending}, rec("c", "ga", ""), dec(ActionReview), t0)
			if err != nil || out != OutcomeParked {
				t.Fatalf("%s %v", out, err)
			}
			ev := eff.Events[0]
			want := append([]string{"v1"}, PendingIDs(pending, MaxEventPending)...)
			if !slices.Equal(ev.Related, want) {
				t.Fatalf("related %v, want %v", ev.Related, want)
			}
			if n > MaxEventPending && ev.Related[len(ev.Related)-1] != pending[n-1].ID {
				t.Fatal("the newest pending write is not related")
			}
		})
	}
}
