package load

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Comparison is memgate's low-risk writes against the baseline's writes,
// measured in the same run with the same rate and concurrency.
type Comparison struct {
	Memgate  *Result `json:"memgate"`
	Baseline *Result `json:"baseline"`
	// Ratios memgate/baseline of the write latency percentiles and of the
	// write throughput (0 when memgate's mix is not writes only: then the
	// two did not offer the same write load).
	P50        float64 `json:"p50Ratio"`
	P99        float64 `json:"p99Ratio"`
	Throughput float64 `json:"throughputRatio"`
	// Against names the baseline, for the report.
	Against string `json:"against"`
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (c *Comparison) compute() {
	m, b := c.Memgate.Kinds[KindWrite], c.Baseline.Kinds[KindWrite]
	c.P50 = ratio(float64(m.P50), float64(b.P50))
	c.P99 = ratio(float64(m.P99), float64(b.P99))
	if len(c.Memgate.Kinds) == 1 {
		c.Throughput = ratio(m.Throughput, b.Throughput)
	}
}

// CompareConfig is a run against memgate with a baseline run beside it.
type CompareConfig struct {
	Config
	// BaselineDir holds the baseline's Badger database; "" = a temporary
	// directory on the default temp filesystem. Put it on the same disk as
	// the sidecar's data directory for a fair comparison.
	BaselineDir string
	// Rounds alternates memgate and baseline runs this many times (memgate
	// first, then baseline first, ...) and pools the samples, so drift in
	// the machine's load affects both alike.
	Rounds int
	// StartBaseline, if set, starts the baseline instead of the bare Badger
	// handler in BaselineDir (the PostgreSQL one: StartPGBaseline), given
	// the size of memgate's stored record; Against then names it.
	StartBaseline func(ctx context.Context, recordBytes int) (BaselineTarget, error)
	Against       string
	// BaselineFirst runs the baseline first in the first round (and then
	// alternates as before): a caller repeating comparisons swaps the
	// order between them. The baseline stores values of RecordBytes then
	// (memgate's answer to a write, from an earlier comparison).
	BaselineFirst bool
	RecordBytes   int
}

// AgainstBadger names the default baseline.
const AgainstBadger = "bare durable Badger writes"

// RunCompared measures memgate and the baseline in alternation. The
// baseline runs the same rate, concurrency and duration with writes only.
func RunCompared(ctx context.Context, cc CompareConfig) (*Comparison, error) {
	if err := cc.defaults(); err != nil {
		return nil, err
	}
	rounds := max(cc.Rounds, 1)
	if cc.StartBaseline == nil {
		dir := cc.BaselineDir
		if dir == "" {
			d, err := os.MkdirTemp("", "memgate-baseline-")
			if err != nil {
				return nil, fmt.Errorf("baseline: %w", err)
			}
			defer os.RemoveAll(d)
			dir = d
		}
		cc.StartBaseline = func(_ context.Context, recordBytes int) (BaselineTarget, error) {
			return StartBaseline(dir, recordBytes)
		}
		cc.Against = AgainstBadger
	}
	cmp := &Comparison{Against: cc.Against}
	var base BaselineTarget
	defer func() {
		if base != nil {
			base.Close()
		}
	}()
	runMemgate := func() error {
		r, err := Run(ctx, cc.Config)
		if err != nil {
			return fmt.Errorf("memgate run: %w", err)
		}
		pool(&cmp.Memgate, r)
		return nil
	}
	runBaseline := func() error {
		if base == nil {
			size := cc.RecordBytes
			if cmp.Memgate != nil {
				size = cmp.Memgate.RecordBytes
			}
			if size <= 0 {
				return errors.New("baseline: the size of memgate's record is not known yet (run memgate first, or give RecordBytes)")
			}
			var err error
			if base, err = cc.StartBaseline(ctx, size); err != nil {
				return err
			}
		}
		bc := cc.Config
		urls := base.Targets()
		bc.Target, bc.Targets, bc.Dialect, bc.Mix, bc.Client = urls[0], urls[1:], Native, Mix{KindWrite: 1}, nil
		r, err := Run(ctx, bc)
		if err != nil {
			return fmt.Errorf("baseline run: %w", err)
		}
		pool(&cmp.Baseline, r)
		return nil
	}
	for i := range rounds {
		order := []func() error{runMemgate, runBaseline}
		if (i%2 == 1) != cc.BaselineFirst {
			order[0], order[1] = order[1], order[0]
		}
		for _, run := range order {
			if err := run(); err != nil {
				return cmp, err
			}
		}
	}
	cmp.compute()
	return cmp, nil
}

// pool adds a round's result to what the runs of one side pooled so far.
func pool(into **Result, r *Result) {
	if *into == nil {
		*into = r
	} else {
		(*into).Merge(r)
	}
}
