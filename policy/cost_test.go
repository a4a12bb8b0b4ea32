package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// The policy's cost model (issue 15): the policy may cost at most 5% of
// a low-risk durable write's p50, both measured in the same run, and a
// policy evaluation's p99 at most 250 µs on 2 cores.

// costFigures are one run's latencies.
type costFigures struct {
	writes int
	// write is a low-risk write through the governor on a durable Badger
	// store (policy included); bare a durable Badger Update of a record of
	// the same size, the floor under it.
	write, bare []time.Duration
	// eval is each policy evaluation the writes made, evaluated again;
	// perWrite the sum of one write's evaluations.
	eval, perWrite []time.Duration
}

func (f costFigures) String() string {
	w, b, e, pw := percentile(f.write, 0.5), percentile(f.bare, 0.5), percentile(f.eval, 0.5), percentile(f.perWrite, 0.5)
	return fmt.Sprintf("%d low-risk durable writes: write p50 %v (bare Badger update p50 %v); policy evaluation p50 %v, p99 %v; policy per write p50 %v = %.1f%% of the write's p50",
		f.writes, w, b, e, percentile(f.eval, 0.99), pw, 100*float64(pw)/float64(w))
}

// lowRiskTexts are the corpus texts the default policy applies at once.
func lowRiskTexts(t testing.TB) []string {
	t.Helper()
	var texts []string
	for _, e := range corpusExamples(t, "dev", "dev2") {
		if !e.HighRisk() && e.Expect == memory.ActionApply && e.Layer == "" {
			texts = append(texts, e.Text)
		}
	}
	return texts
}

