package policy_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
)

// twoQueries is the default policy without its write document's query: a
// Placer and a Classifier only, as the governor used it before one query
// did both.
type twoQueries struct{ c *policy.Classifier }

func (q twoQueries) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	return q.c.Classify(ctx, in)
}

func (q twoQueries) Place(ctx context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	return q.c.Place(ctx, in)
}

// countedQueries is the default policy with its one query, counting what
// the governor asks.
type countedQueries struct {
	c                    *policy.Classifier
	place, classify, one atomic.Int64
}

func (q *countedQueries) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	q.classify.Add(1)
	return q.c.Classify(ctx, in)
}

func (q *countedQueries) Place(ctx context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	q.place.Add(1)
	return q.c.Place(ctx, in)
}

func (q *countedQueries) PlaceAndClassify(ctx context.Context, in *memory.PolicyInput) (memory.Placement, memory.Decision, error) {
	q.one.Add(1)
	return q.c.PlaceAndClassify(ctx, in)
}

// TestOneQueryDecidesAsTwo holds the write document to its contract
// (memory.WritePolicy, DESIGN §7): every write of the labelled corpus, and
// of a sample of each real source, gets the same record and decision from
// the governor with one query per write as from the governor asking
// placement and decision apart. As free text, declared at each layer, in
// a named slot that already holds another text (policy sees it as
// current), and as an edit by id. Most writes must be decided by the one
// query alone, or the test would hold nothing.
func TestOneQueryDecidesAsTwo(t *testing.T) {
	ctx := context.Background()
	// The governors the corpus tests run, each its own default policy: one
	// asked in one query, counted, one asked placement and decision apart.
	// A decision, not its latency, is compared: no evaluation may time out
	// on a loaded machine under the race detector.
	one := &countedQueries{}
	gOne := corpusGovernor(t, func(o *memory.Options) {
		one.c, o.Classifier, o.PolicyTimeout = o.Classifier.(*policy.Classifier), one, time.Minute
	})
	gTwo := corpusGovernor(t, func(o *memory.Options) {
		o.Classifier, o.PolicyTimeout = twoQueries{o.Classifier.(*policy.Classifier)}, time.Minute
	})

	stride := 1
	if raceEnabled {
		stride = 8 // OPA under the race detector is about ten times slower
	}
	var examples []policy.Example
	for _, part := range []string{"dev", "dev2", "holdout", "holdout2"} {
		for i, e := range readCorpus(t, part) {
			if i%stride == 0 {
				examples = append(examples, e)
			}
		}
	}
	real, err := policy.ReadRealCorpus("corpus/real")
	if err != nil {
		t.Fatal(err)
	}
	perSource := map[string]int{}
	for _, e := range real {
		if perSource[e.Set] < 60/stride {
			perSource[e.Set]++
			examples = append(examples, e)
		}
	}

	// same compares what the two governors made of one write.
	writes, mismatches := 0, 0
	same := func(what string, a, b *memory.SubmitResult, errA, errB error) {
		t.Helper()
		writes++
		if (errA == nil) != (errB == nil) {
			mismatches++
			t.Errorf("%s: errors %v / %v", what, errA, errB)
			return
		}
		if errA != nil {
			return
		}
		ra, rb := a.Record, b.Record
		got := []any{a.Outcome, ra.Layer, ra.DeclaredLayer, ra.InferredLayer, ra.FactType, ra.SubjectID, ra.Status, ra.RiskLevel,
			ra.Categories, ra.Affects, ra.Summary, string(ra.Value), decisionOf(ra)}
		want := []any{b.Outcome, rb.Layer, rb.DeclaredLayer, rb.InferredLayer, rb.FactType, rb.SubjectID, rb.Status, rb.RiskLevel,
			rb.Categories, rb.Affects, rb.Summary, string(rb.Value), decisionOf(rb)}
		if !reflect.DeepEqual(got, want) {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("%s: one query gave\n  %v\nplacement and decision apart\n  %v", what, got, want)
			}
		}
	}
	submit := func(c memory.Candidate) (a, b *memory.SubmitResult, errA, errB error) {
		a, errA = gOne.Submit(ctx, c)
		b, errB = gTwo.Submit(ctx, c)
		return
	}
	actor := memory.Actor{AgentID: "corpus", Dialect: "native"}
	layers := []memory.Layer{"", memory.LayerPreference, memory.LayerKnowledge, memory.LayerState, memory.LayerPolicy}
	for i, e := range examples {
		layer := layers[i%len(layers)]
		// Free text, in a scope of its own.
		a, b, errA, errB := submit(memory.Candidate{Summary: e.Text, Layer: layer, CandidateSource: e.Source,
			Scope: memory.Scope{UserID: "u-" + e.ID}, Actor: actor})
		same(e.ID+" free text", a, b, errA, errB)
		// In a named slot holding the previous example's text.
		prev := examples[(i+len(examples)-1)%len(examples)]
		slot := memory.Candidate{SubjectID: "s-" + e.ID, FactType: "note", Layer: layer, Actor: actor}
		first, second := slot, slot
		first.Summary, second.Summary, second.CandidateSource = prev.Text, e.Text, e.Source
		a, b, errA, errB = submit(first)
		same(e.ID+" slot, first", a, b, errA, errB)
		a, b, errA, errB = submit(second)
		same(e.ID+" slot, over another", a, b, errA, errB)
		// An edit by id of an applied memory, each governor its own.
		if a != nil && b != nil && a.Outcome == memory.OutcomeApplied && b.Outcome == memory.OutcomeApplied {
			edit := memory.Candidate{Summary: prev.Text, Actor: actor}
			edit.SlotID = a.Record.SlotID
			ra, errA := gOne.Submit(ctx, edit)
			edit.SlotID = b.Record.SlotID
			rb, errB := gTwo.Submit(ctx, edit)
			same(e.ID+" edit by id", ra, rb, errA, errB)
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d of %d writes decided otherwise with one query", mismatches, writes)
	}
	asked := one.one.Load()
	alone := asked - one.classify.Load() // a write its one query decided asks Classify nothing
	t.Logf("%d writes (%d texts): the one query asked %d times, deciding alone %d (%.1f%%); Place asked %d times, Classify %d",
		writes, len(examples), asked, alone, 100*float64(alone)/float64(writes), one.place.Load(), one.classify.Load())
	if float64(alone) < 0.5*float64(writes) {
		t.Fatalf("the one query decided only %d of %d writes alone", alone, writes)
	}
}

