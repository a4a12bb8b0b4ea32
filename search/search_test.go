package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// TestListFiltersOnTheIndex checks that List finds exactly what testing
// every active record would, whether the index holds the filter's fields,
// holds none (entries written before it did), or cannot (long summaries),
// with parts kept in memory and without.
func TestListFiltersOnTheIndex(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	ctx := context.Background()
	layers := []memory.Layer{memory.LayerKnowledge, memory.LayerPreference, memory.LayerState}
	words := []string{"cedar", "ginger", "Maple", "TEA"}
	var all []*memory.Record
	for i := range 60 {
		summary := fmt.Sprintf("note %d about %s and %s", i, words[i%4], words[(i/4)%4])
		if i%13 == 0 {
			summary += strings.Repeat(" padding", 400) // too long for the index
		}
		res, err := gov.Submit(ctx, memory.Candidate{Layer: layers[i%3], SubjectID: fmt.Sprintf("s%d", i%2),
			FactType: fmt.Sprintf("f%d", i), Summary: summary, Scope: memory.Scope{UserID: fmt.Sprintf("u%d", i%3)}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Record)
	}
	// Some entries as an older store wrote them: no fields.
	err := st.DB().Update(func(txn *badger.Txn) error {
		for _, r := range all[:20] {
			if err := txn.Set([]byte("a/"+r.SubjectID+"\x00"+r.ID), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	filters := []memory.ListFilter{
		{}, {SubjectID: "s1"}, {Query: "cedar"}, {Query: "tea MAPLE"}, {SubjectID: "s0", Query: "ginger"},
		{Layer: memory.LayerState}, {Scope: memory.Scope{UserID: "u2"}}, {SubjectID: "s1", Layer: memory.LayerKnowledge, Query: "note"},
		{Query: "padding"}, {Query: "zebra"}, {Query: "note", Limit: 5}, {SubjectID: "s1", Scope: memory.Scope{UserID: "u1"}, Query: "maple"},
	}
	for _, budget := range []int64{0, -1} {
		x := New(st, Options{Budget: budget})
		viaIndex := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy), Active: x})
		for _, f := range filters {
			t.Run(fmt.Sprintf("budget %d %+v", budget, f), func(t *testing.T) {
				got, err := list(ctx, x, f)
				if err != nil {
					t.Fatal(err)
				}
				// The governor's List reads through the index
				// (memory.Options.Active) and answers as its scan does,
				// in the same order.
				scanned, err1 := gov.List(ctx, f)
				indexed, err2 := viaIndex.List(ctx, f)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if f.Limit == 0 && !slices.EqualFunc(scanned, indexed, func(a, b *memory.Record) bool { return a.ID == b.ID }) {
					t.Fatalf("the governor's List through the index differs from its scan: %d vs %d records", len(indexed), len(scanned))
				}
				want, ids := matchingIDs(all, f), sortedIDs(got)
				if f.Limit > 0 {
					if len(ids) != f.Limit {
						t.Fatalf("%d records with limit %d", len(ids), f.Limit)
					}
					return
				}
				if !slices.Equal(ids, want) {
					t.Fatalf("List = %v\nwant   %v", ids, want)
				}
			})
		}
		x.Close()
	}
}

// TestListRefusesAnUnknownLayer: the native query's layer is checked.
func TestListRefusesAnUnknownLayer(t *testing.T) {
	if _, err := FromList(memory.ListFilter{Layer: "nonsense"}); memory.ErrorCode(err) != memory.EINVALID {
		t.Fatalf("got %v, want EINVALID", err)
	}
}

// fakeSemantic scores by a table of (query, id) → cosine, or fails, or
// blocks until its context ends.
type fakeSemantic struct {
	cos   map[string]float64 // summary → cosine to every query
	byID  map[string]string  // record id → summary, filled by the test
	err   error
	block bool
	calls atomic.Int64
}

func (f *fakeSemantic) Scores(ctx context.Context, query string, ids []string) (map[string]float64, error) {
	f.calls.Add(1)
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]float64{}
	for _, id := range ids {
		if c, ok := f.cos[f.byID[id]]; ok {
			out[id] = c
		}
	}
	return out, nil
}

// TestHybridRanking: with a Semantic, a memory sharing no word with the
// query is found by meaning, relevance is 0.3·lexical + 0.7·max(0, cos)
// for records with a vector and lexical alone for the others, threshold
// and topK apply to it; a failing or slow Semantic leaves the lexical
// ranking.
func TestHybridRanking(t *testing.T) {
	ctx := context.Background()
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	texts := []string{
		"I prefer dark mode in every editor",   // the meaning the query asks for, lexically under 0.1
		"alice likes editor themes with color", // shares words, some meaning
		"the train leaves at nine",             // unrelated, negative cosine
		"no vector for this editor theme note", // shares words, no vector
	}
	sem := &fakeSemantic{cos: map[string]float64{texts[0]: 0.9, texts[1]: 0.4, texts[2]: -0.5}, byID: map[string]string{}}
	for _, s := range texts {
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPreference, Scope: memory.Scope{UserID: "alice"}, Summary: s})
		if err != nil {
			t.Fatal(err)
		}
		sem.byID[res.Record.ID] = s
	}
	query := "what editor theme does alice like?"
	f := scopeFilter(memory.Scope{UserID: "alice"})
	lexical := New(st, Options{})
	defer lexical.Close()
	lex := map[string]float64{}
	hits, err := lexical.Search(ctx, Query{Text: query, Filter: f, TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		lex[h.Record.Summary] = h.Score
	}
	if lex[texts[0]] >= 0.1 {
		t.Fatalf("lexical relevance of %q is %v: the test needs it under the threshold", texts[0], lex[texts[0]])
	}
	want := map[string]float64{}
	for _, s := range texts {
		want[s] = lex[s]
		if c, ok := sem.cos[s]; ok {
			want[s] = 0.3*lex[s] + 0.7*max(0, c)
		}
	}
	for _, budget := range []int64{0, -1} {
		x := New(st, Options{Budget: budget, Semantic: sem})
		for _, tc := range []struct {
			topK      int
			threshold float64
		}{{10, 0}, {10, 0.1}, {1, 0.1}, {10, 0.5}} {
			hits, err := x.Search(ctx, Query{Text: query, Filter: f, TopK: tc.topK, Threshold: tc.threshold})
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, s := range texts {
				if want[s] >= tc.threshold {
					order = append(order, s)
				}
			}
			slices.SortStableFunc(order, func(a, b string) int {
				switch {
				case want[a] > want[b]:
					return -1
				case want[a] < want[b]:
					return 1
				}
				return 0
			})
			order = order[:min(len(order), tc.topK)]
			var got []string
			for i, h := range hits {
				got = append(got, h.Record.Summary)
				if d := h.Score - want[h.Record.Summary]; d > 1e-12 || d < -1e-12 {
					t.Errorf("budget %d: hit %d %q scores %v, want %v", budget, i, h.Record.Summary, h.Score, want[h.Record.Summary])
				}
			}
			if !slices.Equal(got, order) {
				t.Errorf("budget %d, top %d, threshold %v: got %q\nwant %q", budget, tc.topK, tc.threshold, got, order)
			}
		}
		x.Close()
	}
	if hits, err := New(st, Options{Budget: -1, Semantic: sem}).Search(ctx, Query{Text: query, Filter: f, TopK: 1, Threshold: 0.1}); err != nil ||
		len(hits) != 1 || hits[0].Record.Summary != texts[0] {
		t.Fatalf("the example of issue 15 is not found first with a Semantic: %v %v", hits, err)
	}

	// A Semantic that fails or does not answer in time: lexical ranking.
	for _, bad := range []*fakeSemantic{{err: errors.New("embedder down")}, {block: true}} {
		x := New(st, Options{Budget: -1, Semantic: bad, SemanticTimeout: 20 * time.Millisecond})
		hits, err := x.Search(ctx, Query{Text: query, Filter: f, TopK: 10, Threshold: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		var got, wantLex []string
		for _, h := range hits {
			got = append(got, fmt.Sprintf("%s=%v", h.Record.Summary, h.Score))
		}
		for _, h := range lexicalHits(t, lexical, query, f, 0.1) {
			wantLex = append(wantLex, fmt.Sprintf("%s=%v", h.Record.Summary, h.Score))
		}
		if !slices.Equal(got, wantLex) || bad.calls.Load() != 1 {
			t.Fatalf("with a Semantic that fails (%v, blocks %v), %d calls: %q, want the lexical %q", bad.err, bad.block, bad.calls.Load(), got, wantLex)
		}
	}
}

func lexicalHits(t *testing.T, x *Index, query string, f *Filter, threshold float64) []Hit {
	t.Helper()
	hits, err := x.Search(context.Background(), Query{Text: query, Filter: f, TopK: 10, Threshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}
