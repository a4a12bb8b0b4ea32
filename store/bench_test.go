package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// BenchmarkSubmitLowRisk is the governor's apply path on a durable Badger
// store: one new fact per write, writers in parallel (group commit).
func BenchmarkSubmitLowRisk(b *testing.B) {
	st, err := store.Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
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

// BenchmarkBareBadgerWrite is the baseline: one durable Badger transaction
// writing one JSON record, writers in parallel.
func BenchmarkBareBadgerWrite(b *testing.B) {
	st, err := store.Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			err := st.Put(context.Background(), "bench", fmt.Sprint(i), []byte(`{"layer":"checkpoint","subjectId":"task","summary":"step done"}`))
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}
