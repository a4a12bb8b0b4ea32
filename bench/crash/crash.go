// Package crash is memgate's reliability harness: it runs the real sidecar
// binary under concurrent writers and reviewers that log every
// acknowledged write and decision, kills it with SIGKILL at a random
// moment, restarts it, and checks that everything acknowledged is there in
// the state the acknowledgement promised and that no slot has two active
// records (DESIGN §1 rules 1 and 9). It repeats for a number of cycles.
package crash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/memgate/memgate/bench/sidecar"
)

// Config is one harness run.
type Config struct {
	Binary  string // the built cmd/sidecar
	DataDir string // "" = a temporary directory, removed afterwards
	Cycles  int    // kill/restart cycles (default 10)
	Writers int    // concurrent writers (default 4)
	// Reviewers approve, reject and roll back concurrently (default 2).
	Reviewers int
	// The kill comes at a random moment between MinUptime and MaxUptime
	// after the sidecar is ready (defaults 500ms and 2s).
	MinUptime, MaxUptime time.Duration
	// Slots is how many shared slots of each kind writers contend on
	// (default 8): few slots, many supersessions and stale approvals.
	Slots int
	Seed  uint64
	// AckLog, if set, receives every acknowledged item as a JSON line.
	AckLog io.Writer
	// Progress, if set, receives a line per cycle.
	Progress io.Writer
	Env      []string // extra environment for the sidecar
}

func (c *Config) defaults() {
	if c.Cycles <= 0 {
		c.Cycles = 10
	}
	if c.Writers <= 0 {
		c.Writers = 4
	}
	if c.Reviewers < 0 {
		c.Reviewers = 0
	} else if c.Reviewers == 0 {
		c.Reviewers = 2
	}
	if c.MinUptime <= 0 {
		c.MinUptime = 500 * time.Millisecond
	}
	if c.MaxUptime < c.MinUptime {
		c.MaxUptime = max(c.MinUptime, 2*time.Second)
	}
	if c.Slots <= 0 {
		c.Slots = 8
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
}

// Report is what a harness run found.
type Report struct {
	Cycles  int             `json:"cycles"`
	Seed    uint64          `json:"seed"`
	Acked   map[AckKind]int `json:"acked"`
	Checked int             `json:"checked"`    // record checks after restarts
	Slots   int             `json:"slotChecks"` // slot history checks
	Lost    []Loss          `json:"lost"`
	// DoubleActive lists slots seen with more than one active record.
	DoubleActive []string      `json:"doubleActive"`
	Sent         int64         `json:"sent"`
	CutOff       int64         `json:"cutOff"`       // calls the kill left unanswered
	ServerErrors int64         `json:"serverErrors"` // 5xx answers
	Unexpected   int64         `json:"unexpected"`   // 4xx answers the harness never provokes
	Elapsed      time.Duration `json:"elapsed"`
}

// ItemsLost is how many acknowledged records are missing or in a state
// their acknowledgement rules out.
func (r *Report) ItemsLost() int { return len(r.Lost) }

// OK reports whether nothing acknowledged was lost and invariant 1 held.
func (r *Report) OK() bool { return len(r.Lost) == 0 && len(r.DoubleActive) == 0 }

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	total := 0
	for _, n := range r.Acked {
		total += n
	}
	fmt.Fprintf(w, "cycles run: %d (seed %d, %s)\n", r.Cycles, r.Seed, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "acknowledged: %d items: %d applied, %d parked, %d approvals, %d rejections, %d rollbacks\n",
		total, r.Acked[AckApplied], r.Acked[AckParked], r.Acked[AckApproved], r.Acked[AckRejected], r.Acked[AckRolledBack])
	fmt.Fprintf(w, "calls: %d sent, %d cut off by the kill, %d server errors, %d unexpected answers\n",
		r.Sent, r.CutOff, r.ServerErrors, r.Unexpected)
	fmt.Fprintf(w, "checked: %d records, %d slot histories\n", r.Checked, r.Slots)
	fmt.Fprintf(w, "items lost: %d\n", r.ItemsLost())
	for _, l := range r.Lost {
		fmt.Fprintf(w, "  lost %s: %s\n", l.RecordID, l.Problem)
	}
	fmt.Fprintf(w, "slots with two active records: %d\n", len(r.DoubleActive))
	for _, d := range r.DoubleActive {
		fmt.Fprintf(w, "  %s\n", d)
	}
}

