package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/secrets"
	"github.com/memgate/memgate/store"
)

// speedupPair is one policy compiled twice: as the sidecar runs it, and
// as a plain OPA host would (plainPolicy).
type speedupPair struct {
	name  string
	fast  *Compiled
	plain *plainPolicy
}

// differentialPolicies are the default policy and two operator-style
// policies: one that reads input as a whole (testdata/whole-input), one
// whose references are built from data (testdata/dynamic-refs).
var differentialPolicies = sync.OnceValues(func() ([]speedupPair, error) {
	sets := []struct {
		name  string
		files func() (FileSet, error)
	}{
		{"default", func() (FileSet, error) { return DefaultFiles(), nil }},
		{"whole-input", func() (FileSet, error) { return ReadDir("testdata/whole-input") }},
		{"dynamic-refs", func() (FileSet, error) { return ReadDir("testdata/dynamic-refs") }},
	}
	var pairs []speedupPair
	for _, s := range sets {
		files, err := s.files()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		fast, err := compile(context.Background(), files, compileConfig{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		plain, err := compilePlain(context.Background(), files)
		if err != nil {
			return nil, fmt.Errorf("%s, plain: %w", s.name, err)
		}
		pairs = append(pairs, speedupPair{name: s.name, fast: fast, plain: plain})
	}
	return pairs, nil
})

func speedupPairs(t testing.TB) []speedupPair {
	t.Helper()
	pairs, err := differentialPolicies()
	if err != nil {
		t.Fatal(err)
	}
	return pairs
}

// callOutcome is what a call decides, in full: the decision or placement,
// or the kind of error (an error's text may differ between the paths).
func callOutcome(ctx context.Context, p evaluator, call benchCall) any {
	type failed struct{ Reason string }
	type both struct {
		P memory.Placement
		D memory.Decision
	}
	in := call.in
	if call.write {
		pl, d, err := p.PlaceAndClassify(ctx, in)
		if err != nil {
			return failed{ErrorReason(err)}
		}
		return both{pl, d}
	}
	if call.place {
		pl, err := p.Place(ctx, in)
		if err != nil {
			return failed{ErrorReason(err)}
		}
		return pl
	}
	d, err := p.Classify(ctx, in)
	if err != nil {
		return failed{ErrorReason(err)}
	}
	return d
}

// checkSame evaluates call with and without every speed-up under each
// policy and reports any difference; it returns how many outcomes were
// not errors.
func checkSame(t testing.TB, pairs []speedupPair, label string, call benchCall) int {
	t.Helper()
	ctx := context.Background()
	decided := 0
	for _, pair := range pairs {
		got := callOutcome(ctx, pair.fast, call)
		want := callOutcome(ctx, pair.plain, call)
		if !reflect.DeepEqual(got, want) {
			in, _ := json.Marshal(call.in)
			t.Errorf("%s, %s (place %v, write %v): with speed-ups %+v\nwithout %+v\ninput %s", pair.name, label, call.place, call.write, got, want, in)
			continue
		}
		if _, isDecision := got.(memory.Decision); isDecision || call.place || call.write {
			decided++
		}
	}
	return decided
}

// recordingGovernor is the governor the sidecar runs, on a Badger store
// opened with opts and the secret scanner, with policy c behind a
// recorder of its evaluations.
func recordingGovernor(t testing.TB, opts store.Options, c evaluator) (*memory.Governor, *evalRecorder) {
	return recordingGovernorAs(t, opts, c, func(r *evalRecorder) memory.Classifier { return r })
}

// placeThenDecide hides the recorder's one query: the governor places and
// then decides, two queries a write.
type placeThenDecide struct{ r *evalRecorder }

func (p placeThenDecide) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	return p.r.Classify(ctx, in)
}

func (p placeThenDecide) Place(ctx context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	return p.r.Place(ctx, in)
}

// recordingGovernorAs is recordingGovernor with the recorder shown to the
// governor as as makes it.
func recordingGovernorAs(t testing.TB, opts store.Options, c evaluator, as func(*evalRecorder) memory.Classifier) (*memory.Governor, *evalRecorder) {
	t.Helper()
	st, err := store.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sc, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	rec := &evalRecorder{evaluator: c}
	return memory.NewGovernor(memory.Options{Store: st, Classifier: as(rec), Secrets: sc}), rec
}

// corpusCalls are the evaluations the governor makes for every stride-th
// labelled example written as free text, recorded from the sidecar's
// default policy on a Badger store: its one query per write, and the
// placement and decision a governor asking them apart makes.
func corpusCalls(t testing.TB, stride int) []benchCall {
	t.Helper()
	ctx := context.Background()
	var calls []benchCall
	for _, as := range []func(*evalRecorder) memory.Classifier{
		func(r *evalRecorder) memory.Classifier { return r },
		func(r *evalRecorder) memory.Classifier { return placeThenDecide{r} },
	} {
		g, rec := recordingGovernorAs(t, store.Options{Dir: t.TempDir(), NoSync: true}, compileDefault(t), as)
		for i, e := range corpusExamples(t, allCorpusParts...) {
			if i%stride != 0 {
				continue
			}
			_, err := g.Submit(ctx, memory.Candidate{Summary: e.Text, Layer: e.Layer, CandidateSource: e.Source,
				Scope: memory.Scope{UserID: "u-" + e.ID}, Actor: memory.Actor{AgentID: "corpus", Dialect: "native"}})
			if err != nil {
				t.Fatalf("%s: %v", e.ID, err)
			}
		}
		calls = append(calls, rec.calls...)
	}
	return calls
}

// TestSpeedupsKeepCorpusDecisions evaluates every call the governor makes
// for the labelled corpus, under the default policy and the two operator
// policies, with and without every speed-up: the outcomes must be
// identical.
func TestSpeedupsKeepCorpusDecisions(t *testing.T) {
	pairs := speedupPairs(t)
	calls := corpusCalls(t, raceStride)
	decided := 0
	for i, call := range calls {
		decided += checkSame(t, pairs, fmt.Sprintf("corpus call %d %q", i, call.in.Candidate.Summary), call)
	}
	t.Logf("%d corpus calls (one example in %d), %d outcomes decided alike", len(calls), raceStride, decided)
	if len(calls) < 2400/raceStride || decided < len(calls) {
		t.Fatalf("only %d calls, %d decided: the corpus no longer exercises the policies", len(calls), decided)
	}
}

// TestSpeedupsKeepMutatedDecisions is the differential test over fuzzed
// inputs: corpus texts mutated by a fixed-seed generator, in inputs whose
// other fields vary, each placed and decided by every policy with and
// without the speed-ups.
func TestSpeedupsKeepMutatedDecisions(t *testing.T) {
	pairs := speedupPairs(t)
	texts, words := corpusTexts(t), mutationWords(t)
	rng := rand.New(rand.NewPCG(15, 2026))
	n := 1200 / raceStride
	if v, err := strconv.Atoi(os.Getenv("MEMGATE_DIFF_MUTATIONS")); err == nil {
		n = v // a longer search: MEMGATE_DIFF_MUTATIONS=20000
	}
	for i := range n {
		text := mutateText(rng, texts[rng.IntN(len(texts))], words, texts)
		excerpt := []string{"", texts[rng.IntN(len(texts))], mutateText(rng, "", words, texts)}[rng.IntN(3)]
		in := fuzzInput(text, excerpt, fuzzValues[rng.IntN(len(fuzzValues))], rng.Uint64(), texts)
		for _, place := range []bool{true, false} {
			checkSame(t, pairs, fmt.Sprintf("mutation %d %q", i, text), benchCall{place: place, in: in})
		}
		unplaced := *in
		unplaced.Unplaced = true
		checkSame(t, pairs, fmt.Sprintf("mutation %d %q, one query", i, text), benchCall{write: true, in: &unplaced})
		if t.Failed() {
			t.FailNow() // one input's report is enough to go on
		}
	}
}

// FuzzSpeedupsKeepDecisions is the same check as a Go fuzz target, seeded
// from the corpus: `go test` runs the seeds, and
//
//	go test -run '^$' -fuzz FuzzSpeedupsKeepDecisions -fuzztime 10m ./policy/
//
// searches further.
func FuzzSpeedupsKeepDecisions(f *testing.F) {
	texts := corpusTexts(f)
	for i, text := range texts {
		if i%(30*raceStride) == 0 {
			f.Add(text, "", fuzzValues[i%len(fuzzValues)], uint64(i)*0x9e3779b97f4a7c15)
		}
	}
	pairs := speedupPairs(f)
	f.Fuzz(func(t *testing.T, text, excerpt, value string, knobs uint64) {
		in := fuzzInput(text, excerpt, value, knobs, texts)
		for _, place := range []bool{true, false} {
			checkSame(t, pairs, fmt.Sprintf("%q", text), benchCall{place: place, in: in})
		}
	})
}
