//go:build unix

package embed

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

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
//	plain:    a one-sum loop over the same rows, serial (the baseline)
//	serial:   dot's unrolled loop, one goroutine
//	parallel: dot's unrolled loop, split across GOMAXPROCS (what Scores does)
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