// measureCost writes n low-risk texts through the governor the sidecar
// runs (default policy, secret scanner, durable Badger store), each into
// a slot of its own; after each write it evaluates that write's policy
// calls again on their own, and makes a bare durable Badger update, so
// the three are measured under the same load.
func measureCost(t testing.TB, n int) costFigures {
	t.Helper()
	ctx := context.Background()
	c := openDefault(t)
	g, rec := recordingGovernor(t, store.Options{Dir: t.TempDir()}, c)
	bare, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithSyncWrites(true).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bare.Close() })
	texts := lowRiskTexts(t)
	f := costFigures{}
	for i := range n {
		rec.calls = rec.calls[:0]
		start := time.Now()
		res, err := g.Submit(ctx, memory.Candidate{Summary: texts[i%len(texts)], Scope: memory.Scope{UserID: fmt.Sprintf("u-%d", i)},
			Actor: memory.Actor{AgentID: "bench", Dialect: "native"}})
		lat := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != memory.OutcomeApplied {
			continue // only low-risk writes the policy applied count
		}
		f.writes++
		f.write = append(f.write, lat)
		var sum time.Duration
		forgetScans(c) // the write's own scan is not there to share again
		for _, call := range rec.calls {
			start := time.Now()
			if err := call.run(ctx, c); err != nil {
				t.Fatal(err)
			}
			d := time.Since(start)
			f.eval = append(f.eval, d)
			sum += d
		}
		f.perWrite = append(f.perWrite, sum)
		value, err := json.Marshal(res.Record)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		err = bare.Update(func(txn *badger.Txn) error { return txn.Set(fmt.Appendf(nil, "bare/%d", i), value) })
		f.bare = append(f.bare, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.writes == 0 || f.writes < n/2 {
		t.Fatalf("only %d of %d writes applied", f.writes, n)
	}
	for _, d := range [][]time.Duration{f.write, f.bare, f.eval, f.perWrite} {
		slices.Sort(d)
	}
	return f
}

// BenchmarkPolicyShareOfDurableWrite reports the cost model's figures,
// each b.N low-risk writes measured as measureCost does:
//
//	go test -run '^$' -bench BenchmarkPolicyShareOfDurableWrite -benchtime 2000x ./policy/
func BenchmarkPolicyShareOfDurableWrite(b *testing.B) {
	f := measureCost(b, max(b.N, 20))
	b.ReportMetric(float64(percentile(f.write, 0.5).Nanoseconds()), "write-p50-ns")
	b.ReportMetric(float64(percentile(f.bare, 0.5).Nanoseconds()), "bare-p50-ns")
	b.ReportMetric(float64(percentile(f.eval, 0.5).Nanoseconds()), "eval-p50-ns")
	b.ReportMetric(float64(percentile(f.eval, 0.99).Nanoseconds()), "eval-p99-ns")
	b.ReportMetric(float64(percentile(f.perWrite, 0.5).Nanoseconds()), "policy-per-write-p50-ns")
	b.ReportMetric(100*float64(percentile(f.perWrite, 0.5))/float64(percentile(f.write, 0.5)), "policy-%-of-write")
	b.Log(f)
}

// floorPolicy is the least a policy that evaluates like the default one
// can cost under OPA's topdown: the default policy's data (so the input
// and its text scan are built as for the default policy) and a placement
// and a decision that each evaluate n helper rules of one expression
// (`not hK`, hK reading one text feature): n+1 rule bodies and 2n+1
// expressions each, constant results.
func floorPolicy(t testing.TB, placeRules, decideRules int) *Compiled {
	t.Helper()
	var b strings.Builder
	b.WriteString("package memgate\n\n")
	helpers := func(doc, prefix string, n int) {
		fmt.Fprintf(&b, "%s if {\n\ttrue\n", doc)
		for i := range n {
			fmt.Fprintf(&b, "\tnot %s%d\n", prefix, i)
		}
		b.WriteString("}\n\n")
		for i := range n {
			fmt.Fprintf(&b, "%s%d if input.candidate.text_features[\"%s%d\"]\n\n", prefix, i, prefix, i)
		}
	}
	helpers(`placement := {"layer": "", "factType": "", "subjectId": "", "value": null}`, "p", placeRules)
	helpers(`decision := {"risk": "low", "action": "apply", "categories": [], "affects": [], "reasons": [{"rule": "floor", "message": "floor"}]}`, "d", decideRules)
	files := FileSet{"floor.rego": b.String(), "data.json": DefaultFiles()["data.json"]}
	p, err := compile(context.Background(), files, compileConfig{})
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return p
}

// expressionsEvaluated is the mean number of expressions p evaluates for
// the placements and for the decisions of writes.
func expressionsEvaluated(t testing.TB, p *Compiled, writes [][]benchCall) (place, decide float64) {
	t.Helper()
	var n, exprs [2]int
	for _, w := range writes {
		for _, c := range w {
			q, k := &p.decision, 1
			if c.place {
				q, k = p.place, 0
			}
			input, err := inputScanned(c.in, p.features, p.scans)
			if err != nil {
				t.Fatal(err)
			}
			tr := topdown.NewBufferTracer()
			_, err = q.Eval(context.Background(), rego.EvalParsedInput(input), rego.EvalQueryTracer(tr),
				rego.EvalBaseCache(p.data))
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range *tr {
				if ev.Op == topdown.EvalOp {
					exprs[k]++
				}
			}
			n[k]++
		}
	}
	return float64(exprs[0]) / float64(max(n[0], 1)), float64(exprs[1]) / float64(max(n[1], 1))
}

// BenchmarkPolicyFloor measures what one low-risk free-text write's policy
// evaluations (a placement, then a decision, as the governor makes them)
// cost with the default policy, with a floor policy that evaluates as many
// expressions as the default policy does for those writes, and with one
// that evaluates none, all interleaved in one loop:
//
//	go test -run '^$' -bench BenchmarkPolicyFloor -benchtime 3000x ./policy/
//
// The gap between the default policy and the matched floor is what its
// rules could still save by evaluating the same logic more cheaply; the
// matched floor is OPA's topdown evaluator's own cost for that much
// evaluation, plus the input, and only fewer expressions go under it.
func BenchmarkPolicyFloor(b *testing.B) {
	calls := lowRiskCalls(b)
	def := compileDefault(b)
	placeExprs, decideExprs := expressionsEvaluated(b, def, calls)
	// A floor policy with n helpers evaluates 2n+1 expressions a query.
	placeRules, decideRules := int(placeExprs-1)/2, int(decideExprs-1)/2
	b.Logf("default policy: %.1f expressions a placement, %.1f a decision; floor: %d and %d helper rules",
		placeExprs, decideExprs, placeRules, decideRules)
	policies := []struct {
		name string
		p    *Compiled
		lat  []time.Duration
	}{
		{name: "default", p: def},
		{name: "floor-matched", p: floorPolicy(b, placeRules, decideRules)},
		{name: "floor-empty", p: floorPolicy(b, 0, 0)},
	}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		w := calls[i%len(calls)]
		for k := range policies {
			pol := &policies[(i+k)%len(policies)] // each goes first in turn
			pol.p.scans.forget()
			start := time.Now()
			for _, c := range w {
				if err := c.run(ctx, pol.p); err != nil {
					b.Fatal(err)
				}
			}
			pol.lat = append(pol.lat, time.Since(start))
		}
		i++
	}
	for k := range policies {
		slices.Sort(policies[k].lat)
	}
	base := percentile(policies[0].lat, 0.5)
	for _, pol := range policies {
		p50 := percentile(pol.lat, 0.5)
		b.ReportMetric(float64(p50.Nanoseconds()), pol.name+"-p50-ns")
		if pol.name != "default" {
			b.ReportMetric(float64(p50)/float64(base), pol.name+"/default")
		}
	}
}

