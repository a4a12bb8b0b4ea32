package memory_test

// A review decision bound to a parked version (Review.Version) applies only
// to that version: a write re-parked since (its approval found the slot
// changed) refuses it with ESTALE wrapping ErrVersionChanged, and nothing
// changes. Run on the real store, in memory.

import (
	"context"
	"errors"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// versionPolicy: overrides of an active state wait for a human; the rest applies.
func versionPolicy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if in.Candidate.Layer == memory.LayerState && in.Current != nil && !in.Current.SameContent(in.Candidate) {
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStateOverride},
			Reasons: []memory.Reason{{Rule: "override", Message: "overrides a key fact"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply, Reasons: []memory.Reason{{Rule: "low", Message: "low"}}}, nil
}

type versionEnv struct {
	t   *testing.T
	ctx context.Context
	gov *memory.Governor
}

func newVersionEnv(t *testing.T) *versionEnv {
	t.Helper()
	st, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &versionEnv{t: t, ctx: context.Background(),
		gov: memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(versionPolicy)})}
}

func (e *versionEnv) write(summary string) *memory.SubmitResult {
	e.t.Helper()
	res, err := e.gov.Submit(e.ctx, memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha",
		FactType: "publish.auto", Summary: summary})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *versionEnv) get(id string) *memory.Record {
	e.t.Helper()
	r, err := e.gov.Get(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *versionEnv) events(id string) int {
	e.t.Helper()
	ex, err := e.gov.Explain(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(ex.Events)
}

// reparked parks p against A, moves the slot to B from the CLI and lets an
// approval of p find it stale, so p is re-parked against B. It returns p's
// first and current versions.
func (e *versionEnv) reparked() (p *memory.Record, first, now string) {
	e.t.Helper()
	e.write("auto-publish is on")
	p = e.write("auto-publish is off").Record
	first = p.ParkVersion()
	q := e.write("auto-publish is on, weekdays only").Record
	if _, err := e.gov.Approve(e.ctx, q.ID, memory.Review{By: "cli", Route: "cli"}); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.gov.Approve(e.ctx, p.ID, memory.Review{By: "U1", Route: "slack", Version: first})
	if memory.ErrorCode(err) != memory.ESTALE || errors.Is(err, memory.ErrVersionChanged) {
		e.t.Fatalf("approval after the slot changed: %v; want a plain stale refusal", err)
	}
	p = e.get(p.ID)
	if p.Status != memory.StatusPending || p.Reparked != 1 || p.ExpectedHead != q.ID {
		e.t.Fatalf("after the stale approval: %s, reparked %d, expecting %q; want pending, 1, %q", p.Status, p.Reparked, p.ExpectedHead, q.ID)
	}
	if p.ParkVersion() == first {
		e.t.Fatalf("re-parking kept the version %q", first)
	}
	return p, first, p.ParkVersion()
}

func TestDecisionIsBoundToTheParkedVersion(t *testing.T) {
	cases := []struct {
		name       string
		approve    bool
		version    func(first, now string) string
		wantCode   string
		wantStatus memory.Status
	}{
		{"current version approves", true, func(_, now string) string { return now }, "", memory.StatusActive},
		{"current version rejects", false, func(_, now string) string { return now }, "", memory.StatusRejected},
		{"version before the re-park: approval refused", true, func(first, _ string) string { return first }, memory.ESTALE, memory.StatusPending},
		{"version before the re-park: rejection refused", false, func(first, _ string) string { return first }, memory.ESTALE, memory.StatusPending},
		{"a version never parked is refused", true, func(string, string) string { return "7:01NOSUCHHEAD" }, memory.ESTALE, memory.StatusPending},
		{"no version (CLI, admin API): approves the version parked now", true, func(string, string) string { return "" }, "", memory.StatusActive},
		{"no version (CLI, admin API): rejects the version parked now", false, func(string, string) string { return "" }, "", memory.StatusRejected},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newVersionEnv(t)
			p, first, now := e.reparked()
			before := e.events(p.ID)
			rv := memory.Review{By: "U1", Route: "slack", Version: tt.version(first, now)}
			var err error
			if tt.approve {
				_, err = e.gov.Approve(e.ctx, p.ID, rv)
			} else {
				_, err = e.gov.Reject(e.ctx, p.ID, rv)
			}
			if got := memory.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("decision answered %q (%v), want %q", got, err, tt.wantCode)
			}
			after := e.get(p.ID)
			if after.Status != tt.wantStatus {
				t.Fatalf("record is %s, want %s", after.Status, tt.wantStatus)
			}
			if tt.wantCode == "" {
				if after.Review == nil || after.Review.Version != rv.Version {
					t.Fatalf("review %+v does not record the version %q decided on", after.Review, rv.Version)
				}
				return
			}
			// Refused: told why, and nothing changed, not even a re-park.
			if !errors.Is(err, memory.ErrVersionChanged) {
				t.Fatalf("refusal %v does not wrap ErrVersionChanged", err)
			}
			if msg := memory.ErrorMessage(err); msg == "" || after.Reparked != p.Reparked || after.ParkVersion() != now || after.Review != nil {
				t.Fatalf("refusal changed the record (%+v) or says nothing (%q)", after, msg)
			}
			if n := e.events(p.ID); n != before {
				t.Fatalf("refusal wrote %d audit events", n-before)
			}
		})
	}
}