// decisionOf is a record's decision without what differs between two
// stores (the revision is the same policy's).
func decisionOf(r *memory.Record) string {
	if r.Decision == nil {
		return ""
	}
	return fmt.Sprintf("%+v", *r.Decision)
}

// TestWriteQueryOnlyWhereRulesReadTheJudgedLayer: a policy whose rule
// reads the candidate's layer from the input directly, rather than the
// judged layer, is asked placement and decision apart, since in the one
// query that field is the write's before placement.
func TestWriteQueryOnlyWhereRulesReadTheJudgedLayer(t *testing.T) {
	ctx := context.Background()
	direct := policy.DefaultFiles()
	direct["custom.rego"] = "package memgate\n\nfired contains \"policy_layer_custom\" if input.candidate.layer == \"policy\"\n"
	for _, c := range []struct {
		name  string
		files policy.FileSet
		one   bool
	}{
		{"default", policy.DefaultFiles(), true},
		{"a rule reads input.candidate.layer", direct, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := policy.CompileUntested(ctx, c.files)
			if err != nil {
				t.Fatal(err)
			}
			in := &memory.PolicyInput{Op: memory.OpWrite, Candidate: &memory.Record{ID: "r1", SlotID: "r1", Op: memory.OpWrite,
				SubjectID: "u", Summary: "The user likes green tea."}, Pending: []*memory.Record{}, Unplaced: true}
			_, _, err = p.PlaceAndClassify(ctx, in)
			if one := !errors.Is(err, memory.ErrNoWriteQuery); one != c.one || c.one && err != nil {
				t.Fatalf("one query: %v (err %v), want %v", one, err, c.one)
			}
		})
	}
}
