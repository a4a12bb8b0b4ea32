package search

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// TestFilterBoundsRefuseOversizedOperands: each bound on a filter's
// operands refuses one past it with an error naming the bound, and takes
// one at it.
func TestFilterBoundsRefuseOversizedOperands(t *testing.T) {
	values := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf("u%d", i)
		}
		return out
	}
	big := strings.Repeat("x", MaxOperandBytes)
	for _, tc := range []struct {
		name, field, op string
		arg             any
		want            string // in the error; "" for none
	}{
		{"in at the bound", "user_id", "in", values(MaxInValues), ""},
		{"in past the bound", "user_id", "in", values(MaxInValues + 1), "at most 1000 values"},
		{"nin past the bound", "categories", "nin", values(MaxInValues + 1), "at most 1000 values"},
		{"metadata in past the bound", "metadata.k", "in", values(MaxInValues + 1), "at most 1000 values"},
		{"text operand at the bound", "keywords", "icontains", big, ""},
		{"text operand past the bound", "keywords", "icontains", big + "x", "more than the 4096 allowed"},
		{"metadata contains past the bound", "metadata.k", "icontains", big + "x", "more than the 4096 allowed"},
		{"id past the bound", "run_id", "eq", big + "x", "more than the 4096 allowed"},
		{"an in value past the bound", "user_id", "in", []any{big + "x"}, "more than 4096 bytes"},
		{"metadata object past the bound", "metadata.k", "eq", map[string]any{"a": big}, "more than 4096 bytes"},
		{"metadata array past the bound", "metadata.k", "eq", []any{big, "y"}, "more than 4096 bytes"},
		{"NUL in an id", "user_id", "eq", "al\x00ice", "control character"},
		{"NUL in an id of in", "agent_id", "in", []any{"a", "b\x00"}, "control character"},
		{"invalid UTF-8 in an id", "app_id", "eq", "a\xff", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Leaf(tc.field, tc.op, tc.arg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestMetadataInAnswersAsDeepEqual: in and nin on metadata look scalars up
// in a set; every answer is the one comparing each value with
// reflect.DeepEqual gives, for scalars, arrays, objects, null and absent
// fields.
func TestMetadataInAnswersAsDeepEqual(t *testing.T) {
	operands := [][]any{
		{"a", 1.0, true, nil},
		{"1", 0.0},
		{[]any{"a", "b"}, map[string]any{"x": 1.0}},
		{"a", []any{"a"}},
		{},
	}
	values := []any{"a", "1", 1.0, -0.0, 0.0, true, false, nil, []any{"a", "b"}, []any{"a"},
		map[string]any{"x": 1.0}, map[string]any{"x": 2.0}, "absent"}
	for _, op := range []string{"in", "nin"} {
		for _, items := range operands {
			leaf, err := Leaf("metadata.k", op, items)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range values {
				r := &memory.Record{Metadata: map[string]any{"k": v}}
				if v == "absent" {
					r.Metadata = nil
				}
				got, _ := r.Metadata["k"], 0
				want := op == "nin"
				for _, it := range items {
					if reflect.DeepEqual(got, it) {
						want = op == "in"
						break
					}
				}
				if leaf.Match(r) != want {
					t.Errorf("%v %s %v: %v, want %v", v, op, items, leaf.Match(r), want)
				}
			}
		}
	}
}

// seeded returns an index over n active records of user u, and a governor.
func seeded(t *testing.T, n int, budget int64, summary func(i int) string) (*Index, *memory.Governor) {
	t.Helper()
	x, gov := applyingGovernor(t, store.Options{Dir: t.TempDir(), NoSync: true}, Options{Budget: budget})
	t.Cleanup(x.Close)
	ctx := context.Background()
	for i := range n {
		if _, err := gov.Submit(ctx, memory.Candidate{SubjectID: "u", FactType: fmt.Sprintf("f%04d", i), Summary: summary(i),
			Scope: memory.Scope{UserID: "u"}}); err != nil {
			t.Fatal(err)
		}
	}
	return x, gov
}

// TestReadOverTheWorkBudgetIsRefused: a read whose records × cost exceeds
// the work budget stops with EINVALID naming the budget, on the index's
// parts and on the store's scan; a cheaper one over the same records, or
// the same one over fewer, answers. The budget is lowered so that a few
// hundred records reach it.
func TestReadOverTheWorkBudgetIsRefused(t *testing.T) {
	old := maxWork
	maxWork = 20_000
	t.Cleanup(func() { maxWork = old })
	for _, budget := range []int64{0, -1} { // parts kept, or every read scans
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			x, _ := seeded(t, 300, budget, func(i int) string { return fmt.Sprintf("note %d about the garden and the house", i) })
			ctx := context.Background()
			// 40 text conditions of 1 KiB each: 40 × 5 units a record.
			costly := And(Eq("user_id", "u"))
			for i := range 40 {
				leaf, err := Leaf("keywords", "icontains", strings.Repeat(string(rune('a'+i%26)), 1024))
				if err != nil {
					t.Fatal(err)
				}
				costly.Kids = append(costly.Kids, Or(leaf, Eq("subject_id", "u")))
			}
			_, err := x.List(ctx, costly, 0)
			if memory.ErrorCode(err) != memory.EINVALID || !strings.Contains(err.Error(), "work budget of 20000") {
				t.Fatalf("costly list: %v, want EINVALID naming the budget", err)
			}
			_, err = x.Search(ctx, Query{Text: "garden", Filter: costly, TopK: 5})
			if memory.ErrorCode(err) != memory.EINVALID {
				t.Fatalf("costly search: %v, want EINVALID", err)
			}
			if recs, err := x.List(ctx, costly, 10); err != nil || len(recs) != 10 {
				t.Fatalf("the same list stopping at 10 records: %d, %v", len(recs), err)
			}
			if recs, err := x.List(ctx, And(Eq("user_id", "u")), 0); err != nil || len(recs) != 300 {
				t.Fatalf("a cheap list: %d, %v", len(recs), err)
			}
			// A long query costs per record too.
			words := make([]string, 80)
			for i := range words {
				words[i] = fmt.Sprintf("w%dx", i)
			}
			if _, err := x.Search(ctx, Query{Text: strings.Join(words, " "), Filter: Eq("user_id", "u"), TopK: 5}); memory.ErrorCode(err) != memory.EINVALID {
				t.Fatalf("a search of 80 words over 300 records: %v, want EINVALID", err)
			}
		})
	}
}

// TestQueryOfTooManyWordsIsRefused: a query over MaxQueryTerms distinct
// terms is EINVALID before anything is read.
func TestQueryOfTooManyWordsIsRefused(t *testing.T) {
	x, _ := seeded(t, 1, 0, func(int) string { return "note" })
	words := make([]string, MaxQueryTerms+1)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	before := x.Examined()
	_, err := x.Search(context.Background(), Query{Text: strings.Join(words, " "), Filter: Eq("user_id", "u"), TopK: 5})
	if memory.ErrorCode(err) != memory.EINVALID || !strings.Contains(err.Error(), "1024") {
		t.Fatalf("%v, want EINVALID naming 1024", err)
	}
	if x.Examined() != before {
		t.Fatalf("%d records tested, want none", x.Examined()-before)
	}
	if err := CheckQuery(strings.Join(words[:MaxQueryTerms], " ")); err != nil {
		t.Fatalf("a query at the bound: %v", err)
	}
}

// cancelAfter is a context that reports itself canceled once the index
// has tested n records: a client that leaves in the middle of a read.
type cancelAfter struct {
	context.Context
	x *Index
	n int64
}

func (c *cancelAfter) Err() error {
	if c.x.Examined() >= c.n {
		return context.Canceled
	}
	return nil
}

// TestReadStopsWhenItsClientLeaves: a list and a search whose context
// ends after 100 records stop within checkEvery more, on the index's
// parts and on the store's scan; one whose context ended before tests
// none.
func TestReadStopsWhenItsClientLeaves(t *testing.T) {
	const n = 1000
	for _, budget := range []int64{0, -1} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			x, _ := seeded(t, n, budget, func(i int) string { return fmt.Sprintf("note %d about the garden", i) })
			for name, read := range map[string]func(ctx context.Context, f *Filter) error{
				"list": func(ctx context.Context, f *Filter) error { _, err := x.List(ctx, f, 0); return err },
				"search": func(ctx context.Context, f *Filter) error {
					_, err := x.Search(ctx, Query{Text: "garden", Filter: f, TopK: 5})
					return err
				},
			} {
				// A condition the index cannot test on its entries: each
				// record is loaded, as a metadata filter does.
				meta, err := Leaf("metadata.k", "*", nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range []*Filter{Eq("user_id", "u"), And(Eq("user_id", "u"), Not(meta))} {
					if err := read(context.Background(), f); err != nil { // warm the part
						t.Fatal(err)
					}
					start := x.Examined()
					err := read(&cancelAfter{context.Background(), x, start + 100}, f)
					tested := x.Examined() - start
					if !errors.Is(err, context.Canceled) || tested < 100 || tested > 100+checkEvery {
						t.Errorf("%s: %v after %d records, want context.Canceled after 100 to %d", name, err, tested, 100+checkEvery)
					}
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					start = x.Examined()
					if err := read(ctx, f); !errors.Is(err, context.Canceled) || x.Examined()-start > checkEvery {
						t.Errorf("%s with a canceled context: %v after %d records", name, err, x.Examined()-start)
					}
				}
			}
		})
	}
}
