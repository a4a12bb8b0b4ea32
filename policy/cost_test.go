package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
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
