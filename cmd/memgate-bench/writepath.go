package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/bench/load"
)

func writePathCommand(stdout, stderr io.Writer) *ffcli.Command {
	fs := flag.NewFlagSet("memgate-bench writepath", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		bin      = fs.String("sidecar", "", "the sidecar binary to start on a fresh data directory (required)")
		dataDir  = fs.String("data-dir", "", "its data directory (default: a temporary one, removed after)")
		baseDir  = fs.String("baseline-dir", "", "the baseline's Badger directory (default: a temporary one); put it on the sidecar's disk")
		runs     = fs.Int("runs", 5, "runs, each a single writer and then many writers, memgate and the bare handler alternated")
		writers  = fs.Int("writers", 32, "the many writers' count")
		duration = fs.Duration("duration", 10*time.Second, "measured time of each memgate or baseline run")
		warmup   = fs.Duration("warmup", 2*time.Second, "unmeasured time before each measured run")
		subjects = fs.Int("subjects", 64, "subjects the writes spread over")
		summary  = fs.Int("summary-bytes", 160, "length of each written memory's text")
		dialect  = fs.String("dialect", "native", "API to drive: native or mem0")
		seed     = fs.Uint64("seed", 1, "random seed of the workload")
		jsonOut  = fs.Bool("json", false, "print the result as JSON")
	)
	return &ffcli.Command{
		Name:       "writepath",
		ShortUsage: "memgate-bench writepath -sidecar BIN [flags]",
		ShortHelp:  "the write path's three figures against a bare durable write, median of several runs",
		LongHelp: "Starts the sidecar and measures, -runs times, low-risk writes in a closed loop against a bare\n" +
			"HTTP handler doing the same durable Badger write, alternated (the baseline first in every other\n" +
			"run): a single writer's p50 ratio, -writers writers' throughput ratio, and policy's share of a\n" +
			"write's p50 (the sidecar's policy evaluation histogram over the single writer's run: mean cost\n" +
			"per write over memgate's p50) with the evaluation p99 at -writers writers (the bucket bound).\n" +
			"Prints each run and the median of each figure.",
		FlagSet: fs,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("writepath takes no arguments, got %q", args)
			}
			if *bin == "" {
				return errors.New("give -sidecar, the binary to measure")
			}
			if *runs < 1 || *writers < 2 {
				return errors.New("-runs must be at least 1 and -writers at least 2")
			}
			p, cleanup, err := startSidecar(ctx, *bin, *dataDir)
			if err != nil {
				return err
			}
			defer cleanup()
			fmt.Fprintf(stderr, "started %s: agent %s, ready in %s\n", *bin, p.Agent, p.Ready.Round(time.Millisecond))
			cfg := load.WritePathConfig{
				Config: load.Config{Target: p.Agent, Dialect: load.Dialect(*dialect), Duration: *duration, Warmup: *warmup,
					Subjects: *subjects, SummaryBytes: *summary, Seed: *seed},
				Runs: *runs, Writers: *writers, BaselineDir: *baseDir, MetricsURL: p.Admin + "/metrics", Token: p.Token,
			}
			res, err := load.RunWritePath(ctx, cfg, stderr)
			if err != nil {
				return err
			}
			if *jsonOut {
				return json.NewEncoder(stdout).Encode(res)
			}
			res.Print(stdout, *writers)
			return nil
		},
	}
}
