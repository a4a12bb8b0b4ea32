package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
)

// BenchmarkSubmitLowRisk is the governor's apply path, one new fact per
// write, 32 writers in parallel: on durable Badger (the baseline, same
// run) and on PostgreSQL with the writers spread over 1 and 2 instances
// sharing one database. Compare ns/op as ratios to the baseline.
func BenchmarkSubmitLowRisk(b *testing.B) {
	b.Run("badger", func(b *testing.B) {
		st := badgertest.New(b)
		benchSubmit(b, []*memory.Governor{memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.ParkPolicies)})})
	})
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("postgres/instances=%d", n), func(b *testing.B) {
			url := pgtest.New(b)
			var govs []*memory.Governor
			for range n {
				govs = append(govs, memory.NewGovernor(memory.Options{Store: open(b, url), Classifier: memory.ClassifierFunc(testkit.ParkPolicies)}))
			}
			benchSubmit(b, govs)
		})
	}
}

func benchSubmit(b *testing.B, govs []*memory.Governor) {
	var n, writer atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		gov := govs[int(writer.Add(1))%len(govs)]
		for pb.Next() {
			i := n.Add(1)
			_, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerCheckpoint,
				SubjectID: fmt.Sprintf("task-%d", i%64), FactType: fmt.Sprintf("step.%d", i), Summary: "step done"})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}
