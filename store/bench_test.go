package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// durability modes the write benchmarks compare: Badger syncing each
// commit (SyncWrites) and commits sharing syncs (Options.GroupCommit).
var durability = []struct {
	name string
	opts store.Options
}{
	{"syncwrites", store.Options{}},
	{"groupcommit", store.Options{GroupCommit: true}},
}

// BenchmarkSubmitLowRisk is the governor's apply path on a durable Badger
// store: one new fact per write, 32 writers in parallel.
func BenchmarkSubmitLowRisk(b *testing.B) {
	for _, d := range durability {
		b.Run(d.name, func(b *testing.B) {
			st := badgertest.NewWith(b, d.opts)
			gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules)})
			writeInParallel(b, 16, func(i int64) error {
				_, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerCheckpoint,
					SubjectID: fmt.Sprintf("task-%d", i%64), FactType: fmt.Sprintf("step.%d", i), Summary: "step done"})
				return err
			})
		})
	}
}

// writeInParallel times write(i), i = 1, 2, … in turn, from parallelism
// goroutines per core, and reports writes/s; the first error fails b.
func writeInParallel(b *testing.B, parallelism int, write func(i int64) error) {
	var n atomic.Int64
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := write(n.Add(1)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkSubmitLargeRecord is the apply path of BenchmarkSubmitLowRisk
// (group commit, 32 writers) with summaries of 1, 8 and 16 KiB (the most a
// summary may hold) and a value beside the 16 KiB one: each write overrides
// its slot's active version, so the record, its event (whose recorded input
// holds the candidate and the version it replaces) and the rollback point
// are each about that large. Values under the store's value threshold live
// in Badger's tree, larger ones in its value log.
func BenchmarkSubmitLargeRecord(b *testing.B) {
	for _, size := range []struct {
		name          string
		summary, blob int
	}{{"1KiB", 1 << 10, 0}, {"8KiB", 8 << 10, 0}, {"16KiB+value", 16 << 10, 16 << 10}} {
		b.Run(size.name, func(b *testing.B) {
			st := badgertest.NewWith(b, store.Options{GroupCommit: true})
			gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules)})
			text := strings.Repeat("a fact of some length ", size.summary/22+1)[:size.summary]
			var value json.RawMessage
			if size.blob > 0 {
				value, _ = json.Marshal(map[string]string{"notes": text[:size.blob-32]})
			}
			writeInParallel(b, 16, func(i int64) error {
				_, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerKnowledge,
					SubjectID: fmt.Sprintf("doc-%d", i%64), FactType: fmt.Sprintf("part.%d", i%256),
					Summary: (fmt.Sprintf("%d ", i) + text)[:size.summary], Value: value})
				return err
			})
		})
	}
}

// BenchmarkSubmitOneSlot is 16 writers updating the same slot (a task's
// progress checkpoint) with group commit: writes to one slot take its lock
// in turn, so how many of them share a sync depends on how long each holds
// it.
func BenchmarkSubmitOneSlot(b *testing.B) {
	st := badgertest.NewWith(b, store.Options{GroupCommit: true})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules)})
	writeInParallel(b, 8, func(i int64) error { // 16 writers on 2 cores
		res, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerCheckpoint,
			SubjectID: "task", FactType: "progress", Summary: fmt.Sprintf("step %d done", i)})
		if err == nil && res.Outcome != memory.OutcomeApplied {
			err = fmt.Errorf("outcome %s, want applied", res.Outcome)
		}
		return err
	})
}

// BenchmarkBareBadgerWrite is the baseline: one durable Badger transaction
// writing one JSON record, 32 writers in parallel.
func BenchmarkBareBadgerWrite(b *testing.B) {
	for _, d := range durability {
		b.Run(d.name, func(b *testing.B) {
			st := badgertest.NewWith(b, d.opts)
			writeInParallel(b, 16, func(i int64) error {
				return st.Put(context.Background(), "bench", fmt.Sprint(i), []byte(`{"layer":"checkpoint","subjectId":"task","summary":"step done"}`))
			})
		})
	}
}

// The benchmarks below time one operation at a time on a durable store
// and report p50/p99 latency beside ns/op. What they need in the store is
// loaded first through a store opened without sync (faster; the data is
// the same), which is then reopened durable for the measured part.

// latencies collects the duration of each measured operation.
type latencies []time.Duration

