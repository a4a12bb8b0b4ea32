package facts_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// vocabulary for texts that share words the way a user's memories do.
var vocabulary = strings.Fields(`alice bob project deploy window seat flight train coffee tea morning evening
	database staging production cluster region budget team manager report weekly friday monday editor dark light
	mode python golang postgres redis kafka office floor desk meeting room call email phone city berlin porto
	lisbon tokyo hiking piano guitar novel movie dinner lunch gym yoga bike car bus release branch review test`)

func sentence(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = vocabulary[r.IntN(len(vocabulary))]
	}
	return strings.Join(ws, " ") + fmt.Sprintf(" %d", r.IntN(1_000_000))
}

// BenchmarkWriteAt10kMemories: the p50 of a new free-text write for a user
// holding 10,000 active memories, with and without the fact matcher, and
// the p50 of the match itself (match-p50-µs). Badger on disk with group
// commit, as the sidecar runs; no HTTP and no policy, so the matcher's
// share is at its largest. The target is at most 10% more.
// Measured on 2 shared cores (go test -run XXX -bench WriteAt10k
// -benchtime 1000x -count 5 ./facts/, medians): without the matcher
// 558 µs, with it 528 µs, the match itself 28 µs (5%); the sync of the
// commit varies more than that from run to run. Before the index of
// facts (a BM25 search of the user's part, top 8): 606 µs, 2,624 µs and
// 1,806 µs.
func BenchmarkWriteAt10kMemories(b *testing.B) {
	for _, match := range []bool{false, true} {
		b.Run(fmt.Sprint("matcher=", match), func(b *testing.B) {
			st := badgertest.Open(b, store.Options{Dir: b.TempDir(), GroupCommit: true})
			idx := search.New(st, search.Options{})
			defer func() { idx.Close(); st.Close() }()
			o := memory.Options{Store: st, Classifier: applyAll, Active: idx}
			timed := &timedMatcher{m: &facts.Matcher{Index: idx}}
			if match {
				o.Facts = timed
			}
			g := memory.NewGovernor(o)
			ctx := context.Background()
			r := rand.New(rand.NewPCG(1, 2))
			scope := memory.Scope{UserID: "alice"}
			for range 10_000 {
				if _, err := g.Submit(ctx, memory.Candidate{Summary: sentence(r, 8), Scope: scope}); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			timed.reset()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := g.Submit(ctx, memory.Candidate{Summary: sentence(r, 8), Scope: scope}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			if match {
				b.ReportMetric(timed.p50(), "match-p50-µs")
			}
		})
	}
}

// timedMatcher times each match: the matcher's own share of a write,
// which the sync of the write's commit does not blur.
type timedMatcher struct {
	m   memory.FactMatcher
	mu  sync.Mutex
	lat []time.Duration
}

func (t *timedMatcher) MatchFact(ctx context.Context, rec *memory.Record) (*memory.FactMatch, error) {
	t0 := time.Now()
	m, err := t.m.MatchFact(ctx, rec)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lat = append(t.lat, time.Since(t0))
	return m, err
}

func (t *timedMatcher) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lat = t.lat[:0]
}

// p50 returns the median match in microseconds.
func (t *timedMatcher) p50() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	slices.Sort(t.lat)
	return float64(t.lat[len(t.lat)/2]) / float64(time.Microsecond)
}
