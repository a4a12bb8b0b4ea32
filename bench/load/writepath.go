package load

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// WritePathConfig measures the three figures of the write path (issue 29)
// in one session: a single writer's p50 against the bare handler's, the
// throughput of many writers against the bare handler's, and policy's
// share of a low-risk write's p50, each run alternating memgate and the
// baseline, Runs times, reporting the median of each.
type WritePathConfig struct {
	// Config drives memgate: Target, Dialect, Subjects, SummaryBytes,
	// Duration, Warmup and Seed are used; the mix is low-risk writes and
	// the loop is closed (each writer sends when it has its answer).
	Config
	Runs        int // default 5
	Writers     int // the many writers' count, default 32
	BaselineDir string
	// MetricsURL is the sidecar's /metrics (its admin listener), read
	// around the single writer's run for the policy's share; Token is the
	// admin token. Empty: no policy figures.
	MetricsURL, Token string
}

// WritePathRun is one run's figures.
type WritePathRun struct {
	// One writer: memgate's and the baseline's write p50, and the ratio.
	MemgateP50  time.Duration `json:"memgateP50"`
	BaselineP50 time.Duration `json:"baselineP50"`
	P50Ratio    float64       `json:"p50Ratio"`
	// Many writers: throughputs (writes/s) and the ratio.
	MemgateThroughput  float64 `json:"memgateThroughput"`
	BaselineThroughput float64 `json:"baselineThroughput"`
	ThroughputRatio    float64 `json:"throughputRatio"`
	// Policy, from the sidecar's evaluation histogram over the single
	// writer's run (warmup included): evaluations per write, their mean
	// cost per write, and that as a share of memgate's write p50.
	EvalsPerWrite  float64       `json:"evalsPerWrite"`
	PolicyPerWrite time.Duration `json:"policyPerWrite"`
	PolicyShare    float64       `json:"policyShare"`
	// EvalP99 is the upper bound of the histogram bucket holding the
	// 99th percentile evaluation over the many writers' run.
	EvalP99 time.Duration `json:"evalP99"`
}

// WritePath is every run and the median of each figure.
type WritePath struct {
	Runs   []WritePathRun `json:"runs"`
	Median WritePathRun   `json:"median"`
}

// RunWritePath runs cfg.Runs times: a single writer against the baseline,
// then cfg.Writers writers against it (RunCompared alternates them, the
// baseline first in every other run).
func RunWritePath(ctx context.Context, cfg WritePathConfig, progress io.Writer) (*WritePath, error) {
	runs, writers := max(cfg.Runs, 1), cfg.Writers
	if writers <= 0 {
		writers = 32
	}
	out := &WritePath{}
	recordBytes := 0 // memgate's answer to a write, once known: the baseline stores as much
	for i := range runs {
		var r WritePathRun
		one := cfg.Config
		one.Mix, one.Rate, one.Concurrency = Mix{KindWrite: 1}, 0, 1
		before, err := scrapePolicy(ctx, cfg.MetricsURL, cfg.Token)
		if err != nil {
			return out, err
		}
		c1, err := RunCompared(ctx, CompareConfig{Config: one, BaselineDir: cfg.BaselineDir, BaselineFirst: i%2 == 1, RecordBytes: recordBytes})
		if err != nil {
			return out, fmt.Errorf("run %d, one writer: %w", i+1, err)
		}
		after, err := scrapePolicy(ctx, cfg.MetricsURL, cfg.Token)
		if err != nil {
			return out, err
		}
		recordBytes = c1.Memgate.RecordBytes
		r.MemgateP50, r.BaselineP50 = c1.Memgate.Kinds[KindWrite].P50, c1.Baseline.Kinds[KindWrite].P50
		r.P50Ratio = c1.P50
		if writes := after.writes - before.writes; writes > 0 && after.evals > before.evals {
			r.EvalsPerWrite = (after.evals - before.evals) / writes
			r.PolicyPerWrite = time.Duration((after.seconds - before.seconds) / writes * float64(time.Second))
			r.PolicyShare = ratio(float64(r.PolicyPerWrite), float64(r.MemgateP50))
		}
		many := cfg.Config
		many.Mix, many.Rate, many.Concurrency = Mix{KindWrite: 1}, 0, writers
		before = after
		cN, err := RunCompared(ctx, CompareConfig{Config: many, BaselineDir: cfg.BaselineDir, BaselineFirst: i%2 == 1, RecordBytes: recordBytes})
		if err != nil {
			return out, fmt.Errorf("run %d, %d writers: %w", i+1, writers, err)
		}
		if after, err = scrapePolicy(ctx, cfg.MetricsURL, cfg.Token); err != nil {
			return out, err
		}
		r.MemgateThroughput, r.BaselineThroughput = cN.Memgate.Kinds[KindWrite].Throughput, cN.Baseline.Kinds[KindWrite].Throughput
		r.ThroughputRatio = cN.Throughput
		r.EvalP99 = after.quantileSince(before, 0.99)
		out.Runs = append(out.Runs, r)
		if progress != nil {
			fmt.Fprintf(progress, "run %d: one writer p50 %s vs %s (%.2f×), %d writers %.0f vs %.0f writes/s (%.2f×), policy %.1f%% of a write's p50\n",
				i+1, r.MemgateP50.Round(time.Microsecond), r.BaselineP50.Round(time.Microsecond), r.P50Ratio, writers,
				r.MemgateThroughput, r.BaselineThroughput, r.ThroughputRatio, 100*r.PolicyShare)
		}
	}
	out.Median = medianRun(out.Runs)
	return out, nil
}

