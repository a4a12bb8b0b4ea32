package load

import (
	"math"
	"slices"
	"time"
)

// Stats summarizes the calls of one kind.
type Stats struct {
	Calls int `json:"calls"`
	OK    int `json:"ok"`
	// Parked writes were answered as a gate should answer a write it
	// holds for review (HTTP 202, or Mem0's PENDING): neither a success
	// the latency figures measure nor a failure. The load's texts are
	// lists of words; the policy's classifier parks a few of them, as it
	// parks a few of any ordinary text.
	Parked int            `json:"parked,omitempty"`
	Failed map[string]int `json:"failed,omitempty"` // by reason: "HTTP 500", "transport", "unexpected answer"
	// Throughput is successful calls per second of the measured window.
	Throughput float64       `json:"throughput"`
	Mean       time.Duration `json:"mean"`
	P50        time.Duration `json:"p50"`
	P90        time.Duration `json:"p90"`
	P99        time.Duration `json:"p99"`
	P999       time.Duration `json:"p999"`
	Max        time.Duration `json:"max"`
}

// samples collects the latencies of one kind.
type samples struct {
	lat    []time.Duration // successful calls only
	parked int
	failed map[string]int
}

// parked is send's failure for a write the target parked for review.
const parked = "parked"

func (s *samples) add(d time.Duration, failure string) {
	if failure == parked {
		s.parked++
		return
	}
	if failure != "" {
		if s.failed == nil {
			s.failed = map[string]int{}
		}
		s.failed[failure]++
		return
	}
	s.lat = append(s.lat, d)
}

func (s *samples) merge(o *samples) {
	s.lat = append(s.lat, o.lat...)
	s.parked += o.parked
	for k, v := range o.failed {
		if s.failed == nil {
			s.failed = map[string]int{}
		}
		s.failed[k] += v
	}
}

func (s *samples) stats(window time.Duration) Stats {
	st := Stats{OK: len(s.lat), Parked: s.parked, Failed: s.failed}
	st.Calls = st.OK + st.Parked
	for _, n := range s.failed {
		st.Calls += n
	}
	if window > 0 {
		st.Throughput = float64(st.OK) / window.Seconds()
	}
	if len(s.lat) == 0 {
		return st
	}
	sorted := slices.Clone(s.lat)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	st.Mean = sum / time.Duration(len(sorted))
	st.P50, st.P90 = percentile(sorted, 0.50), percentile(sorted, 0.90)
	st.P99, st.P999 = percentile(sorted, 0.99), percentile(sorted, 0.999)
	st.Max = sorted[len(sorted)-1]
	return st
}

// percentile is the nearest-rank percentile of sorted durations: the
// smallest value at least a fraction q of the samples do not exceed.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
