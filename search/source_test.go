package search

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/store"
)

// feedless is a store without a commit feed (as the PostgreSQL store is):
// only View, whose read transactions scan the index of active records. It
// hides the Badger store's Follow and aligned snapshots.
type feedless struct{ st *store.Store }

func (f feedless) View(ctx context.Context, fn func(memory.ReadTx) error) error {
	return f.st.ViewSnapshot(ctx, func(sn storeapi.Snapshot) error { return fn(sn) })
}

// plainView is a store whose read transactions cannot scan the index.
type plainView struct{ st *store.Store }

func (p plainView) View(ctx context.Context, fn func(memory.ReadTx) error) error {
	return p.st.View(ctx, fn)
}

// TestSearchOverEitherKindOfStore runs the same searches and lists through
// an index that follows the Badger store's commits (parts in memory), one
// that keeps no parts, and one over a store without a feed, whose reads
// scan through View: they answer alike, records, order and scores, before
// and after further writes, supersedes and deletes.
func TestSearchOverEitherKindOfStore(t *testing.T) {
	ctx := context.Background()
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	following := New(st, Options{})
	defer following.Close()
	scanning := New(st, Options{Budget: -1})
	viaView, err := Open(ctx, feedless{st}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer viaView.Close()
	if viaView.feed != nil || viaView.budget != 0 {
		t.Fatal("an index over a store without a feed keeps parts")
	}
	for _, x := range []*Index{viaView, scanning} {
		if f, err := x.Follow(ctx, "s0", recorderKey{}, newRecorder); f != nil || err != nil {
			t.Fatalf("Follow where no part is kept: %v, %v; want nil", f, err)
		}
	}
	if x, err := Open(ctx, st, Options{}); err != nil || x.feed == nil {
		t.Fatalf("Open over the Badger store: %v, feed %v; want one that follows its commits", err, x.feed)
	} else {
		x.Close()
	}

	words := []string{"dark mode editor", "tea at four", "deploy on friday", "vim keys", "metric units"}
	layers := []memory.Layer{memory.LayerPreference, memory.LayerKnowledge, memory.LayerState}
	write := func(round, n int) {
		for i := range n {
			c := memory.Candidate{Layer: layers[i%3], SubjectID: fmt.Sprintf("s%d", i%3),
				Summary: fmt.Sprintf("round %d: user likes %s and %s", round, words[i%5], words[(i/5)%5]),
				Scope:   memory.Scope{UserID: fmt.Sprintf("u%d", i%4), AgentID: fmt.Sprintf("a%d", i%2)}}
			if i%4 == 0 { // slots shared across rounds: later rounds supersede
				c.FactType = fmt.Sprintf("f%d", i)
			}
			if _, err := gov.Submit(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	must := func(f *Filter, err error) *Filter {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	queries := []Query{
		{Text: "dark editor", TopK: 10},
		{Text: "dark editor", TopK: 3, Threshold: 0.1},
		{Text: "tea", Filter: Eq("subject_id", "s1"), TopK: 100},
		{Text: "friday deploy", Filter: Eq("user_id", "u2"), TopK: 5},
		{Text: "", Filter: Eq("agent_id", "a1"), TopK: 7},
		{Text: "units", Filter: And(Eq("user_id", "u1"), Eq("layer", string(memory.LayerKnowledge))), TopK: 10},
		{Text: "vim", Filter: Or(Eq("subject_id", "s0"), Eq("subject_id", "s2")), TopK: 10},
		{Text: "round likes", Filter: must(Leaf("keywords", "contains", "metric")), TopK: 4},
		{Text: "nothing matches this", TopK: 10, Threshold: 0.2},
	}
	lists := []struct {
		f     *Filter
		limit int
	}{
		{nil, 0}, {Eq("subject_id", "s2"), 0}, {Eq("user_id", "u3"), 5}, {Eq("agent_id", "a0"), 0},
		{And(Eq("subject_id", "s0"), Eq("user_id", "u0")), 0}, {must(Leaf("keywords", "contains", "tea")), 0},
	}
	compare := func(stage string) {
		t.Helper()
		for _, q := range queries {
			var answers []string
			for _, x := range []*Index{following, scanning, viaView} {
				hits, err := x.Search(ctx, q)
				if err != nil {
					t.Fatalf("%s: Search(%q): %v", stage, q.Text, err)
				}
				var b strings.Builder
				for _, h := range hits {
					fmt.Fprintf(&b, "%s=%v ", h.Record.ID, h.Score)
				}
				answers = append(answers, b.String())
			}
			if answers[0] == "" && q.Threshold == 0 {
				t.Fatalf("%s: Search(%q, %s) found nothing: the test's data misses it", stage, q.Text, Describe(q.Filter))
			}
			if answers[1] != answers[0] || answers[2] != answers[0] {
				t.Fatalf("%s: Search(%q, %s):\nfollowing %s\nscanning  %s\nvia View  %s", stage, q.Text, Describe(q.Filter),
					answers[0], answers[1], answers[2])
			}
		}
		for _, l := range lists {
			var answers [][]string
			for _, x := range []*Index{following, scanning, viaView} {
				recs, err := x.List(ctx, l.f, l.limit)
				if err != nil {
					t.Fatalf("%s: List(%s): %v", stage, Describe(l.f), err)
				}
				var ids []string
				for _, r := range recs {
					ids = append(ids, r.ID)
				}
				answers = append(answers, ids)
			}
			if len(answers[0]) == 0 {
				t.Fatalf("%s: List(%s) found nothing: the test's data misses it", stage, Describe(l.f))
			}
			if !slices.Equal(answers[1], answers[0]) || !slices.Equal(answers[2], answers[0]) {
				t.Fatalf("%s: List(%s):\nfollowing %v\nscanning  %v\nvia View  %v", stage, Describe(l.f), answers[0], answers[1], answers[2])
			}
		}
	}
	write(0, 40)
	compare("first writes")
	following.mu.RLock()
	kept := len(following.parts)
	following.mu.RUnlock()
	if kept == 0 {
		t.Fatal("the following index kept no part: the comparison reads the store alike three times")
	}
	write(1, 40) // the parts loaded above follow these commits
	if _, err := gov.Submit(ctx, memory.Candidate{Op: memory.OpDelete, SubjectID: "s0", FactType: "f0"}); err != nil {
		t.Fatal(err)
	}
	compare("after supersedes and a delete")
}

// TestOpenRefusesAStoreItCannotSearch: a store without a commit feed whose
// read transactions cannot scan the index of active records is an error
// that says so, not an index that fails on every read.
func TestOpenRefusesAStoreItCannotSearch(t *testing.T) {
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	for _, src := range []Source{plainView{st}, nil} {
		x, err := Open(context.Background(), src, Options{})
		if err == nil || x != nil {
			t.Fatalf("Open(%T) = %v, %v; want an error", src, x, err)
		}
		if src != nil && !strings.Contains(err.Error(), "ScanActiveIndex") {
			t.Fatalf("Open(%T): %v; want it to name what the store lacks", src, err)
		}
	}
}