// Run runs the harness. An error means the harness could not do its job
// (the binary would not start, a check could not be read); what it found
// is in the report either way.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	start := time.Now()
	rep := &Report{Seed: cfg.Seed, Lost: []Loss{}, DoubleActive: []string{}}
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "memgate-crash-")
		if err != nil {
			return rep, fmt.Errorf("crash harness: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	ledger := NewLedger(cfg.AckLog)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	opts := sidecar.Options{Binary: cfg.Binary, DataDir: cfg.DataDir, Env: cfg.Env}
	seen := map[string]bool{}
	record := func(v verification) {
		rep.Checked += v.records
		rep.Slots += v.slots
		for _, l := range v.losses {
			if !seen[l.RecordID] {
				seen[l.RecordID] = true
				rep.Lost = append(rep.Lost, l)
			}
		}
		rep.DoubleActive = appendNew(rep.DoubleActive, v.doubles...)
	}
	defer func() {
		rep.Acked = ledger.Counts()
		rep.Elapsed = time.Since(start)
		sort.Strings(rep.DoubleActive)
	}()

	for cycle := 1; cycle <= cfg.Cycles; cycle++ {
		p, err := sidecar.Start(ctx, opts)
		if err != nil {
			return rep, fmt.Errorf("cycle %d: %w", cycle, err)
		}
		client := sidecar.NewClient(p, hc)
		if cycle > 1 {
			v, err := verify(ctx, client, ledger, cycle-1, 8)
			record(v)
			if err != nil {
				p.Kill()
				return rep, fmt.Errorf("cycle %d: checking after restart: %w", cycle, err)
			}
		}
		uptime := cfg.MinUptime + time.Duration(rng.Int64N(int64(cfg.MaxUptime-cfg.MinUptime)+1))
		w := &workload{c: client, ledger: ledger, cycle: cycle, slots: cfg.Slots, gone: p.Exited()}
		runCycle(ctx, p, w, cfg, rng, uptime)
		rep.Cycles = cycle
		rep.Sent += w.sent.Load()
		rep.CutOff += w.cutOff.Load()
		rep.ServerErrors += w.serverErrors.Load()
		rep.Unexpected += w.unexpected.Load()
		rep.DoubleActive = appendNew(rep.DoubleActive, w.doubles...)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "cycle %d: killed after %s; %d calls, %d cut off, %d acknowledged so far\n",
				cycle, uptime.Round(time.Millisecond), w.sent.Load(), w.cutOff.Load(), ledger.Len())
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := ledger.Err(); err != nil {
			return rep, fmt.Errorf("ack log: %w", err)
		}
	}

	// A last restart checks everything acknowledged over all cycles.
	p, err := sidecar.Start(ctx, opts)
	if err != nil {
		return rep, fmt.Errorf("final restart: %w", err)
	}
	v, verr := verify(ctx, sidecar.NewClient(p, hc), ledger, 0, 8)
	record(v)
	if err := p.Stop(10 * time.Second); err != nil {
		verr = errors.Join(verr, err)
	}
	if verr != nil {
		return rep, fmt.Errorf("final check: %w", verr)
	}
	return rep, nil
}

// runCycle runs the workload until the kill, which comes while calls are
// in flight; the workers stop once the process is gone.
func runCycle(ctx context.Context, p *sidecar.Process, w *workload, cfg Config, rng *rand.Rand, uptime time.Duration) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range cfg.Writers {
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		wg.Go(func() { w.writer(wctx, i, r) })
	}
	for i := range cfg.Reviewers {
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(1000+i)))
		wg.Go(func() { w.reviewer(wctx, r) })
	}
	select {
	case <-time.After(uptime):
	case <-ctx.Done():
	case <-p.Exited():
	}
	p.Kill()
	cancel()
	wg.Wait()
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, v := range list {
			if v == it {
				found = true
				break
			}
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}