func (l *latencies) time(fn func()) {
	start := time.Now()
	fn()
	*l = append(*l, time.Since(start))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	at := func(q float64) float64 { return float64(s[min(len(s)-1, int(q*float64(len(s))))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

func benchGovernor(b *testing.B, dir string, noSync bool) (*store.Store, *memory.Governor) {
	b.Helper()
	st := badgertest.Open(b, store.Options{Dir: dir, NoSync: noSync})
	return st, memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules), Outbox: true})
}

// preload writes through a governor on a NoSync store in dir, with 8
// writers, then closes it.
func preload(b *testing.B, dir string, n int, cand func(i int) memory.Candidate) []*memory.SubmitResult {
	b.Helper()
	st, gov := benchGovernor(b, dir, true)
	defer st.Close()
	out := make([]*memory.SubmitResult, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				res, err := gov.Submit(context.Background(), cand(i))
				if err != nil {
					failed.Store(err)
					return
				}
				out[i] = res
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkTransitions times the governor's transitions one at a time on a
// durable store (each includes its commit's fsync): a low-risk write that
// applies, one that parks, and the approval and rejection of parked ones.
func BenchmarkTransitions(b *testing.B) {
	ctx := context.Background()
	for _, d := range durability {
		b.Run("submit-apply/"+d.name, func(b *testing.B) {
			st := badgertest.NewWith(b, d.opts)
			gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules), Outbox: true})
			var lat latencies
			for i := 0; b.Loop(); i++ {
				lat.time(func() {
					if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerCheckpoint, SubjectID: "task",
						FactType: fmt.Sprintf("step.%d", i), Summary: "step done"}); err != nil {
						b.Fatal(err)
					}
				})
			}
			lat.report(b)
		})
	}
	b.Run("submit-park", func(b *testing.B) {
		st, gov := benchGovernor(b, b.TempDir(), false)
		defer st.Close()
		var lat latencies
		for i := 0; b.Loop(); i++ {
			lat.time(func() {
				res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project",
					FactType: fmt.Sprintf("rule.%d", i), Summary: "deploys need a human"})
				if err != nil || res.Outcome != memory.OutcomeParked {
					b.Fatal(res, err)
				}
			})
		}
		lat.report(b)
	})
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approve", false: "reject"}[approve]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			parked := preload(b, dir, b.N, func(i int) memory.Candidate {
				return memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project", FactType: fmt.Sprintf("rule.%d", i), Summary: "deploys need a human"}
			})
			st, gov := benchGovernor(b, dir, false)
			defer st.Close()
			var lat latencies
			b.ResetTimer()
			for i := range b.N {
				lat.time(func() {
					var err error
					if approve {
						_, err = gov.Approve(ctx, parked[i].Record.ID, memory.Review{By: "bench"})
					} else {
						_, err = gov.Reject(ctx, parked[i].Record.ID, memory.Review{By: "bench"})
					}
					if err != nil {
						b.Fatal(err)
					}
				})
			}
			b.StopTimer()
			lat.report(b)
		})
	}
}

// BenchmarkRollbackOne rolls back one record (the head of a slot of two
// versions, so the older one is restored), durably.
func BenchmarkRollbackOne(b *testing.B) {
	dir := b.TempDir()
	written := preload(b, dir, 2*b.N, func(i int) memory.Candidate {
		return memory.Candidate{Layer: memory.LayerCheckpoint, SubjectID: "task", FactType: fmt.Sprintf("step.%d", i/2),
			Summary: fmt.Sprintf("version %d", i)}
	})
	st, gov := benchGovernor(b, dir, false)
	defer st.Close()
	var heads []string
	for _, w := range written {
		if w.Record.Status == memory.StatusActive {
			if r, err := gov.Get(context.Background(), w.Record.SlotID); err == nil && r.ID == w.Record.ID {
				heads = append(heads, r.ID)
			}
		}
	}
	if len(heads) != b.N {
		b.Fatalf("%d heads for %d slots", len(heads), b.N)
	}
	var lat latencies
	b.ResetTimer()
	for i := range b.N {
		lat.time(func() {
			res, err := gov.Rollback(context.Background(), heads[i], false, "bench", "bench")
			if err != nil || res.Restored == nil {
				b.Fatal(res, err)
			}
		})
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkQuarantineRun quarantines a run that wrote 10,000 times: two
// versions in each of 5,000 slots (DESIGN §7: ≤ 1 s). Each iteration loads
// a fresh run first, untimed. Run it with -benchtime 3x.
func BenchmarkQuarantineRun(b *testing.B) {
	const writes = 10_000
	dir := b.TempDir()
	for i := range b.N {
		b.StopTimer()
		run := fmt.Sprintf("run-%d", i)
		preload(b, dir, writes, func(j int) memory.Candidate {
			return memory.Candidate{Layer: memory.LayerCheckpoint, SubjectID: fmt.Sprintf("task-%d-%d", i, j%100),
				FactType: fmt.Sprintf("step.%d", j/2), Summary: fmt.Sprintf("version %d", j),
				Actor: memory.Actor{AgentID: "agent", RunID: run}}
		})
		st, gov := benchGovernor(b, dir, false)
		b.StartTimer()
		res, err := gov.Quarantine(context.Background(), "run", run, "bench", "bench")
		b.StopTimer()
		if err != nil || len(res.RolledBack)+len(res.Retracted) != writes {
			b.Fatalf("quarantine: %d rolled back, %d retracted, %v", len(res.RolledBack), len(res.Retracted), err)
		}
		st.Close()
	}
	b.ReportMetric(float64(writes), "writes/run")
}
