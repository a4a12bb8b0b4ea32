package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// TestVirtualCacheActsAsOPAs runs random sequences of cache operations on
// the pooled cache and on OPA's own, and compares every answer.
func TestVirtualCacheActsAsOPAs(t *testing.T) {
	refs := []ast.Ref{
		ast.MustParseRef("data.memgate.fired"),
		ast.MustParseRef("data.memgate.affects"),
		ast.MustParseRef("data.memgate.decision"),
		ast.MustParseRef(`data.memgate.f["a"]`),
		ast.MustParseRef(`data.memgate.f["b"]`),
		ast.MustParseRef("data.memgate"),
	}
	values := []*ast.Term{nil, ast.StringTerm("x"), ast.BooleanTerm(true), ast.ArrayTerm(ast.StringTerm("y"))}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ours, theirs := getVirtualCache(), topdown.NewVirtualCache()
		depth := 0
		for step := range 60 {
			ref := refs[rng.IntN(len(refs))]
			// The evaluator may reuse a ref's slice after Put: so do we.
			scratch := append(ast.Ref(nil), ref...)
			switch op := rng.IntN(10); {
			case op < 4:
				v := values[rng.IntN(len(values))]
				ours.Put(scratch, v)
				theirs.Put(scratch, v)
				scratch[len(scratch)-1] = ast.StringTerm("reused")
			case op < 8:
				gv, gu := ours.Get(scratch)
				wv, wu := theirs.Get(scratch)
				if fmt.Sprint(gv, gu) != fmt.Sprint(wv, wu) {
					t.Fatalf("seed %d step %d: Get(%v) = %v, %v; OPA's cache: %v, %v", seed, step, ref, gv, gu, wv, wu)
				}
			case op == 8:
				ours.Push()
				theirs.Push()
				depth++
			case depth > 0:
				ours.Pop()
				theirs.Pop()
				depth--
			}
		}
		ours.release()
	}
}

// TestVirtualCacheReleaseForgets checks a pooled cache comes back empty.
func TestVirtualCacheReleaseForgets(t *testing.T) {
	c := getVirtualCache()
	ref := ast.MustParseRef("data.memgate.fired")
	c.Push()
	c.Put(ref, ast.StringTerm("x"))
	c.release()
	c = getVirtualCache()
	defer c.release()
	if v, undefined := c.Get(ref); v != nil || undefined || len(c.Keys()) != 0 || len(c.frames) != 0 {
		t.Fatalf("a released cache still holds %v (undefined %v, keys %v, frames %v)", v, undefined, c.Keys(), c.frames)
	}
}
