package search

import (
	"context"
	"os"
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// BenchmarkSearch10kOnPostgres is BenchmarkSearch10k on the PostgreSQL
// store, which has no commit feed: each search scans the user's 10,000
// active entries in one read transaction and ranks them with the same
// code. It reports both stores in one run, Badger first (the baseline).
func BenchmarkSearch10kOnPostgres(b *testing.B) {
	_, _, badger := preloaded(b, 10_000, userMemory)
	st, err := pgstore.Open(context.Background(), pgstore.Options{URL: pgtest.New(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	preload(b, memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)}), 10_000, userMemory)
	// What autovacuum does to a table that grew: without statistics the
	// planner sorts every row for each page of a scan.
	if err := st.Analyze(context.Background()); err != nil {
		b.Fatal(err)
	}
	pg, err := Open(context.Background(), st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	f := scopeFilter(memory.Scope{UserID: "bench"})
	for _, c := range []struct {
		name string
		x    *Index
	}{{"badger", badger}, {"postgres", pg}} {
		for _, q := range []string{"cedar tea", "zebra"} {
			b.Run(c.name+"/"+q, func(b *testing.B) {
				var lat latencies
				for b.Loop() {
					var hits []Hit
					lat.time(func() {
						hits, err = c.x.Search(context.Background(), Query{Text: q, Filter: f, TopK: 10, Threshold: 0.1})
					})
					if err != nil || (q == "cedar tea" && len(hits) != 10) {
						b.Fatalf("%d hits, %v", len(hits), err)
					}
				}
				lat.report(b, "")
			})
		}
	}
}
