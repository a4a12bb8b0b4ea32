package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Result is what one run measured.
type Result struct {
	Target      string        `json:"target"`
	Dialect     Dialect       `json:"dialect"`
	Mix         string        `json:"mix"`
	Rate        float64       `json:"rate"` // offered; 0 = closed loop
	Concurrency int           `json:"concurrency"`
	Duration    time.Duration `json:"duration"`
	// Window is the measured time: from the end of the warmup until the
	// last measured call answered.
	Window time.Duration `json:"window"`
	// Missed counts calls the rate scheduled that were never sent because
	// the target fell behind by the end of the run.
	Missed      int64          `json:"missed"`
	RecordBytes int            `json:"recordBytes"` // size of a write's answer
	Kinds       map[Kind]Stats `json:"kinds"`
	All         Stats          `json:"all"`

	samples map[Kind]*samples
}

// Run measures one target.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	w := newWorkload(cfg)
	size, err := w.setup(ctx)
	if err != nil {
		return nil, err
	}
	res := w.run(ctx)
	res.RecordBytes = size
	return res, ctx.Err()
}

// job is a call due at a time; latency counts from then.
type job struct{ due time.Time }

func (w *workload) run(ctx context.Context) *Result {
	cfg := w.cfg
	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	jobs := make(chan job, cfg.Concurrency)
	var missed int64
	go func() {
		defer close(jobs)
		if cfg.Rate <= 0 {
			return // closed loop: the workers make their own
		}
		interval := float64(time.Second) / cfg.Rate
		for i := 0; ; i++ {
			due := start.Add(time.Duration(float64(i) * interval))
			if !due.Before(end) {
				return
			}
			now := time.Now()
			if now.After(end) {
				missed = int64((float64(end.Sub(due)) / interval)) + 1
				return
			}
			if wait := due.Sub(now); wait > 200*time.Microsecond {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return
				}
			}
			select {
			case jobs <- job{due: due}:
			case <-ctx.Done():
				return
			}
		}
	}()

	type workerResult struct {
		kinds map[Kind]*samples
		last  time.Time
	}
	results := make([]workerResult, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range cfg.Concurrency {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+2))
		wg.Go(func() {
			r := workerResult{kinds: map[Kind]*samples{}}
			total := cfg.Mix.total()
			do := func(due time.Time) {
				req := w.build(cfg.Mix.pick(rng.IntN(total)), rng)
				_, failure := w.send(ctx, req)
				done := time.Now()
				if due.Before(measureFrom) || ctx.Err() != nil {
					return
				}
				s := r.kinds[req.kind]
				if s == nil {
					s = &samples{}
					r.kinds[req.kind] = s
				}
				s.add(done.Sub(due), failure)
				r.last = done
			}
			if cfg.Rate > 0 {
				for j := range jobs {
					do(j.due)
				}
			} else {
				for now := time.Now(); now.Before(end) && ctx.Err() == nil; now = time.Now() {
					do(now)
				}
			}
			results[i] = r
		})
	}
	wg.Wait()

	res := &Result{Target: strings.Join(w.targets, ","), Dialect: cfg.Dialect, Mix: cfg.Mix.String(), Rate: cfg.Rate,
		Concurrency: cfg.Concurrency, Duration: cfg.Duration, Missed: missed, samples: map[Kind]*samples{}}
	last := measureFrom
	for _, r := range results {
		for k, s := range r.kinds {
			if res.samples[k] == nil {
				res.samples[k] = &samples{}
			}
			res.samples[k].merge(s)
		}
		if r.last.After(last) {
			last = r.last
		}
	}
	res.Window = max(last.Sub(measureFrom), cfg.Duration)
	res.summarize()
	return res
}

func (r *Result) summarize() {
	r.Kinds = map[Kind]Stats{}
	all := &samples{}
	for k, s := range r.samples {
		r.Kinds[k] = s.stats(r.Window)
		all.merge(s)
	}
	r.All = all.stats(r.Window)
}

// Merge adds another run of the same configuration (a later round) to r.
func (r *Result) Merge(o *Result) {
	for k, s := range o.samples {
		if r.samples[k] == nil {
			r.samples[k] = &samples{}
		}
		r.samples[k].merge(s)
	}
	r.Window += o.Window
	r.Missed += o.Missed
	r.summarize()
}

func (r *Result) String() string {
	return fmt.Sprintf("%s %s mix %s rate %.0f/s concurrency %d", r.Dialect, r.Target, r.Mix, r.Rate, r.Concurrency)
}
