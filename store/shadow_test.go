package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// TestShadowedIndex: the writes shadow mode applied are listed from the
// sh/ index in both orders, page by page, and the index survives a
// restart; writes policy applied on its own are not listed.
func TestShadowedIndex(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var want []string
	for i := range 5 {
		if i == 2 {
			if err := e.gov.SetPolicyMode(memory.PolicyShadow); err != nil {
				t.Fatal(err)
			}
		}
		res := e.submit(memory.Candidate{SubjectID: "p", FactType: fmt.Sprint("rule", i), Layer: memory.LayerPolicy, Summary: "never publish"})
		if i >= 2 {
			want = append(want, res.Record.ID)
			if res.Outcome != memory.OutcomeApplied || res.Record.Decision.Action != memory.ActionReview {
				t.Fatalf("shadow mode: %s with action %s, want applied with review kept", res.Outcome, res.Record.Decision.Action)
			}
		}
		e.submit(memory.Candidate{SubjectID: "p", FactType: fmt.Sprint("note", i), Summary: "low risk"})
	}
	e.restart() // the mode is not persisted; the index is
	for _, newest := range []bool{false, true} {
		var got []string
		after := ""
		for {
			page, err := e.gov.Shadowed(ctx, after, 2, newest)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				got = append(got, it.RecordID)
				if it.Would != memory.ActionReview || it.Did != memory.ActionApply || !slices.Equal(it.Rules, []string{"strategy"}) {
					t.Errorf("item %+v", it)
				}
			}
			if after = page.Next; after == "" {
				break
			}
		}
		exp := slices.Clone(want)
		if newest {
			slices.Reverse(exp)
		}
		if !slices.Equal(got, exp) {
			t.Errorf("newest=%v: listed %v, want %v", newest, got, exp)
		}
	}
	if e.gov.PolicyMode() != memory.PolicyEnforce {
		t.Errorf("after a restart without the option the mode is %s", e.gov.PolicyMode())
	}
}

// BenchmarkShadowedPage compares a page of 50 shadowed writes read from the
// sh/ index with the same page found by scanning the audit log for them,
// over a log where 1 write in 100 was shadowed (a week of an agent that
// mostly writes low-risk memories). Report the ratio of the two.
func BenchmarkShadowedPage(b *testing.B) {
	const writes, every = 20000, 100
	st := badgertest.NewWith(b, store.Options{NoSync: true})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules)})
	ctx := context.Background()
	for i := range writes {
		c := memory.Candidate{SubjectID: "p", FactType: fmt.Sprint("f", i), Summary: "low risk note"}
		if i%every == 0 {
			c.Layer, c.Summary = memory.LayerPolicy, "never publish"
			_ = gov.SetPolicyMode(memory.PolicyShadow)
		}
		if _, err := gov.Submit(ctx, c); err != nil {
			b.Fatal(err)
		}
		_ = gov.SetPolicyMode(memory.PolicyEnforce)
	}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			page, err := gov.Shadowed(ctx, "", 50, true)
			if err != nil || page.Count != 50 {
				b.Fatal(err, page.Count)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			var n int
			err := st.View(ctx, func(tx memory.ReadTx) error {
				return tx.ScanEvents("", func(e *memory.Event) bool {
					if memory.IsShadowed(e) {
						n++
					}
					return true // newest first needs the whole log
				})
			})
			if err != nil || n != writes/every {
				b.Fatal(err, n)
			}
		}
	})
}
