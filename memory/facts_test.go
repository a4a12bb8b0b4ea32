package memory

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// matcherFunc adapts a function to FactMatcher: the tests script what
// the matcher finds.
type matcherFunc func(ctx context.Context, rec *Record) (*FactMatch, error)

func (f matcherFunc) MatchFact(ctx context.Context, rec *Record) (*FactMatch, error) {
	return f(ctx, rec)
}

// TestFreeTextMatching holds the governor to what a match means, with a
// scripted matcher on the in-memory store: only a repeat of the slot's
// active version skips policy, an update is decided by policy in the
// matched slot, a possible conflict keeps a slot of its own and names
// the memory, and a failing matcher changes nothing.
func TestFreeTextMatching(t *testing.T) {
	ctx := context.Background()
	var policyCalls atomic.Int32
	apply := ClassifierFunc(func(_ context.Context, in *PolicyInput) (Decision, error) {
		if in.Candidate.SlotID != "" { // a decision; placing free text asks with no slot yet
			policyCalls.Add(1)
		}
		return Decision{Risk: RiskLow, Action: ActionApply}, nil
	})
	type step struct {
		name    string
		cand    Candidate
		match   func(first, edited *Record) (*FactMatch, error) // nil: the matcher must not be asked
		want    Outcome
		inFirst bool      // lands in the first memory's slot
		kind    MatchKind // recorded on the record ("": none)
		policy  bool      // policy was asked
	}
	text := "Alice prefers window seats on flights."
	for _, s := range []step{
		{name: "a failing matcher keeps the write apart", cand: Candidate{Summary: "Alice likes tea."},
			match: func(_, _ *Record) (*FactMatch, error) { return nil, errors.New("index down") }, want: OutcomeApplied, policy: true},
		{name: "a repeat asks no policy", cand: Candidate{Summary: "alice prefers window seats on flights"},
			match: func(first, _ *Record) (*FactMatch, error) {
				return &FactMatch{Kind: MatchRepeat, Record: first, Reason: "the same text"}, nil
			}, want: OutcomeUnchanged, inFirst: true},
		{name: "a repeat of a version since replaced is judged as an update", cand: Candidate{Summary: "alice prefers window seats on flights"},
			match: func(first, edited *Record) (*FactMatch, error) {
				return &FactMatch{Kind: MatchRepeat, Record: first}, nil
			}, want: OutcomeApplied, inFirst: true, kind: MatchRepeat, policy: true},
		{name: "an update is decided in the matched slot", cand: Candidate{Summary: "Alice now prefers aisle seats on flights."},
			match: func(first, _ *Record) (*FactMatch, error) { return &FactMatch{Kind: MatchUpdate, Record: first}, nil },
			want:  OutcomeApplied, inFirst: true, kind: MatchUpdate, policy: true},
		{name: "a possible conflict is named and kept apart", cand: Candidate{Summary: "Alice prefers window seats on trains."},
			match: func(first, _ *Record) (*FactMatch, error) { return &FactMatch{Kind: MatchPossible, Record: first}, nil },
			want:  OutcomeApplied, kind: MatchPossible, policy: true},
		{name: "a match in another subject is ignored", cand: Candidate{Summary: "Bob prefers aisle seats.", Scope: Scope{UserID: "bob"}},
			match: func(first, _ *Record) (*FactMatch, error) { return &FactMatch{Kind: MatchUpdate, Record: first}, nil },
			want:  OutcomeApplied, policy: true},
		{name: "a writer that keeps its memories apart is not matched", cand: Candidate{Summary: text, KeepApart: true},
			want: OutcomeApplied, policy: true},
		{name: "a write placed in a slot is not matched", cand: Candidate{Summary: "seat: aisle", FactType: "seat"},
			want: OutcomeApplied, policy: true},
	} {
		t.Run(s.name, func(t *testing.T) {
			var first, edited *Record
			called := false
			g := NewGovernor(Options{Store: newMemStore(), Classifier: apply, Facts: matcherFunc(func(_ context.Context, rec *Record) (*FactMatch, error) {
				called = true
				if first == nil || s.match == nil {
					return nil, nil
				}
				return s.match(first, edited)
			})})
			res, err := g.Submit(ctx, Candidate{Summary: text, Scope: Scope{UserID: "alice"}})
			if err != nil {
				t.Fatal(err)
			}
			first = res.Record
			if s.name == "a repeat of a version since replaced is judged as an update" {
				// An edit by id, which takes no fact lock, replaces the
				// version the matcher will name.
				r, err := g.Submit(ctx, Candidate{SlotID: first.SlotID, Summary: "Alice prefers front-row seats on flights."})
				if err != nil {
					t.Fatal(err)
				}
				edited = r.Record
			}
			called = false
			c := s.cand
			if c.Scope == (Scope{}) {
				c.Scope = Scope{UserID: "alice"}
			}
			before := policyCalls.Load()
			got, err := g.Submit(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if called != (s.match != nil) {
				t.Errorf("matcher asked: %v", called)
			}
			if got.Outcome != s.want {
				t.Fatalf("outcome %s, want %s", got.Outcome, s.want)
			}
			if (got.Record.SlotID == first.SlotID) != s.inFirst {
				t.Errorf("in the first memory's slot: %v, want %v", got.Record.SlotID == first.SlotID, s.inFirst)
			}
			if s.want == OutcomeUnchanged && got.Record.ID != first.ID {
				t.Errorf("a repeat answers with the memory it repeats, got %s", got.Record.ID)
			}
			if s.want == OutcomeApplied && s.inFirst {
				want := first.ID
				if edited != nil {
					want = edited.ID
				}
				if got.Replaced == nil || got.Replaced.ID != want {
					t.Errorf("replaced %v, want %s", got.Replaced, want)
				}
			}
			if m := got.Record.FactMatch; s.want != OutcomeUnchanged && (m == nil) != (s.kind == "") ||
				m != nil && s.kind != "" && (m.Kind != s.kind || m.RecordID != first.ID) {
				t.Errorf("fact match %+v, want kind %q naming %s", m, s.kind, first.ID)
			}
			if (policyCalls.Load() > before) != s.policy {
				t.Errorf("policy asked: %v, want %v", policyCalls.Load() > before, s.policy)
			}
		})
	}
}

// TestRelatedHint: a writer's own comparison (Candidate.Related) is taken
// as the matcher's answer only for an active memory of the write's
// subject, scope and tenant; otherwise the write keeps its own slot.
func TestRelatedHint(t *testing.T) {
	ctx := context.Background()
	apply := ClassifierFunc(func(context.Context, *PolicyInput) (Decision, error) {
		return Decision{Risk: RiskLow, Action: ActionApply}, nil
	})
	for _, c := range []struct {
		name    string
		subject string
		kind    MatchKind
		slot    func(first *Record) string
		deleted bool
		want    Outcome
		inFirst bool
	}{
		{name: "a repeat changes nothing", subject: "dave", kind: MatchRepeat, want: OutcomeUnchanged, inFirst: true},
		{name: "an update goes to the memory's slot", subject: "dave", kind: MatchUpdate, want: OutcomeApplied, inFirst: true},
		{name: "a possible conflict keeps its own slot", subject: "dave", kind: MatchPossible, want: OutcomeApplied},
		{name: "another subject's memory is not matched", subject: "erin", kind: MatchUpdate, want: OutcomeApplied},
		{name: "a slot that does not exist is ignored", subject: "dave", kind: MatchUpdate, want: OutcomeApplied,
			slot: func(*Record) string { return "slot_nowhere" }},
		{name: "a deleted memory is not matched", subject: "dave", kind: MatchUpdate, deleted: true, want: OutcomeApplied},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewGovernor(Options{Store: newMemStore(), Classifier: apply})
			first, err := g.Submit(ctx, Candidate{SubjectID: "dave", FactType: "obs-1", Summary: "Dave lives in Paris"})
			if err != nil {
				t.Fatal(err)
			}
			slot := first.Record.SlotID
			if c.slot != nil {
				slot = c.slot(first.Record)
			}
			if c.deleted {
				if _, err := g.Submit(ctx, Candidate{Op: OpDelete, SlotID: slot}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := g.Submit(ctx, Candidate{SubjectID: c.subject, FactType: "obs-2", Summary: "Dave moved to Berlin",
				Related: &FactMatch{Kind: c.kind, SlotID: slot, RecordID: first.Record.ID}})
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != c.want || (got.Record.SlotID == first.Record.SlotID) != c.inFirst {
				t.Fatalf("outcome %s in the first slot %v, want %s %v", got.Outcome, got.Record.SlotID == first.Record.SlotID, c.want, c.inFirst)
			}
			if c.inFirst && c.want == OutcomeApplied && (got.Replaced == nil || got.Replaced.ID != first.Record.ID ||
				got.Record.FactMatch == nil || got.Record.FactMatch.Kind != MatchUpdate) {
				t.Fatalf("an update replaces %s and names it: %+v %+v", first.Record.ID, got.Replaced, got.Record.FactMatch)
			}
		})
	}
}
