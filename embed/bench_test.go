package embed

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

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

func plainDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// BenchmarkScores measures one query against 100,000 records, the bound
// the issue sets per subject. Sub-benchmarks, all in one run so their
// ratios hold under a shared machine's load:
//
//	plain:    a one-sum loop over the same rows, serial (the baseline)
//	serial:   dot's unrolled loop, one goroutine
//	parallel: dot's unrolled loop, split across GOMAXPROCS (what Scores does)
//	mapOnly:  the id lookups and the result map without any dot product,
//	          the interface's own floor
func BenchmarkScores(b *testing.B) {
	const n = 100_000
	for _, dim := range []int{384, 768} {
		r := rand.New(rand.NewPCG(uint64(dim), 1))
		vs := newVectors()
		ids := make([]string, n)
		for i, v := range randomUnit(r, n, dim) {
			ids[i] = fmt.Sprintf("01JD%022d", i) // ULID-sized ids
			if err := vs.put(ids[i], 0, v); err != nil {
				b.Fatal(err)
			}
		}
		q := randomUnit(r, 1, dim)[0]
		b.Run(fmt.Sprintf("dim=%d/plain", dim), func(b *testing.B) {
			for b.Loop() {
				out := make(map[string]float64, n)
				for _, id := range ids {
					row := vs.rows[id]
					out[id] = float64(plainDot(q, vs.slab[int(row)*dim:int(row+1)*dim]))
				}
			}
		})
		for _, c := range []struct {
			name  string
			parts int
		}{{"serial", 1}, {"parallel", 0}} {
			b.Run(fmt.Sprintf("dim=%d/%s", dim, c.name), func(b *testing.B) {
				vs.maxParts = c.parts
				for b.Loop() {
					if _, err := vs.scores(q, ids); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("dim=%d/mapOnly", dim), func(b *testing.B) {
			for b.Loop() {
				out := make(map[string]float64, n)
				for _, id := range ids {
					out[id] = float64(vs.rows[id])
				}
			}
		})
	}
}

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
		got, err := vs.scores(q, append(ids, "missing"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n-1 {
			t.Fatalf("dim %d: %d scores, want %d", dim, len(got), n-1)
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
