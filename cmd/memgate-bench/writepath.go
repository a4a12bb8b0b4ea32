package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/bench/load"
)

func writePathCommand(stdout, stderr io.Writer) *ffcli.Command {
	fs := newFlagSet("writepath", stderr)
	var wf workloadFlags
	wf.register(fs, workloadUsage{
		sidecar:  "the sidecar binary to start on a fresh data directory (required)",
		dataDir:  "its data directory (default: a temporary one, removed after)",
		duration: 10 * time.Second, durationHelp: "measured time of each memgate or baseline run",
		warmup:   2 * time.Second,
		subjects: "subjects the writes spread over",
	})
	var (
		runs      = fs.Int("runs", 5, "runs, each a single writer and then many writers, memgate and the bare handler alternated")
		writers   = fs.Int("writers", 32, "the many writers' count")
		policyDir = fs.String("policy-dir", "", "the sidecar's --policy-dir (default: its built-in policy); a policy that applies every write without reading it measures the path without policy's cost")
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
		Exec: noArgs("writepath", func(ctx context.Context) error {
			if wf.bin == "" {
				return errors.New("give -sidecar, the binary to measure")
			}
			if *runs < 1 || *writers < 2 {
				return errors.New("-runs must be at least 1 and -writers at least 2")
			}
			var args []string
			if *policyDir != "" {
				args = append(args, "--policy-dir", *policyDir)
			}
			p, cleanup, err := startSidecar(ctx, wf.bin, wf.dataDir, stderr, args...)
			if err != nil {
				return err
			}
			defer cleanup()
			cfg := load.WritePathConfig{Config: wf.config(p.Agent), Runs: *runs, Writers: *writers,
				BaselineDir: wf.baseDir, MetricsURL: p.Admin + "/metrics", Token: p.Token}
			res, err := load.RunWritePath(ctx, cfg, stderr)
			if err != nil {
				return err
			}
			return show(stdout, wf.jsonOut, res, func(w io.Writer) { res.Print(w, *writers) })
		}),
	}
}
