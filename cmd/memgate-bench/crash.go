package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/bench/crash"
	"github.com/memgate/memgate/bench/sidecar"
)

// checkCrashFleet refuses fleet flags that do not fit together.
func checkCrashFleet(store string, cluster bool, instances int, kill string, restartEvery int) error {
	fleet := store != "" || cluster
	switch {
	case store != "" && cluster:
		return errors.New("give -store URL or -pg-cluster, not both")
	case instances < 1 || instances > 64:
		return fmt.Errorf("-instances %d: want 1 to 64", instances)
	case instances > 1 && !fleet:
		return errors.New("-instances needs -store or -pg-cluster (a fleet shares a PostgreSQL database)")
	case kill != "one" && kill != "all":
		return fmt.Errorf("-kill %q: want one or all", kill)
	case restartEvery < 0:
		return fmt.Errorf("-restart-db-every %d: want 0 (never) or more", restartEvery)
	case restartEvery > 0 && !cluster:
		return errors.New("-restart-db-every needs -pg-cluster: the tool restarts only a cluster it started")
	}
	return checkStoreURL(store)
}

func crashCommand(stdout, stderr io.Writer) *ffcli.Command {
	fs := newFlagSet("crash", stderr)
	var (
		bin            = fs.String("sidecar", "", "the sidecar binary to run and kill (go build -o /tmp/sidecar ./cmd/sidecar)")
		dataDir        = fs.String("data-dir", "", "its data directory (default: a temporary one, removed after)")
		cycles         = fs.Int("cycles", 10, "kill/restart cycles")
		writers        = fs.Int("writers", 4, "concurrent writers")
		reviewers      = fs.Int("reviewers", 2, "concurrent reviewers (approve, reject, roll back)")
		minUp          = fs.Duration("min-uptime", 500*time.Millisecond, "earliest kill after the sidecar is ready")
		maxUp          = fs.Duration("max-uptime", 3*time.Second, "latest kill after the sidecar is ready")
		slots          = fs.Int("slots", 8, "shared slots of each kind the writers contend on")
		seed           = fs.Uint64("seed", 0, "random seed (0: from the clock; the report prints it)")
		ackLog         = fs.String("ack-log", "", "write every acknowledged item to this file as JSON lines")
		jsonOut        = fs.Bool("json", false, "print the report as JSON")
		retention      = fs.Duration("retention", 2*time.Second, "run the sidecars on the default policy with this retention for every layer (policy data memgate_config.retention), so that superseded, rejected and rolled-back versions lose their text under the load; 0 = the built-in policy, retention off (for sidecars that take only whole days)")
		retentionEvery = fs.Duration("retention-interval", 250*time.Millisecond, "with -retention: how often the sidecars run the retention pass (--retention-interval)")

		store       = fs.String("store", "", "run the sidecars on this PostgreSQL server (a postgres:// URL of any database the user may connect to there; a fresh database is created for the run and dropped after)")
		pgCluster   = fs.Bool("pg-cluster", false, "like -store, on a throwaway PostgreSQL cluster started for the run (initdb and pg_ctl; as user postgres when root)")
		instances   = fs.Int("instances", 1, "with -store or -pg-cluster: sidecars sharing the one database; writers and reviewers call them round robin")
		kill        = fs.String("kill", "one", "with several instances: kill one instance at random each cycle (one) or every instance (all)")
		restartDB   = fs.Int("restart-db-every", 0, "with -pg-cluster: after every Nth cycle's kill also restart PostgreSQL (pg_ctl restart -m immediate) and wait for the survivors to be ready again; 0 = never")
		dbUnderLoad = fs.Bool("restart-db-under-load", false, "with -restart-db-every: restart PostgreSQL halfway to the kill while the workers run (writes then answer 503 until it is back; the report counts them as server errors) instead of after the kill")
		dbRecovery  = fs.Duration("db-recovery", time.Minute, "how long the surviving sidecars may take to answer /readyz after a database restart")
	)
	return &ffcli.Command{
		Name:       "crash",
		ShortUsage: "memgate-bench crash -sidecar BIN [-store URL | -pg-cluster] [-instances N] [flags]",
		ShortHelp:  "kill -9 the sidecar under load, restart, verify nothing acknowledged was lost",
		LongHelp: "Runs the sidecar under concurrent writers and reviewers that log every acknowledged write\n" +
			"and decision, kills it with SIGKILL at a random moment, restarts it and verifies that every\n" +
			"acknowledged item is present in the state its acknowledgement promised and that no slot has\n" +
			"two active records. Prints cycles run and items lost; exits 1 if anything was lost.\n\n" +
			"Each cycle also erases a user of its own, and with -retention (on by default) the retention\n" +
			"pass purges old versions while the load runs: every check after a restart also holds active\n" +
			"and pending memories to their acknowledged text, purged versions to their skeleton (ids,\n" +
			"times, decision, salted hash), and verifies the audit chain.\n\n" +
			"With -store or -pg-cluster it runs -instances sidecars on one PostgreSQL database: a write\n" +
			"parked through one instance is approved or rolled back through another, one instance (or\n" +
			"all, -kill all) dies each cycle, and the checks read through a restarted instance.",
		FlagSet: fs,
		Exec: noArgs("crash", func(ctx context.Context) error {
			if *bin == "" {
				return errors.New("-sidecar is required")
			}
			cfg := crash.Config{Binary: *bin, DataDir: *dataDir, Cycles: *cycles, Writers: *writers, Reviewers: *reviewers,
				MinUptime: *minUp, MaxUptime: *maxUp, Slots: *slots, Seed: *seed, Progress: stderr,
				Instances: *instances, StoreRecovery: *dbRecovery, Retention: *retention, RetentionInterval: *retentionEvery}
			if *retention < 0 || *retentionEvery < 0 {
				return errors.New("-retention and -retention-interval: want 0 or more")
			}
			if err := checkCrashFleet(*store, *pgCluster, *instances, *kill, *restartDB); err != nil {
				return err
			}
			if *dbUnderLoad && *restartDB == 0 {
				return errors.New("-restart-db-under-load needs -restart-db-every N")
			}
			if *store != "" || *pgCluster {
				if err := sidecar.CheckStoreFlag(ctx, *bin); err != nil {
					return err
				}
				server, err := openPGServer(ctx, *store, *pgCluster, stderr)
				if err != nil {
					return err
				}
				defer server.Close()
				dbURL, drop, err := server.database(ctx, "crash")
				if err != nil {
					return err
				}
				defer drop()
				cfg.Store, cfg.KillAll = dbURL, *kill == "all"
				if *restartDB > 0 {
					cfg.RestartStore, cfg.RestartStoreEvery, cfg.RestartStoreUnderLoad = server.restart, *restartDB, *dbUnderLoad
				}
			}
			if *ackLog != "" {
				f, err := os.Create(*ackLog)
				if err != nil {
					return err
				}
				defer f.Close()
				cfg.AckLog = f
			}
			rep, err := crash.Run(ctx, cfg)
			if jerr := show(stdout, *jsonOut, rep, rep.Print); jerr != nil {
				return jerr
			}
			if err != nil {
				return err
			}
			if !rep.OK() {
				return errFailed
			}
			return nil
		}),
	}
}
