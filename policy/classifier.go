package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgate/memgate/memory"
)

// Options configure a Classifier. The zero value serves the embedded default
// policy.
type Options struct {
	// Dir is an operator's policy directory (--policy-dir), served instead
	// of the default and re-read every PollInterval.
	Dir string
	// PollInterval is how often Dir is checked for changes (default 2s).
	PollInterval time.Duration
	// Bundle pulls the policy from an OPA bundle server (--policy-bundle)
	// instead; it excludes Dir.
	Bundle BundleOptions
	// Logger receives reloads and refusals (default slog.Default()).
	Logger *slog.Logger
	// OnEval, if set, is called after every evaluation with its latency and
	// error (see ErrorReason); metrics hook in here.
	OnEval func(d time.Duration, err error)
	// OnReload, if set, is called after every load attempt of a new policy:
	// with its revision and nil when it took effect, with the error when it
	// was refused and the previous policy stays.
	OnReload func(revision string, err error)
}

// Stats counts what a Classifier did since Open.
type Stats struct {
	Evaluations    int64 `json:"evaluations"`
	EvalErrors     int64 `json:"evalErrors"`
	Reloads        int64 `json:"reloads"`
	ReloadFailures int64 `json:"reloadFailures"`
}

// DefaultPollInterval is how often a policy directory is checked.
const DefaultPollInterval = 2 * time.Second

// Classifier is the sidecar's policy: it evaluates the policy in force and
// replaces it, without a restart, when its directory or bundle changes. A
// change that does not compile or fails its own Rego tests is refused and the
// previous policy stays. It implements memory.Classifier.
type Classifier struct {
	opts Options
	log  *slog.Logger

	current atomic.Pointer[Compiled]

	// reloadMu serializes loads; lastFailure is the revision (or error)
	// refused last, so a broken file is reported once, not every poll.
	reloadMu    sync.Mutex
	lastFailure string

	cancel context.CancelFunc
	done   sync.WaitGroup
	bundle *bundleSource

	evals, evalErrors, reloads, reloadFailures atomic.Int64
}

var (
	_ memory.Classifier  = (*Classifier)(nil)
	_ memory.Placer      = (*Classifier)(nil)
	_ memory.WritePolicy = (*Classifier)(nil)
)

// New returns a Classifier with defaults filled in; Open loads the policy.
func New(opts Options) *Classifier {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Bundle.setDefaults()
	return &Classifier{opts: opts, log: opts.Logger.With("component", "policy")}
}

// Open validates the options, loads the first policy and starts watching
// for changes. A policy directory that does not load is an error; a bundle
// server that cannot be reached is not (the default policy serves until the
// first bundle arrives, and the error is logged and reported to OnReload).
func (c *Classifier) Open(ctx context.Context) error {
	if c.cancel != nil {
		return errors.New("policy: already open")
	}
	if c.opts.Dir != "" && c.opts.Bundle.URL != "" {
		return errors.New("policy: a policy directory and a policy bundle exclude each other")
	}
	var bundle *bundleSource
	if c.opts.Bundle.URL != "" {
		var err error
		if bundle, err = newBundleSource(c.opts.Bundle, c.installBundle); err != nil {
			return fmt.Errorf("policy bundle: %w", err)
		}
	}
	if c.opts.Dir != "" {
		if err := c.reloadDir(ctx); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
	} else if err := c.install(ctx, DefaultFiles(), "default", false); err != nil {
		return fmt.Errorf("policy: default policy: %w", err) // a build defect
	}

	loopCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	switch {
	case c.opts.Dir != "":
		c.done.Add(1)
		go c.pollDir(loopCtx)
	case bundle != nil:
		c.bundle = bundle
		_ = bundle.trigger(ctx) // a failure is logged; the default serves until a bundle arrives
		c.done.Add(1)
		go func() {
			defer c.done.Done()
			bundle.poll(loopCtx)
		}()
	}
	return nil
}

// Close stops watching for changes. Classify keeps working with the policy
// in force, so writes in flight during shutdown are still decided.
func (c *Classifier) Close(ctx context.Context) error {
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	stopped := make(chan struct{})
	go func() {
		c.done.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("policy: close: %w", ctx.Err())
	}
}

