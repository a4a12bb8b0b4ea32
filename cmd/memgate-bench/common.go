package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/memgate/memgate/bench/load"
	"github.com/memgate/memgate/bench/sidecar"
)

// newFlagSet is a subcommand's flag set: errors are returned, usage goes to
// stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("memgate-bench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// noArgs is the Exec of a subcommand that takes flags only.
func noArgs(name string, exec func(context.Context) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("%s takes no arguments, got %q", name, args)
		}
		return exec(ctx)
	}
}

// show writes v as JSON with -json, else as text.
func show(w io.Writer, asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	text(w)
	return nil
}

// workloadFlags are the flags load and writepath share: the sidecar to
// start, where it and the baseline keep their data, the workload's shape
// and -json.
type workloadFlags struct {
	bin, dataDir, baseDir string
	dialect               string
	duration, warmup      time.Duration
	subjects, summary     int
	seed                  uint64
	jsonOut               bool
}

// workloadUsage is what load and writepath say, and default, differently
// for the shared flags.
type workloadUsage struct {
	sidecar, dataDir string // help of -sidecar and -data-dir
	duration         time.Duration
	durationHelp     string
	warmup           time.Duration
	subjects         string // help of -subjects
}

func (w *workloadFlags) register(fs *flag.FlagSet, u workloadUsage) {
	fs.StringVar(&w.bin, "sidecar", "", u.sidecar)
	fs.StringVar(&w.dataDir, "data-dir", "", u.dataDir)
	fs.StringVar(&w.baseDir, "baseline-dir", "", "the baseline's Badger directory (default: a temporary one); put it on the sidecar's disk")
	fs.StringVar(&w.dialect, "dialect", "native", "API to drive: native or mem0")
	fs.DurationVar(&w.duration, "duration", u.duration, u.durationHelp)
	fs.DurationVar(&w.warmup, "warmup", u.warmup, "unmeasured time before each measured run")
	fs.IntVar(&w.subjects, "subjects", 64, u.subjects)
	fs.IntVar(&w.summary, "summary-bytes", 160, "length of each written memory's text")
	fs.Uint64Var(&w.seed, "seed", 1, "random seed of the workload")
	fs.BoolVar(&w.jsonOut, "json", false, "print the result as JSON")
}

// config is the workload the flags describe, for target.
func (w *workloadFlags) config(target string) load.Config {
	return load.Config{Target: target, Dialect: load.Dialect(w.dialect), Duration: w.duration, Warmup: w.warmup,
		Subjects: w.subjects, SummaryBytes: w.summary, Seed: w.seed}
}

// startSidecar starts a binary on dataDir (a temporary directory when
// empty), says on log where it listens, and returns a cleanup that stops
// it and removes what it made.
func startSidecar(ctx context.Context, bin, dataDir string, log io.Writer, args ...string) (*sidecar.Process, func(), error) {
	remove := func() {}
	if dataDir == "" {
		dir, err := os.MkdirTemp("", "memgate-bench-")
		if err != nil {
			return nil, nil, err
		}
		dataDir, remove = dir, func() { os.RemoveAll(dir) }
	}
	p, err := sidecar.Start(ctx, sidecar.Options{Binary: bin, DataDir: dataDir, Args: args})
	if err != nil {
		remove()
		return nil, nil, err
	}
	fmt.Fprintf(log, "started %s: agent %s, ready in %s\n", bin, p.Agent, p.Ready.Round(time.Millisecond))
	return p, func() {
		p.Stop(10 * time.Second)
		remove()
	}, nil
}
