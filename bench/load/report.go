package load

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Print writes a result as a table.
func (r *Result) Print(w io.Writer, label string) {
	rate := "closed loop"
	if r.Rate > 0 {
		rate = fmt.Sprintf("%.0f/s offered", r.Rate)
	}
	fmt.Fprintf(w, "%s: %s %s, mix %s, %s, concurrency %d, measured %s", label, r.Dialect, r.Target, r.Mix, rate,
		r.Concurrency, r.Window.Round(time.Millisecond))
	if r.Missed > 0 {
		fmt.Fprintf(w, ", %d scheduled calls never sent (target fell behind)", r.Missed)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-9s %8s %8s %6s %9s %9s %9s %9s %9s %9s\n", "kind", "calls", "ok", "fail", "ok/s", "p50", "p90", "p99", "p99.9", "max")
	row := func(name string, s Stats) {
		fmt.Fprintf(w, "  %-9s %8d %8d %6d %9.1f %9s %9s %9s %9s %9s\n", name, s.Calls, s.OK, s.Calls-s.OK-s.Parked, s.Throughput,
			ms(s.P50), ms(s.P90), ms(s.P99), ms(s.P999), ms(s.Max))
	}
	for _, k := range Kinds {
		if s, ok := r.Kinds[k]; ok {
			row(string(k), s)
		}
	}
	if len(r.Kinds) > 1 {
		row("all", r.All)
	}
	if r.All.Parked > 0 {
		fmt.Fprintf(w, "  parked for review (not in ok, nor in fail): %d\n", r.All.Parked)
	}
	if len(r.All.Failed) > 0 {
		reasons := make([]string, 0, len(r.All.Failed))
		for k, v := range r.All.Failed {
			reasons = append(reasons, fmt.Sprintf("%s ×%d", k, v))
		}
		sort.Strings(reasons)
		fmt.Fprintf(w, "  failures: %s\n", strings.Join(reasons, ", "))
	}
}

// Print writes both results and the ratios.
func (c *Comparison) Print(w io.Writer) {
	c.Memgate.Print(w, "memgate")
	c.Baseline.Print(w, "baseline")
	thr := "not comparable (the mix is not writes only)"
	if c.Throughput > 0 {
		thr = fmt.Sprintf("%.2f×", c.Throughput)
	}
	fmt.Fprintf(w, "memgate/baseline (low-risk writes vs %s): p50 %.2f×, p99 %.2f×, throughput %s\n",
		c.Against, c.P50, c.P99, thr)
}

// ms formats a duration in milliseconds with three significant digits.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2fms", v)
}