// Classify evaluates the policy in force. Errors (an undefined, ambiguous or
// malformed decision, an evaluation error, ctx expiring) are returned for
// the governor to fail closed on, and counted.
func (c *Classifier) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	var d memory.Decision
	err := c.observe(func(p *Compiled) (err error) {
		d, err = p.Classify(ctx, in)
		return err
	})
	return d, err
}

// Place places free text with the policy in force (see Compiled.Place).
func (c *Classifier) Place(ctx context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	var pl memory.Placement
	err := c.observe(func(p *Compiled) (err error) {
		pl, err = p.Place(ctx, in)
		return err
	})
	return pl, err
}

// PlaceAndClassify places and decides a write in one query with the policy
// in force (see Compiled.PlaceAndClassify). A policy without a write
// document answers memory.ErrNoWriteQuery, and that is not counted as an
// evaluation.
func (c *Classifier) PlaceAndClassify(ctx context.Context, in *memory.PolicyInput) (memory.Placement, memory.Decision, error) {
	var pl memory.Placement
	var d memory.Decision
	if p := c.current.Load(); p != nil && p.write == nil {
		return pl, memory.Decision{Revision: p.Revision()}, memory.ErrNoWriteQuery
	}
	err := c.observe(func(p *Compiled) (err error) {
		pl, d, err = p.PlaceAndClassify(ctx, in)
		return err
	})
	return pl, d, err
}

// observe runs one evaluation with the policy in force, counting it and
// reporting its latency and error to OnEval.
func (c *Classifier) observe(eval func(*Compiled) error) error {
	start := time.Now()
	var err error
	if p := c.current.Load(); p == nil {
		err = errors.New("policy: not open")
	} else {
		err = eval(p)
	}
	c.evals.Add(1)
	if err != nil {
		c.evalErrors.Add(1)
	}
	if c.opts.OnEval != nil {
		c.opts.OnEval(time.Since(start), err)
	}
	return err
}

// Revision is the content hash of the policy in force ("" before Open).
func (c *Classifier) Revision() string {
	if p := c.current.Load(); p != nil {
		return p.Revision()
	}
	return ""
}

// Current returns the policy in force (nil before Open).
func (c *Classifier) Current() *Compiled { return c.current.Load() }

// Stats returns counters since Open.
func (c *Classifier) Stats() Stats {
	return Stats{Evaluations: c.evals.Load(), EvalErrors: c.evalErrors.Load(),
		Reloads: c.reloads.Load(), ReloadFailures: c.reloadFailures.Load()}
}

// Reload checks the policy source now (e.g. on SIGHUP) instead of waiting
// for the next poll. It returns the refusal if the new policy was refused;
// nil if it took effect or nothing changed.
func (c *Classifier) Reload(ctx context.Context) error {
	switch {
	case c.opts.Dir != "":
		return c.reloadDir(ctx)
	case c.bundle != nil:
		return c.bundle.trigger(ctx)
	}
	return nil
}

// install compiles files and, if they pass, makes them the policy in force.
// A refused policy leaves the previous one in force.
func (c *Classifier) install(ctx context.Context, files FileSet, source string, runTests bool) error {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	rev := files.Revision()
	if cur := c.current.Load(); cur != nil && cur.Revision() == rev {
		c.lastFailure = ""
		return nil
	}
	if rev == c.lastFailure {
		return fmt.Errorf("policy %s from %s was already refused", short(rev), source)
	}
	p, err := compile(ctx, files, compileConfig{runTests: runTests})
	if err != nil {
		if ctx.Err() != nil { // a shutdown or timeout is no verdict on the policy
			return fmt.Errorf("load policy %s from %s: %w", short(rev), source, err)
		}
		c.lastFailure = rev
		c.refused(rev, source, err)
		return fmt.Errorf("refused policy %s from %s: %w", short(rev), source, err)
	}
	prev := c.Revision()
	c.current.Store(p)
	c.lastFailure = ""
	c.reloads.Add(1)
	c.log.Info("policy in force", "revision", rev, "previous", prev, "source", source)
	if c.opts.OnReload != nil {
		c.opts.OnReload(rev, nil)
	}
	return nil
}

// refused logs and counts a policy that did not take effect.
func (c *Classifier) refused(rev, source string, err error) {
	c.reloadFailures.Add(1)
	c.log.Error("policy refused; the previous policy stays in force",
		"revision", rev, "source", source, "in_force", c.Revision(), "err", err)
	if c.opts.OnReload != nil {
		c.opts.OnReload(rev, err)
	}
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