// medianRun is the median of each figure on its own.
func medianRun(runs []WritePathRun) WritePathRun {
	f := func(get func(WritePathRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		sort.Float64s(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	d := func(get func(WritePathRun) time.Duration) time.Duration {
		return time.Duration(f(func(r WritePathRun) float64 { return float64(get(r)) }))
	}
	return WritePathRun{
		MemgateP50:         d(func(r WritePathRun) time.Duration { return r.MemgateP50 }),
		BaselineP50:        d(func(r WritePathRun) time.Duration { return r.BaselineP50 }),
		P50Ratio:           f(func(r WritePathRun) float64 { return r.P50Ratio }),
		MemgateThroughput:  f(func(r WritePathRun) float64 { return r.MemgateThroughput }),
		BaselineThroughput: f(func(r WritePathRun) float64 { return r.BaselineThroughput }),
		ThroughputRatio:    f(func(r WritePathRun) float64 { return r.ThroughputRatio }),
		EvalsPerWrite:      f(func(r WritePathRun) float64 { return r.EvalsPerWrite }),
		PolicyPerWrite:     d(func(r WritePathRun) time.Duration { return r.PolicyPerWrite }),
		PolicyShare:        f(func(r WritePathRun) float64 { return r.PolicyShare }),
		EvalP99:            d(func(r WritePathRun) time.Duration { return r.EvalP99 }),
	}
}

// Print writes each run and the medians.
func (w *WritePath) Print(out io.Writer, writers int) {
	fmt.Fprintf(out, "%-8s %12s %12s %7s %14s %14s %7s %8s %12s %8s %10s\n", "run", "1w memgate", "1w bare", "ratio",
		fmt.Sprintf("%dw memgate/s", writers), fmt.Sprintf("%dw bare/s", writers), "ratio", "evals/w", "policy/w", "share", "eval p99≤")
	row := func(name string, r WritePathRun) {
		fmt.Fprintf(out, "%-8s %12s %12s %6.2f× %14.0f %14.0f %6.2f× %8.2f %12s %7.1f%% %10s\n", name,
			r.MemgateP50.Round(time.Microsecond), r.BaselineP50.Round(time.Microsecond), r.P50Ratio,
			r.MemgateThroughput, r.BaselineThroughput, r.ThroughputRatio, r.EvalsPerWrite,
			r.PolicyPerWrite.Round(time.Microsecond), 100*r.PolicyShare, r.EvalP99)
	}
	for i, r := range w.Runs {
		row(fmt.Sprint(i+1), r)
	}
	row("median", w.Median)
}

// policyFigures are the sidecar's counters the policy figures come from.
type policyFigures struct {
	writes, evals, seconds float64
	buckets                []*dto.Bucket // cumulative, by upper bound
}

// quantileSince returns the upper bound of the bucket holding quantile q
// of the evaluations between from and p (0 without any).
func (p policyFigures) quantileSince(from policyFigures, q float64) time.Duration {
	n := p.evals - from.evals
	if n <= 0 || len(p.buckets) != len(from.buckets) {
		return 0
	}
	for i, b := range p.buckets {
		if float64(b.GetCumulativeCount()-from.buckets[i].GetCumulativeCount()) >= q*n {
			if math.IsInf(b.GetUpperBound(), 1) {
				return 0
			}
			return time.Duration(b.GetUpperBound() * float64(time.Second))
		}
	}
	return 0
}

// scrapePolicy reads the writes decided and the policy evaluation
// histogram from a sidecar's /metrics; a zero value when url is empty.
func scrapePolicy(ctx context.Context, url, token string) (policyFigures, error) {
	var p policyFigures
	if url == "" {
		return p, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return p, fmt.Errorf("metrics: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return p, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("metrics: %s answered %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return p, fmt.Errorf("metrics: %w", err)
	}
	if f := fams["memgate_writes_total"]; f != nil {
		for _, m := range f.GetMetric() {
			p.writes += m.GetCounter().GetValue()
		}
	}
	f := fams["memgate_policy_evaluation_duration_seconds"]
	if f == nil || len(f.GetMetric()) != 1 {
		return p, fmt.Errorf("metrics: %s has no memgate_policy_evaluation_duration_seconds", url)
	}
	h := f.GetMetric()[0].GetHistogram()
	p.evals, p.seconds = float64(h.GetSampleCount()), h.GetSampleSum()
	p.buckets = slices.Clone(h.GetBucket())
	return p, nil
}
