package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/bench/load"
)

func loadCommand(stdout, stderr io.Writer) *ffcli.Command {
	fs := newFlagSet("load", stderr)
	var wf workloadFlags
	wf.register(fs, workloadUsage{
		sidecar:  "instead of -target: start this sidecar binary on a fresh data directory",
		dataDir:  "with -sidecar: its data directory (default: a temporary one, removed after)",
		duration: 30 * time.Second, durationHelp: "measured time per round",
		warmup:   3 * time.Second,
		subjects: "subjects the load spreads over",
	})
	var (
		target      = fs.String("target", "", "agent listener of a running sidecar (e.g. http://127.0.0.1:7600)")
		mix         = fs.String("mix", "write=100", "operation mix: write (low-risk), override (parked), read, search, e.g. write=70,override=10,read=10,search=10")
		rate        = fs.Float64("rate", 1000, "requests per second to offer; 0 = closed loop (each worker sends as soon as it gets an answer)")
		concurrency = fs.Int("concurrency", 32, "requests in flight at most (workers)")
		baseline    = fs.Bool("baseline", true, "measure a bare HTTP handler doing the same durable Badger write in the same run")
		rounds      = fs.Int("rounds", 1, "alternate memgate and baseline runs this many times and pool the samples")

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
		Exec: noArgs("load", func(ctx context.Context) error {
			m, err := load.ParseMix(*mix)
			if err != nil {
				return err
			}
			cfg := wf.config(*target)
			cfg.Mix, cfg.Rate, cfg.Concurrency = m, *rate, *concurrency
			if *store != "" || *pgCluster {
				fl := &fleetLoad{bin: wf.bin, dataDir: wf.dataDir, withBaseline: *baseline, baselineOnly: *baseOnly,
					rounds: *rounds, cfg: cfg, log: stderr, baselineBytes: *baseBytes}
				if err := fl.check(ctx, *store, *pgCluster, *target, *instances); err != nil {
					return err
				}
				if fl.server, err = openPGServer(ctx, *store, *pgCluster, stderr); err != nil {
					return err
				}
				defer fl.server.Close()
				runs, err := fl.run(ctx)
				if jerr := show(stdout, wf.jsonOut, runs, func(w io.Writer) { printFleet(w, runs) }); jerr != nil {
					return errors.Join(err, jerr)
				}
				return err
			}
			if *instances != "1" || *baseOnly {
				return errors.New("-instances and -baseline-only need -store or -pg-cluster (a fleet shares a PostgreSQL database)")
			}
			if (*target == "") == (wf.bin == "") {
				return errors.New("give -target (a running sidecar) or -sidecar (a binary to start)")
			}
			if wf.bin != "" {
				p, cleanup, err := startSidecar(ctx, wf.bin, wf.dataDir, stderr)
				if err != nil {
					return err
				}
				defer cleanup()
				cfg.Target = p.Agent
			}
			if !*baseline {
				res, err := load.Run(ctx, cfg)
				if err != nil {
					return err
				}
				return show(stdout, wf.jsonOut, res, func(w io.Writer) { res.Print(w, "memgate") })
			}
			cmp, err := load.RunCompared(ctx, load.CompareConfig{Config: cfg, BaselineDir: wf.baseDir, Rounds: *rounds})
			if err != nil {
				return err
			}
			return show(stdout, wf.jsonOut, cmp, cmp.Print)
		}),
	}
}