// ABA: the slot's head returns to the version the write was first parked
// against (B is rolled back to A), so the write is re-parked against A
// again. The expected head alone would match the first version's; the
// version does not.
func TestVersionSurvivesTheHeadReturning(t *testing.T) {
	e := newVersionEnv(t)
	p, first, second := e.reparked()
	head := e.get(p.ExpectedHead)
	if _, err := e.gov.Rollback(e.ctx, head.ID, false, "wrong", "cli"); err != nil {
		t.Fatal(err)
	}
	_, err := e.gov.Approve(e.ctx, p.ID, memory.Review{By: "U1", Route: "slack", Version: second})
	if memory.ErrorCode(err) != memory.ESTALE || errors.Is(err, memory.ErrVersionChanged) {
		t.Fatalf("approval after the rollback: %v, want a plain stale refusal", err)
	}
	p2 := e.get(p.ID)
	firstHead := first[len("1:"):]
	if p2.ExpectedHead != firstHead || p2.Reparked != 2 {
		t.Fatalf("re-parked against %q (%d times), want against the first head %q, twice", p2.ExpectedHead, p2.Reparked, firstHead)
	}
	if _, err := e.gov.Approve(e.ctx, p.ID, memory.Review{By: "U1", Route: "slack", Version: first}); !errors.Is(err, memory.ErrVersionChanged) {
		t.Fatalf("the first version approved again after the head returned: %v", err)
	}
	if got := e.get(p.ID).Status; got != memory.StatusPending {
		t.Fatalf("record is %s, want pending", got)
	}
	if _, err := e.gov.Approve(e.ctx, p.ID, memory.Review{By: "U1", Route: "slack", Version: p2.ParkVersion()}); err != nil {
		t.Fatalf("approving the current version: %v", err)
	}
}

// A decided write answers a late decision with "already decided", whatever
// version it carries.
func TestDecidedWriteAnswersAlreadyDecidedWhateverTheVersion(t *testing.T) {
	e := newVersionEnv(t)
	p, first, now := e.reparked()
	if _, err := e.gov.Approve(e.ctx, p.ID, memory.Review{By: "U1", Route: "slack", Version: now}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{first, now, ""} {
		if _, err := e.gov.Reject(e.ctx, p.ID, memory.Review{By: "U1", Route: "slack", Version: v}); memory.ErrorCode(err) != memory.EDECIDED {
			t.Fatalf("late rejection with version %q: %v, want already_decided", v, err)
		}
	}
}
