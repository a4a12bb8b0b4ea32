//go:build unix

package embed

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// unrolledDot is the best pure-Go loop measured: eight products a step
// into two sums (the compiler does not vectorise; independent sums let the
// CPU overlap the multiplies).
func unrolledDot(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 7
	var s0, s1 float32
	for i := 0; i < n; i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += aa[0]*bb[0] + aa[1]*bb[1] + aa[2]*bb[2] + aa[3]*bb[3]
		s1 += aa[4]*bb[4] + aa[5]*bb[5] + aa[6]*bb[6] + aa[7]*bb[7]
	}
	for i := n; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1
}

func plainDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// reportCPU adds the process's CPU time per op (cpu-ms/op) to a
// benchmark: on a machine shared with other jobs, wall time (ns/op) grows
// with the load, CPU time much less. Call it before the loop and defer the
// function it returns.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScores measures one query against 100,000 records, the bound
// the issue sets per subject. Sub-benchmarks, all in one run so their
// ratios hold under a shared machine's load:
//
//	plain:    a one-sum Go loop over the same rows, serial (the baseline)
//	serial:   dot (gonum's assembly), one goroutine
//	parallel: dot, split across GOMAXPROCS (what Scores does)
//	aligned:  parallel without the result map (what Similarities does)
//	mapOnly:  the id lookups and the result map without any dot product,
//	          the interface's own floor
//	lookups:  the id lookups alone
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
			defer reportCPU(b)()
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
				defer reportCPU(b)()
				for b.Loop() {
					if _, err := vs.scores(q, ids); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("dim=%d/aligned", dim), func(b *testing.B) {
			vs.maxParts = 0
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := vs.similarities(q, ids); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("dim=%d/mapOnly", dim), func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				out := make(map[string]float64, n)
				for _, id := range ids {
					out[id] = float64(vs.rows[id])
				}
			}
		})
		b.Run(fmt.Sprintf("dim=%d/lookups", dim), func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				var sum int32
				for _, id := range ids {
					sum += vs.rows[id]
				}
				_ = sum
			}
		})
	}
}

// BenchmarkDot compares dot (gonum) with Go loops on rows that stay in
// cache, so the ratio is the arithmetic's alone.
func BenchmarkDot(b *testing.B) {
	for _, dim := range []int{384, 768} {
		r := rand.New(rand.NewPCG(uint64(dim), 2))
		rows := randomUnit(r, 256, dim)
		q := randomUnit(r, 1, dim)[0]
		for _, c := range []struct {
			name string
			fn   func(a, b []float32) float32
		}{{"plain", plainDot}, {"unrolled", unrolledDot}, {"gonum", dot}} {
			b.Run(fmt.Sprintf("dim=%d/%s", dim, c.name), func(b *testing.B) {
				var sink float32
				for b.Loop() {
					for _, row := range rows {
						sink += c.fn(q, row)
					}
				}
				_ = sink
			})
		}
	}
}