// lowRiskCalls are the policy evaluations of each low-risk corpus text
// written as free text through a governor that asks placement and
// decision apart: [placement, decision] per write (the floor policies
// have no one query).
func lowRiskCalls(t testing.TB) [][]benchCall {
	return lowRiskCallsAs(t, compileDefault(t), func(r *evalRecorder) memory.Classifier { return placeThenDecide{r} })
}

// lowRiskCallsAs are the evaluations of c each low-risk corpus text
// written as free text makes through a governor shown the recorder as as
// makes it, a write's calls together.
func lowRiskCallsAs(t testing.TB, c evaluator, as func(*evalRecorder) memory.Classifier) [][]benchCall {
	t.Helper()
	ctx := context.Background()
	g, rec := recordingGovernorAs(t, store.Options{Dir: t.TempDir(), NoSync: true}, c, as)
	var writes [][]benchCall
	for i, text := range lowRiskTexts(t) {
		rec.calls = rec.calls[:0]
		res, err := g.Submit(ctx, memory.Candidate{Summary: text, Scope: memory.Scope{UserID: fmt.Sprintf("u-%d", i)},
			Actor: memory.Actor{AgentID: "bench", Dialect: "native"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == memory.OutcomeApplied {
			writes = append(writes, slices.Clone(rec.calls))
		}
	}
	if len(writes) == 0 {
		t.Fatal("no low-risk write applied")
	}
	return writes
}

// BenchmarkWriteQuery measures what policy costs a low-risk free-text
// write with the write document's one query against placement and
// decision asked apart, interleaved, on the calls the governor makes for
// the low-risk corpus texts (each write's text scan paid once):
//
//	go test -run '^$' -bench BenchmarkWriteQuery -benchtime 3000x ./policy/
func BenchmarkWriteQuery(b *testing.B) {
	ctx := context.Background()
	c := compileDefault(b)
	paths := []struct {
		name  string
		calls [][]benchCall
		lat   []time.Duration
	}{
		{name: "one-query", calls: lowRiskCallsAs(b, c, func(r *evalRecorder) memory.Classifier { return r })},
		{name: "place-then-decide", calls: lowRiskCallsAs(b, c, func(r *evalRecorder) memory.Classifier { return placeThenDecide{r} })},
	}
	i := 0
	for b.Loop() {
		for k := range paths {
			p := &paths[(i+k)%len(paths)] // each goes first in turn
			c.scans.forget()
			start := time.Now()
			for _, call := range p.calls[i%len(p.calls)] {
				if err := call.run(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			p.lat = append(p.lat, time.Since(start))
		}
		i++
	}
	for k := range paths {
		slices.Sort(paths[k].lat)
		b.ReportMetric(float64(percentile(paths[k].lat, 0.5).Nanoseconds()), paths[k].name+"-p50-ns")
	}
	b.ReportMetric(float64(percentile(paths[0].lat, 0.5))/float64(percentile(paths[1].lat, 0.5)), "one/two")
}
