package mem0

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// BenchmarkSearch10k is the Mem0 search (lexical BM25 over the active
// layer a filter lets through) of one user with 10,000 active memories
// (DESIGN §7: p50 ≤ 1 ms). It reports p50/p99 beside ns/op.
func BenchmarkSearch10k(b *testing.B) {
	gov, h := applyingHandler(b, store.Options{NoSync: true}) // reads do not depend on sync
	words := []string{"amber", "basil", "cedar", "daisy", "ember", "fern", "ginger", "hazel", "iris", "jade",
		"juniper", "kiwi", "lemon", "lilac", "maple", "mint", "olive", "pearl", "plum", "sage"}
	const n = 10_000
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				_, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerKnowledge,
					Scope: memory.Scope{UserID: "bench"}, Summary: fmt.Sprintf("User likes %s tea with %s, note %d", words[i%20], words[(i/20)%20], i)})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	f, err := parseFilters([]byte(`{"user_id": "bench"}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{"cedar tea", "zebra", "cedar tea after a write"} {
		b.Run(q, func(b *testing.B) {
			var lat []time.Duration
			afterWrite := strings.HasSuffix(q, " after a write")
			q = strings.TrimSuffix(q, " after a write")
			for i := 0; b.Loop(); i++ {
				if afterWrite { // the user's cached part and its term counts change before each search
					_, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerKnowledge,
						Scope: memory.Scope{UserID: "bench"}, Summary: fmt.Sprintf("User likes %s tea, later note %d", words[i%20], i)})
					if err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				out, err := h.search(context.Background(), searchParams{query: q, filter: f, topK: 10, threshold: thresholdV3})
				lat = append(lat, time.Since(start))
				if err != nil || (q == "cedar tea" && len(out) != 10) {
					b.Fatalf("%d results, %v", len(out), err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds()), "p99-ns")
		})
	}
}
