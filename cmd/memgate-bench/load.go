package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/bench/load"
	"github.com/memgate/memgate/bench/sidecar"
)

func loadCommand(stdout, stderr io.Writer) *ffcli.Command {
	fs := flag.NewFlagSet("memgate-bench load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		target      = fs.String("target", "", "agent listener of a running sidecar (e.g. http://127.0.0.1:7600)")
		bin         = fs.String("sidecar", "", "instead of -target: start this sidecar binary on a fresh data directory")
		dataDir     = fs.String("data-dir", "", "with -sidecar: its data directory (default: a temporary one, removed after)")
		dialect     = fs.String("dialect", "native", "API to drive: native or mem0")
		mix         = fs.String("mix", "write=100", "operation mix: write (low-risk), override (parked), read, search, e.g. write=70,override=10,read=10,search=10")
		rate        = fs.Float64("rate", 1000, "requests per second to offer; 0 = closed loop (each worker sends as soon as it gets an answer)")
		concurrency = fs.Int("concurrency", 32, "requests in flight at most (workers)")
		duration    = fs.Duration("duration", 30*time.Second, "measured time per round")
		warmup      = fs.Duration("warmup", 3*time.Second, "unmeasured time before each measured run")
		subjects    = fs.Int("subjects", 64, "subjects the load spreads over")
		summary     = fs.Int("summary-bytes", 160, "length of each written memory's text")
		baseline    = fs.Bool("baseline", true, "measure a bare HTTP handler doing the same durable Badger write in the same run")
		baseDir     = fs.String("baseline-dir", "", "the baseline's Badger directory (default: a temporary one); put it on the sidecar's disk")
		rounds      = fs.Int("rounds", 1, "alternate memgate and baseline runs this many times and pool the samples")
		seed        = fs.Uint64("seed", 1, "random seed of the workload")
		jsonOut     = fs.Bool("json", false, "print the result as JSON")

		store     = fs.String("store", "", "run the sidecars on this PostgreSQL server (a postgres:// URL of any database the user may connect to there; a fresh database per run is created and dropped); the baseline is then a bare PostgreSQL transaction")
		pgCluster = fs.Bool("pg-cluster", false, "like -store, on a throwaway PostgreSQL cluster started for the run (initdb and pg_ctl from /usr/lib/postgresql/*/bin or PATH; as user postgres when root)")
		instances = fs.String("instances", "1", "with -store or -pg-cluster: sidecars sharing the one database (the load goes round robin over them, and the baseline runs as many handlers); a list such as 1,2,4 measures each in turn")
		baseOnly  = fs.Bool("baseline-only", false, "with -store or -pg-cluster: measure only the bare PostgreSQL handlers, no sidecar")
		baseBytes = fs.Int("baseline-record-bytes", 900, "with -baseline-only: the size of the stored value (with a sidecar, the size of its answer to a write: 892 bytes for the native low-risk write on Badger)")
	)
	return &ffcli.Command{
		Name:       "load",
		ShortUsage: "memgate-bench load (-target URL | -sidecar BIN [-store URL | -pg-cluster] [-instances N]) [flags]",
		ShortHelp:  "throughput and latency percentiles of a sidecar, and memgate/baseline ratios",
		LongHelp: "Drives a sidecar over HTTP with a rate (open loop: latency counts from when a request was due)\n" +
			"or closed-loop concurrency, a mix of operations and a duration, and prints throughput and\n" +
			"latency percentiles per kind. With -baseline (the default) it also runs a bare HTTP handler\n" +
			"doing the same durable Badger write (one transaction, SyncWrites, a value the size of memgate's\n" +
			"record) at the same rate and concurrency, and prints memgate/baseline for the writes.\n\n" +
			"With -store or -pg-cluster it runs -instances sidecars on one PostgreSQL database, spreads the\n" +
			"requests over them, and measures against as many bare handlers that do a low-risk write's\n" +
			"transaction (SERIALIZABLE: read the slot and its head, insert the record, update the slot,\n" +
			"append an event) on a fresh database of the same server, alternated in the same run.",
		FlagSet: fs,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("load takes no arguments, got %q", args)
			}
			m, err := load.ParseMix(*mix)
			if err != nil {
				return err
			}
			cfg := load.Config{Target: *target, Dialect: load.Dialect(*dialect), Mix: m, Rate: *rate, Concurrency: *concurrency,
				Duration: *duration, Warmup: *warmup, Subjects: *subjects, SummaryBytes: *summary, Seed: *seed}
			if *store != "" || *pgCluster {
				fl := &fleetLoad{bin: *bin, dataDir: *dataDir, withBaseline: *baseline, baselineOnly: *baseOnly,
					rounds: *rounds, cfg: cfg, log: stderr, baselineBytes: *baseBytes}
				if err := fl.check(ctx, *store, *pgCluster, *target, *instances); err != nil {
					return err
				}
				if fl.server, err = openPGServer(ctx, *store, *pgCluster, stderr); err != nil {
					return err
				}
				defer fl.server.Close()
				runs, err := fl.run(ctx)
				if *jsonOut {
					if jerr := json.NewEncoder(stdout).Encode(runs); jerr != nil {
						return errors.Join(err, jerr)
					}
				} else {
					printFleet(stdout, runs)
				}
				return err
			}
			if *instances != "1" || *baseOnly {
				return errors.New("-instances and -baseline-only need -store or -pg-cluster (a fleet shares a PostgreSQL database)")
			}
			if (*target == "") == (*bin == "") {
				return errors.New("give -target (a running sidecar) or -sidecar (a binary to start)")
			}
			if *bin != "" {
				p, cleanup, err := startSidecar(ctx, *bin, *dataDir)
				if err != nil {
					return err
				}
				defer cleanup()
				*target = p.Agent
				fmt.Fprintf(stderr, "started %s: agent %s, ready in %s\n", *bin, p.Agent, p.Ready.Round(time.Millisecond))
			}
			cfg.Target = *target
			if !*baseline {
				res, err := load.Run(ctx, cfg)
				if err != nil {
					return err
				}
				if *jsonOut {
					return json.NewEncoder(stdout).Encode(res)
				}
				res.Print(stdout, "memgate")
				return nil
			}
			cmp, err := load.RunCompared(ctx, load.CompareConfig{Config: cfg, BaselineDir: *baseDir, Rounds: *rounds})
			if err != nil {
				return err
			}
			if *jsonOut {
				return json.NewEncoder(stdout).Encode(cmp)
			}
			cmp.Print(stdout)
			return nil
		},
	}
}

// startSidecar starts a binary on dataDir (a temporary directory when
// empty) and returns a cleanup that stops it and removes what it made.
func startSidecar(ctx context.Context, bin, dataDir string) (*sidecar.Process, func(), error) {
	remove := func() {}
	if dataDir == "" {
		dir, err := os.MkdirTemp("", "memgate-bench-")
		if err != nil {
			return nil, nil, err
		}
		dataDir, remove = dir, func() { os.RemoveAll(dir) }
	}
	p, err := sidecar.Start(ctx, sidecar.Options{Binary: bin, DataDir: dataDir})
	if err != nil {
		remove()
		return nil, nil, err
	}
	return p, func() {
		p.Stop(10 * time.Second)
		remove()
	}, nil
}
