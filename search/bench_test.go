package search

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// The benchmarks time one read at a time and report p50/p99 latency beside
// ns/op. What they read is written first through a store opened without
// sync (the data is the same), reopened durable for the measured part.

var benchWords = []string{"amber", "basil", "cedar", "daisy", "ember", "fern", "ginger", "hazel", "iris", "jade",
	"juniper", "kiwi", "lemon", "lilac", "maple", "mint", "olive", "pearl", "plum", "sage"}

// latencies collects the duration of each measured operation.
type latencies []time.Duration

func (l *latencies) time(fn func()) {
	start := time.Now()
	fn()
	*l = append(*l, time.Since(start))
}

func (l latencies) at(q float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func (l latencies) report(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	b.ReportMetric(float64(l.at(0.50).Nanoseconds()), prefix+"p50-ns")
	b.ReportMetric(float64(l.at(0.99).Nanoseconds()), prefix+"p99-ns")
}

// preloaded writes n memories through a governor on a NoSync store in a
// new directory, with 8 writers, then reopens it durable (group commit, as
// the binary runs) with an index over it.
func preloaded(b *testing.B, n int, cand func(i int) memory.Candidate) (*store.Store, *memory.Governor, *Index) {
	b.Helper()
	dir := b.TempDir()
	st := badgertest.Open(b, store.Options{Dir: dir, NoSync: true})
	preload(b, memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)}), n, cand)
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	st = badgertest.NewWith(b, store.Options{Dir: dir, GroupCommit: true})
	return st, memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)}), New(st, Options{})
}

// preload submits n candidates through gov, 8 at a time.
func preload(b *testing.B, gov *memory.Governor, n int, cand func(i int) memory.Candidate) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if _, err := gov.Submit(context.Background(), cand(i)); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkList10k is the native list route's read of a subject with
// 10,000 active records (DESIGN §7: p50 ≤ 1 ms); it was store's
// BenchmarkSearch10k.
func BenchmarkList10k(b *testing.B) {
	_, _, x := preloaded(b, 10_000, func(i int) memory.Candidate {
		return memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "big", FactType: fmt.Sprintf("fact.%d", i),
			Summary: fmt.Sprintf("fact %d mentions %s and %s among other things", i, benchWords[i%20], benchWords[(i/20)%20])}
	})
	for _, tc := range []struct {
		name  string
		query string
		want  int
	}{
		{"list-all", "", 10_000},
		{"one-word", "cedar", 975},        // about one record in ten
		{"two-words", "cedar ginger", 50}, // one in two hundred
		{"no-match", "zebra", 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var lat latencies
			for b.Loop() {
				lat.time(func() {
					recs, err := list(context.Background(), x, memory.ListFilter{SubjectID: "big", Query: tc.query})
					if err != nil || len(recs) != tc.want {
						b.Fatalf("%d records, %v; want %d", len(recs), err, tc.want)
					}
				})
			}
			lat.report(b, "")
		})
	}
}

// userMemory is the i-th memory of the user "bench" of the search
// benchmarks.
func userMemory(i int) memory.Candidate {
	return memory.Candidate{Layer: memory.LayerKnowledge, Scope: memory.Scope{UserID: "bench"},
		Summary: fmt.Sprintf("User likes %s tea with %s, note %d", benchWords[i%20], benchWords[(i/20)%20], i)}
}

// BenchmarkSearch10k is the Mem0 search (BM25 over the active layer a
// filter lets through, top 10 at threshold 0.1) of one user with 10,000
// active memories (DESIGN §7: p50 ≤ 1 ms); it was proxy/mem0's.
func BenchmarkSearch10k(b *testing.B) {
	_, gov, x := preloaded(b, 10_000, userMemory)
	f := scopeFilter(memory.Scope{UserID: "bench"})
	for _, q := range []string{"cedar tea", "zebra", "cedar tea after a write"} {
		b.Run(q, func(b *testing.B) {
			var lat latencies
			text, afterWrite := q, q == "cedar tea after a write"
			if afterWrite {
				text = "cedar tea"
			}
			for i := 0; b.Loop(); i++ {
				if afterWrite { // the user's part and its term counts change before each search
					c := userMemory(i)
					c.Summary = fmt.Sprintf("User likes %s tea, later note %d", benchWords[i%20], i)
					if _, err := gov.Submit(context.Background(), c); err != nil {
						b.Fatal(err)
					}
				}
				var hits []Hit
				var err error
				lat.time(func() {
					hits, err = x.Search(context.Background(), Query{Text: text, Filter: f, TopK: 10, Threshold: 0.1})
				})
				if err != nil || (text == "cedar tea" && len(hits) != 10) {
					b.Fatalf("%d hits, %v", len(hits), err)
				}
			}
			lat.report(b, "")
		})
	}
}

// BenchmarkWriteBesideSearches times low-risk writes to a user with 10,000
// memories on a durable store, alternately alone and while a reader
// searches that user's memories continuously, one search per millisecond
// at most (a fixed read load, so that a faster search does not simply
// mean more of them): rounds of 20 writes each,
// even rounds alone, odd ones beside the searches, in the same run. Each
// write changes the user's part, so each search after it counts the
// changed chunk's terms again. It reports the p50 and p99 of each and
// their ratio.
func BenchmarkWriteBesideSearches(b *testing.B) {
	_, gov, x := preloaded(b, 10_000, userMemory)
	f := scopeFilter(memory.Scope{UserID: "bench"})
	ctx := context.Background()
	if _, err := x.Search(ctx, Query{Text: "cedar tea", Filter: f, TopK: 10, Threshold: 0.1}); err != nil { // loads the part
		b.Fatal(err)
	}
	const round = 20
	const searchEvery = time.Millisecond // a steady 1,000 searches/s at most, the same read load for both
	var alone, beside latencies
	var searches atomic.Int64
	var stop chan struct{}
	var readers sync.WaitGroup
	for i := 0; b.Loop(); i++ {
		searching := (i/round)%2 == 1
		if i%round == 0 {
			if stop != nil {
				close(stop)
				readers.Wait()
				stop = nil
			}
			if searching {
				stop = make(chan struct{})
				done := stop
				readers.Go(func() {
					tick := time.NewTicker(searchEvery)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
						}
						if _, err := x.Search(ctx, Query{Text: "cedar tea", Filter: f, TopK: 10, Threshold: 0.1}); err != nil {
							b.Error(err)
							return
						}
						searches.Add(1)
					}
				})
			}
		}
		c := userMemory(i)
		c.Summary = fmt.Sprintf("User likes %s tea, written beside searches %d", benchWords[i%20], i)
		l := &alone
		if searching {
			l = &beside
		}
		l.time(func() {
			if _, err := gov.Submit(ctx, c); err != nil {
				b.Fatal(err)
			}
		})
	}
	if stop != nil {
		close(stop)
		readers.Wait()
	}
	alone.report(b, "alone-")
	beside.report(b, "beside-")
	if len(alone) > 0 && len(beside) > 0 {
		b.ReportMetric(float64(beside.at(0.5))/float64(alone.at(0.5)), "p50-ratio")
		b.ReportMetric(float64(searches.Load())/float64(len(beside)), "searches/write")
	}
}
