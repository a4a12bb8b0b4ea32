package embed

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestScoresMatchPlainCosine checks the unrolled, split scan against a
// float64 cosine, over lengths that are not multiples of 8.
func TestScoresMatchPlainCosine(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, dim := range []int{1, 7, 9, 64, 383} {
		vs := newVectors()
		n := parallelFrom + 3 // large enough to be split
		rows := randomUnit(r, n, dim)
		ids := make([]string, n)
		for i, v := range rows {
			ids[i] = fmt.Sprint("r", i)
			if err := vs.put(ids[i], 0, v); err != nil {
				t.Fatal(err)
			}
		}
		vs.remove(ids[5])
		q := randomUnit(r, 1, dim)[0]
		all := append(ids, "missing")
		got, err := vs.scores(q, all)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n-1 {
			t.Fatalf("dim %d: %d scores, want %d", dim, len(got), n-1)
		}
		sims, err := vs.similarities(q, all)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sims {
			if v, ok := got[all[i]]; ok != !math.IsNaN(float64(s)) || ok && float64(s) != v {
				t.Fatalf("dim %d, position %d: similarity %v, score %v (%v)", dim, i, s, v, ok)
			}
		}
		for i, v := range rows {
			if i == 5 {
				continue
			}
			var want float64
			for j := range v {
				want += float64(v[j]) * float64(q[j])
			}
			if math.Abs(got[ids[i]]-want) > 1e-5 {
				t.Fatalf("dim %d, row %d: %v, want %v", dim, i, got[ids[i]], want)
			}
		}
	}
}

// randomUnit returns n random unit vectors of dim dimensions.
func randomUnit(r *rand.Rand, n, dim int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		v := make([]float64, dim)
		for j := range v {
			v[j] = r.NormFloat64()
		}
		out[i], _ = unit(v)
	}
	return out
}
