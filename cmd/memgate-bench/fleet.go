package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/bench/load"
	"github.com/memgate/memgate/bench/sidecar"
	"github.com/memgate/memgate/internal/pgcluster"
)

// parseInstances reads -instances: "2", or a list "1,2,4" measured in turn.
func parseInstances(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("-instances %q: want a number of sidecars from 1 to 64, or a list of them like 1,2,4", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// pgServer is where a fleet run gets its databases: a throwaway cluster
// (-pg-cluster) or the server of a URL (-store). Each run creates fresh
// databases there and drops them after.
type pgServer struct {
	url     string // a database on the server to connect to for CREATE DATABASE
	cluster *pgcluster.Cluster
	nonce   string
}

func openPGServer(ctx context.Context, storeURL string, startCluster bool, log io.Writer) (*pgServer, error) {
	s := &pgServer{url: storeURL, nonce: strconv.FormatInt(time.Now().UnixNano()%(1<<40), 36)}
	if startCluster {
		c, err := startPGCluster(log)
		if err != nil {
			return nil, err
		}
		s.cluster, s.url = c, c.URL("postgres")
	}
	return s, nil
}

// database creates a fresh database for one part of a run.
func (s *pgServer) database(ctx context.Context, part string) (string, func(), error) {
	return createDatabase(ctx, s.url, "memgate_bench_"+s.nonce+"_"+part)
}

// restart restarts the cluster's server as a crash would; only a cluster
// the tool started can be restarted.
func (s *pgServer) restart(ctx context.Context) error {
	if s.cluster == nil {
		return errors.New("only a cluster started with -pg-cluster can be restarted")
	}
	return s.cluster.Restart()
}

func (s *pgServer) Close() error {
	if s.cluster != nil {
		return s.cluster.Close()
	}
	return nil
}

// checkStoreURL accepts the URLs that select the PostgreSQL store.
func checkStoreURL(u string) error {
	if u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return fmt.Errorf("-store %q: want a postgres:// or postgresql:// URL", u)
	}
	return nil
}

// fleetLoad is the load command on PostgreSQL: for each fleet size, N
// sidecars on one fresh database against N bare handlers doing a low-risk
// write's transaction on another fresh database, alternated as -rounds asks.
type fleetLoad struct {
	server       *pgServer
	bin          string
	dataDir      string // root of the instances' data directories; "" = temporary
	counts       []int
	withBaseline bool
	baselineOnly bool
	rounds       int
	cfg          load.Config
	log          io.Writer
	// baselineBytes is the stored value's size when no sidecar measured it.
	baselineBytes int
}

// check refuses flag combinations the fleet mode cannot honour, and a
// sidecar without --store, before any cluster or process starts.
func (fl *fleetLoad) check(ctx context.Context, store string, cluster bool, target, instances string) error {
	if store != "" && cluster {
		return errors.New("give -store URL or -pg-cluster, not both")
	}
	if err := checkStoreURL(store); err != nil {
		return err
	}
	if target != "" {
		return errors.New("-target drives one running sidecar; with -store or -pg-cluster the tool starts the fleet itself (-sidecar BIN)")
	}
	var err error
	if fl.counts, err = parseInstances(instances); err != nil {
		return err
	}
	if fl.baselineOnly {
		if fl.bin != "" {
			return errors.New("-baseline-only runs no sidecar; drop -sidecar")
		}
		return nil
	}
	if fl.bin == "" {
		return errors.New("-sidecar BIN is required with -store or -pg-cluster (or -baseline-only)")
	}
	return sidecar.CheckStoreFlag(ctx, fl.bin)
}

// FleetRun is one fleet size's measurement. Memgate or Baseline is nil when
// the run measured only the other.
type FleetRun struct {
	Instances int `json:"instances"`
	*load.Comparison
	// BaselineRetries counts the baseline's transactions run again after a
	// serialization failure.
	BaselineRetries int64 `json:"baselineRetries"`
}

func (fl *fleetLoad) run(ctx context.Context) ([]FleetRun, error) {
	var runs []FleetRun
	for i, n := range fl.counts {
		r, err := fl.measure(ctx, fmt.Sprintf("run%d_n%d", i+1, n), n)
		if r != nil {
			runs = append(runs, *r)
		}
		if err != nil {
			return runs, fmt.Errorf("%d instances: %w", n, err)
		}
	}
	return runs, nil
}

// measure runs one fleet size; name tells its databases and data
// directories from those of other runs (a list may repeat a size).
func (fl *fleetLoad) measure(ctx context.Context, name string, n int) (*FleetRun, error) {
	run := &FleetRun{Instances: n}
	var base *load.PGBaseline
	startBaseline := func(ctx context.Context, recordBytes int) (load.BaselineTarget, error) {
		dbURL, drop, err := fl.server.database(ctx, name+"_baseline")
		if err != nil {
			return nil, err
		}
		if base, err = load.StartPGBaseline(ctx, dbURL, n, recordBytes); err != nil {
			drop()
			return nil, err
		}
		return dropOnClose{base, drop}, nil
	}
	against := fmt.Sprintf("%d bare PostgreSQL handlers, each write one SERIALIZABLE transaction", n)
	defer func() {
		if base != nil {
			run.BaselineRetries = base.Retries()
		}
	}()

	if fl.baselineOnly {
		b, err := startBaseline(ctx, fl.baselineBytes)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		cfg := fl.cfg
		urls := b.Targets()
		cfg.Target, cfg.Targets, cfg.Mix = urls[0], urls[1:], load.Mix{load.KindWrite: 1}
		res, err := load.Run(ctx, cfg)
		run.Comparison = &load.Comparison{Baseline: res, Against: against}
		return run, err
	}

	dbURL, drop, err := fl.server.database(ctx, name+"_memgate")
	if err != nil {
		return nil, err
	}
	defer drop()
	root := fl.dataDir
	if root == "" {
		if root, err = os.MkdirTemp("", "memgate-bench-fleet-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
	} else {
		root = filepath.Join(root, name)
	}
	fleet, err := sidecar.StartFleet(ctx, sidecar.Options{Binary: fl.bin, DataDir: root, Store: dbURL}, n)
	if err != nil {
		return nil, err
	}
	defer fleet.Stop(10 * time.Second)
	fmt.Fprintf(fl.log, "started %d sidecars on one database: %s\n", n, strings.Join(fleet.Agents(), " "))
	cfg := fl.cfg
	agents := fleet.Agents()
	cfg.Target, cfg.Targets = agents[0], agents[1:]
	if !fl.withBaseline {
		res, err := load.Run(ctx, cfg)
		run.Comparison = &load.Comparison{Memgate: res}
		return run, err
	}
	run.Comparison, err = load.RunCompared(ctx, load.CompareConfig{Config: cfg, Rounds: fl.rounds,
		StartBaseline: startBaseline, Against: against})
	return run, err
}

// dropOnClose drops the baseline's database once the baseline is closed.
type dropOnClose struct {
	load.BaselineTarget
	drop func()
}

func (d dropOnClose) Close() error {
	err := d.BaselineTarget.Close()
	d.drop()
	return err
}

// printFleet writes each run and, for several fleet sizes, a summary.
func printFleet(w io.Writer, runs []FleetRun) {
	for _, r := range runs {
		fmt.Fprintf(w, "== %d instance(s) on one PostgreSQL database\n", r.Instances)
		switch {
		case r.Memgate != nil && r.Baseline != nil:
			r.Comparison.Print(w)
		case r.Memgate != nil:
			r.Memgate.Print(w, "memgate")
		case r.Baseline != nil:
			r.Baseline.Print(w, "baseline")
		}
		if r.Baseline != nil {
			fmt.Fprintf(w, "baseline: %s; %d transactions retried after a serialization failure\n", r.Against, r.BaselineRetries)
		}
	}
	if len(runs) < 2 {
		return
	}
	fmt.Fprintln(w, "low-risk writes by fleet size (memgate | baseline | memgate/baseline):")
	fmt.Fprintf(w, "  %-9s %9s %9s %9s | %9s %9s %9s | %6s %6s %6s\n", "instances", "p50", "p99", "ok/s", "p50", "p99", "ok/s", "p50", "p99", "ok/s")
	cells := func(r *load.Result) string {
		if r == nil {
			return fmt.Sprintf("%9s %9s %9s", "-", "-", "-")
		}
		s := r.Kinds[load.KindWrite]
		return fmt.Sprintf("%9s %9s %9.1f", fmtMS(s.P50), fmtMS(s.P99), s.Throughput)
	}
	for _, r := range runs {
		ratios := fmt.Sprintf("%6s %6s %6s", "-", "-", "-")
		if r.Memgate != nil && r.Baseline != nil {
			thr := fmt.Sprintf("%6s", "-") // not comparable: the mix is not writes only
			if r.Throughput > 0 {
				thr = fmt.Sprintf("%5.2f×", r.Throughput)
			}
			ratios = fmt.Sprintf("%5.2f× %5.2f× %s", r.P50, r.P99, thr)
		}
		fmt.Fprintf(w, "  %-9d %s | %s | %s\n", r.Instances, cells(r.Memgate), cells(r.Baseline), ratios)
	}
}

func fmtMS(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
