package embed

import (
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"sync"

	"github.com/memgate/memgate/internal/clip"
	"gonum.org/v1/gonum/blas/blas32"
)

// vectors holds one unit vector per record id, rows of one contiguous slab
// so that a scan streams memory instead of chasing 100,000 pointers. A row
// freed by a removal is reused by the next put.
type vectors struct {
	mu   sync.RWMutex
	dim  int              // 0 until the first put
	rows map[string]int32 // id → row
	ids  []string         // row → id, "" for a free row
	sums []uint64         // row → hash of the text embedded
	slab []float32        // row r is slab[r*dim : (r+1)*dim]
	free []int32

	maxParts int // scan goroutines at most; 0: GOMAXPROCS (benchmarks set 1 as the baseline)
}

func newVectors() *vectors { return &vectors{rows: map[string]int32{}} }

// errWrongDimension is put's answer to a vector of another dimension than
// the ones held: the caller decides whether to reset.
type errWrongDimension struct{ got, have int }

func (e *errWrongDimension) Error() string {
	return fmt.Sprintf("embed: a vector of %d dimensions among vectors of %d", e.got, e.have)
}

// textSum identifies the text a vector was made from, so a reconcile sees a
// record whose text changed under the same id.
func textSum(text string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(clip.Bytes(text, MaxTextBytes)))
	return h.Sum64()
}

func (x *vectors) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.rows)
}

func (x *vectors) dimension() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dim
}

// has reports whether id holds a vector made from the text of sum.
func (x *vectors) has(id string, sum uint64) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	r, ok := x.rows[id]
	return ok && x.sums[r] == sum
}

// put stores v (unit length) as id's vector, replacing any.
func (x *vectors) put(id string, sum uint64, v []float32) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dim == 0 {
		x.dim = len(v)
	}
	if len(v) != x.dim {
		return &errWrongDimension{got: len(v), have: x.dim}
	}
	r, ok := x.rows[id]
	switch {
	case ok:
	case len(x.free) > 0:
		r = x.free[len(x.free)-1]
		x.free = x.free[:len(x.free)-1]
	default:
		r = int32(len(x.ids))
		x.ids = append(x.ids, "")
		x.sums = append(x.sums, 0)
		x.slab = append(x.slab, make([]float32, x.dim)...)
	}
	x.rows[id], x.ids[r], x.sums[r] = r, id, sum
	copy(x.slab[int(r)*x.dim:], v)
	return nil
}

// remove drops id's vector and reports whether there was one.
func (x *vectors) remove(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	r, ok := x.rows[id]
	if !ok {
		return false
	}
	delete(x.rows, id)
	x.ids[r], x.sums[r] = "", 0
	x.free = append(x.free, r)
	return true
}

// reset drops every vector, and the dimension with them.
func (x *vectors) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dim, x.rows, x.ids, x.sums, x.slab, x.free = 0, map[string]int32{}, nil, nil, nil, nil
}

// idList returns the ids that hold a vector.
func (x *vectors) idList() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]string, 0, len(x.rows))
	for id := range x.rows {
		out = append(out, id)
	}
	return out
}

// parallelFrom is the number of ids from which a scan is split across
// cores: below it a goroutine costs more than it saves.
const parallelFrom = 8192

// scores returns the cosine of q (unit length) with the vector of each id
// that has one, as a map.
func (x *vectors) scores(q []float32, ids []string) (map[string]float64, error) {
	sims, err := x.similarities(q, ids)
	switch {
	case err != nil:
		return nil, err
	case sims == nil:
		return map[string]float64{}, nil
	}
	out := make(map[string]float64, len(ids))
	for i, s := range sims {
		if !math.IsNaN(float64(s)) {
			out[ids[i]] = float64(s)
		}
	}
	return out, nil
}

// similarities returns the cosine of q (unit length) with the vector of
// each id by position, NaN where an id has none; nil when no id can have
// one. The read lock is held for the scan, so rows cannot be reused under
// it.
func (x *vectors) similarities(q []float32, ids []string) ([]float32, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.rows) == 0 {
		return nil, nil
	}
	if len(q) != x.dim {
		return nil, fmt.Errorf("embed: the query has %d dimensions, the records %d: %w", len(q), x.dim, ErrDimension)
	}
	sims := make([]float32, len(ids))
	parts := 1
	if len(ids) >= parallelFrom {
		parts = min(runtime.GOMAXPROCS(0), len(ids)/(parallelFrom/2))
		if x.maxParts > 0 {
			parts = min(parts, x.maxParts)
		}
	}
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(ids)/parts, (p+1)*len(ids)/parts
		wg.Go(func() { x.scoreRange(q, ids[lo:hi], sims[lo:hi]) })
	}
	wg.Wait()
	return sims, nil
}

func (x *vectors) scoreRange(q []float32, ids []string, sims []float32) {
	nan := float32(math.NaN())
	for i, id := range ids {
		r, ok := x.rows[id]
		if !ok {
			sims[i] = nan
			continue
		}
		sims[i] = max(-1, min(1, dot(q, x.slab[int(r)*x.dim:int(r+1)*x.dim]))) // rounding can pass ±1
	}
}

// dot is the dot product of two vectors of equal length, by gonum's BLAS:
// on amd64 its SSE assembly multiplies four floats a step, measured about
// 3× a Go loop unrolled by eight and 6 to 8× a plain one, rows in cache
// (BenchmarkDot, medians of five). A scan of 100,000 rows is then bound by memory more than
// by arithmetic.
func dot(a, b []float32) float32 {
	return blas32.Dot(blas32.Vector{N: len(a), Inc: 1, Data: a}, blas32.Vector{N: len(a), Inc: 1, Data: b[:len(a)]})
}
