// Package crash is memgate's reliability harness: it runs the real sidecar
// binary under concurrent writers and reviewers that log every
// acknowledged write and decision, kills it with SIGKILL at a random
// moment, restarts it, and checks that everything acknowledged is there in
// the state the acknowledgement promised and that no slot has two active
// records (DESIGN §1 rules 1 and 9). It repeats for a number of cycles.
package crash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memgate/memgate/bench/sidecar"
	"github.com/memgate/memgate/policy"
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

	// Retention, if positive, runs the sidecars on the default policy with
	// memgate_config.retention set to it for every layer, and the
	// retention pass every RetentionInterval (default 250ms): superseded,
	// rejected and rolled-back versions lose their text while the load
	// and the kills go on, and every check holds the retention to its
	// promises (checkText). 0 runs the built-in policy, whose retention
	// is off.
	Retention         time.Duration
	RetentionInterval time.Duration

	// Store, if set, is a shared store's URL (postgres://…) passed to every
	// sidecar as --store; Instances sidecars then run on it at once, each
	// with its own data directory and ports, and the workers' calls go
	// round robin over them. Without Store, one sidecar on its Badger.
	Store     string
	Instances int // default 1
	// KillAll kills every instance each cycle; otherwise one instance,
	// chosen at random, dies while the others keep serving.
	KillAll bool
	// RestartStore, if set, restarts the database as a crash would in
	// every RestartStoreEvery-th cycle: after the kill, or with
	// RestartStoreUnderLoad halfway to it while the workers run (writes
	// then meet a database that does not answer: 503s, unknown commit
	// outcomes). The survivors must answer /readyz again within
	// StoreRecovery (default 60s).
	RestartStore          func(context.Context) error
	RestartStoreEvery     int
	RestartStoreUnderLoad bool
	StoreRecovery         time.Duration
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
	if c.Instances <= 0 {
		c.Instances = 1
	}
	if c.StoreRecovery <= 0 {
		c.StoreRecovery = time.Minute
	}
	if c.RetentionInterval <= 0 {
		c.RetentionInterval = 250 * time.Millisecond
	}
}

// Report is what a harness run found.
type Report struct {
	Cycles    int    `json:"cycles"`
	Seed      uint64 `json:"seed"`
	Instances int    `json:"instances"`
	Store     string `json:"store,omitempty"` // the shared store's kind ("postgres"); "" = Badger
	// StoreRestarts counts restarts of the database between cycles.
	StoreRestarts int             `json:"storeRestarts"`
	Acked         map[AckKind]int `json:"acked"`
	Checked       int             `json:"checked"`    // record checks after restarts
	Slots         int             `json:"slotChecks"` // slot history checks
	Lost          []Loss          `json:"lost"`
	// DoubleActive lists slots seen with more than one active record.
	DoubleActive []string `json:"doubleActive"`
	// AuditEvents is how many audit events the final check verified as
	// an intact hash chain; AuditBroken says what was wrong with it.
	// AuditChecks counts the verifications of the chain (after every
	// restart and at the end).
	AuditEvents uint64 `json:"auditEvents"`
	AuditBroken string `json:"auditBroken,omitempty"`
	AuditChecks int    `json:"auditChecks"`
	// Retention is the retention the sidecars ran with (0: none), and
	// Purged the most records one check found purged by it (a record
	// once purged stays so, and the checks after a restart read the
	// records of the cycle before; the final check reads them all).
	Retention time.Duration `json:"retention,omitempty"`
	Purged    int           `json:"purged"`
	// Erasures counts the erasures the sidecar acknowledged during the
	// load (each cycle asks for one), ErasuresCut those the kill cut off.
	Erasures     int   `json:"erasures"`
	ErasuresCut  int   `json:"erasuresCut"`
	Sent         int64 `json:"sent"`
	CutOff       int64 `json:"cutOff"`       // calls the kill left unanswered
	ServerErrors int64 `json:"serverErrors"` // 5xx answers
	// FailedAnswers are the server errors and unexpected answers by
	// status and error code.
	FailedAnswers map[string]FailedAnswer `json:"failedAnswers"`
	Unexpected    int64                   `json:"unexpected"` // 4xx answers the harness never provokes
	Elapsed       time.Duration           `json:"elapsed"`
}

// ItemsLost is how many acknowledged records are missing or in a state
// their acknowledgement rules out.
func (r *Report) ItemsLost() int { return len(r.Lost) }

// OK reports whether nothing acknowledged was lost, invariant 1 held and
// the audit chain is intact.
func (r *Report) OK() bool {
	return len(r.Lost) == 0 && len(r.DoubleActive) == 0 && r.AuditBroken == ""
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	total := 0
	for _, n := range r.Acked {
		total += n
	}
	fmt.Fprintf(w, "cycles run: %d (seed %d, %s)\n", r.Cycles, r.Seed, r.Elapsed.Round(time.Millisecond))
	if r.Store != "" {
		fmt.Fprintf(w, "instances: %d sharing one %s database; database restarts: %d\n", r.Instances, r.Store, r.StoreRestarts)
	}
	fmt.Fprintf(w, "acknowledged: %d items: %d applied, %d parked, %d approvals, %d rejections, %d rollbacks\n",
		total, r.Acked[AckApplied], r.Acked[AckParked], r.Acked[AckApproved], r.Acked[AckRejected], r.Acked[AckRolledBack])
	fmt.Fprintf(w, "calls: %d sent, %d cut off by the kill, %d server errors, %d unexpected answers\n",
		r.Sent, r.CutOff, r.ServerErrors, r.Unexpected)
	kinds := make([]string, 0, len(r.FailedAnswers))
	for k := range r.FailedAnswers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %s ×%d, e.g. %q\n", k, r.FailedAnswers[k].Count, r.FailedAnswers[k].Example)
	}
	fmt.Fprintf(w, "checked: %d records, %d slot histories\n", r.Checked, r.Slots)
	fmt.Fprintf(w, "erasures under load: %d acknowledged and checked, %d cut off by the kill\n", r.Erasures, r.ErasuresCut)
	if r.Retention > 0 {
		fmt.Fprintf(w, "retention %s under load: %d versions found purged with their skeleton, no active or pending memory touched\n", r.Retention, r.Purged)
	}
	if r.AuditBroken != "" {
		fmt.Fprintf(w, "audit chain BROKEN: %s\n", r.AuditBroken)
	} else {
		fmt.Fprintf(w, "audit chain: %d events intact (verified %d times)\n", r.AuditEvents, r.AuditChecks)
	}
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
	rep := &Report{Seed: cfg.Seed, Instances: cfg.Instances, Lost: []Loss{}, DoubleActive: []string{}}
	if cfg.Store != "" {
		rep.Store = storeKind(cfg.Store)
	}
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
	erasures := newErasureLog()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	opts := sidecar.Options{Binary: cfg.Binary, DataDir: cfg.DataDir, Store: cfg.Store, Env: cfg.Env}
	if cfg.Retention > 0 {
		dir, err := writeRetentionPolicy(filepath.Join(cfg.DataDir, "policy"), cfg.Retention)
		if err != nil {
			return rep, fmt.Errorf("crash harness: %w", err)
		}
		opts.Args = append(opts.Args, "--policy-dir", dir, "--retention-interval", cfg.RetentionInterval.String())
		rep.Retention = cfg.Retention
	}
	fleet := sidecar.NewFleet(opts, cfg.Instances)
	defer fleet.Kill()
	seen := map[string]bool{}
	record := func(v verification) {
		rep.Checked += v.records
		rep.Slots += v.slots
		rep.Purged = max(rep.Purged, v.purged)
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
		// The instances killed last cycle come back; the checks then read
		// through one of them, which must see what any instance acknowledged.
		restarted, err := startDown(ctx, fleet)
		if err != nil {
			return rep, fmt.Errorf("cycle %d: %w", cycle, err)
		}
		if cycle > 1 {
			via := fleet.Procs[restarted[rng.IntN(len(restarted))]]
			c := sidecar.NewClient(via, hc)
			v, err := verify(ctx, c, ledger, cycle-1, 8)
			record(v)
			if err != nil {
				return rep, fmt.Errorf("cycle %d: checking after restart: %w", cycle, err)
			}
			if err := verifyChain(ctx, c, rep); err != nil {
				return rep, fmt.Errorf("cycle %d: checking after restart: %w", cycle, err)
			}
		}
		uptime := cfg.MinUptime + time.Duration(rng.Int64N(int64(cfg.MaxUptime-cfg.MinUptime)+1))
		victims := pickVictims(cfg, rng)
		w := &workload{ledger: ledger, erased: erasures, cycle: cycle, slots: cfg.Slots}
		for _, p := range fleet.Procs {
			w.clients = append(w.clients, sidecar.NewClient(p, hc))
		}
		restartDB := cfg.RestartStore != nil && cfg.RestartStoreEvery > 0 && cycle%cfg.RestartStoreEvery == 0
		var midRestart func(context.Context) error
		if restartDB && cfg.RestartStoreUnderLoad {
			midRestart = cfg.RestartStore
		}
		dbRestarted, err := runCycle(ctx, fleet, victims, w, cfg, rng, uptime, midRestart)
		if err != nil {
			return rep, fmt.Errorf("cycle %d: restarting the database under load: %w", cycle, err)
		}
		rep.Cycles = cycle
		rep.Sent += w.sent.Load()
		rep.CutOff += w.cutOff.Load()
		rep.ServerErrors += w.serverErrors.Load()
		rep.Unexpected += w.unexpected.Load()
		for k, a := range w.answers {
			if rep.FailedAnswers == nil {
				rep.FailedAnswers = map[string]FailedAnswer{}
			}
			sum := rep.FailedAnswers[k]
			sum.Count += a.Count
			if sum.Example == "" {
				sum.Example = a.Example
			}
			rep.FailedAnswers[k] = sum
		}
		rep.DoubleActive = appendNew(rep.DoubleActive, w.doubles...)
		if cfg.Progress != nil {
			what := "killed"
			if cfg.Instances > 1 {
				what = fmt.Sprintf("killed instance(s) %v of %d", victims, cfg.Instances)
			}
			fmt.Fprintf(cfg.Progress, "cycle %d: %s after %s; %d calls, %d cut off, %d acknowledged so far\n",
				cycle, what, uptime.Round(time.Millisecond), w.sent.Load(), w.cutOff.Load(), ledger.Len())
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := ledger.Err(); err != nil {
			return rep, fmt.Errorf("ack log: %w", err)
		}
		if restartDB && midRestart == nil {
			if err := cfg.RestartStore(ctx); err != nil {
				return rep, fmt.Errorf("cycle %d: restarting the database: %w", cycle, err)
			}
			dbRestarted = true
		}
		if dbRestarted {
			survivors, err := waitSurvivors(ctx, fleet, cfg.StoreRecovery)
			if err != nil {
				return rep, fmt.Errorf("cycle %d: after the database restart: %w", cycle, err)
			}
			rep.StoreRestarts++
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "cycle %d: restarted the database; %d surviving instance(s) ready again\n", cycle, survivors)
			}
		}
	}

	// A last restart checks everything acknowledged over all cycles.
	restarted, err := startDown(ctx, fleet)
	if err != nil {
		return rep, fmt.Errorf("final restart: %w", err)
	}
	via := fleet.Procs[restarted[rng.IntN(len(restarted))]]
	v, verr := verify(ctx, sidecar.NewClient(via, hc), ledger, 0, 8)
	record(v)
	// Every acknowledged erasure erased all it had to, resumed or not.
	n, lost, err := checkErasures(ctx, sidecar.NewClient(via, hc), erasures)
	rep.Erasures, rep.ErasuresCut = len(erasures.done), erasures.cut
	rep.Checked += n
	rep.Lost = append(rep.Lost, lost...)
	verr = errors.Join(verr, err)
	// The audit log is a hash chain that every kill must leave intact.
	verr = errors.Join(verr, verifyChain(ctx, sidecar.NewClient(via, hc), rep))
	if err := fleet.Stop(10 * time.Second); err != nil {
		verr = errors.Join(verr, err)
	}
	if verr != nil {
		return rep, fmt.Errorf("final check: %w", verr)
	}
	return rep, nil
}

// verifyTimeout bounds one verification of the audit chain.
const verifyTimeout = 3 * time.Minute

// verifyChain asks the sidecar to verify the audit chain, and notes the
// events verified, and the first break found, in rep.
func verifyChain(ctx context.Context, c *sidecar.Client, rep *Report) error {
	var chain struct {
		OK      bool   `json:"ok"`
		Events  uint64 `json:"events"`
		Problem *struct {
			Kind, EventID, Detail string
		} `json:"problem"`
	}
	// The verification reads the whole chain, which grows every cycle: it
	// gets more time than a write (whose bound the client carries).
	vc := *c
	vc.HTTP = &http.Client{Timeout: verifyTimeout, Transport: c.HTTP.Transport}
	if err := vc.Do(ctx, http.MethodGet, c.Admin+"/admin/v1/audit/verify", nil, &chain); err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	rep.AuditChecks++
	rep.AuditEvents = chain.Events
	if !chain.OK && rep.AuditBroken == "" {
		rep.AuditBroken = "no problem named"
		if chain.Problem != nil {
			rep.AuditBroken = chain.Problem.Kind + " " + chain.Problem.EventID + ": " + chain.Problem.Detail
		}
	}
	return nil
}

// writeRetentionPolicy writes the default policy into dir with its data's
// memgate_config.retention set to d for every layer, and returns dir.
func writeRetentionPolicy(dir string, d time.Duration) (string, error) {
	files := policy.DefaultFiles()
	var data map[string]any
	if err := json.Unmarshal([]byte(files["data.json"]), &data); err != nil {
		return "", fmt.Errorf("the default policy's data: %w", err)
	}
	cfg, _ := data[policy.ConfigRoot].(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
		data[policy.ConfigRoot] = cfg
	}
	cfg["retention"] = map[string]any{"default_days": d.String()}
	b, err := json.MarshalIndent(data, "", "  ")
	if err != nil {
		return "", fmt.Errorf("the default policy's data: %w", err)
	}
	files["data.json"] = string(b)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("policy directory: %w", err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return "", fmt.Errorf("policy directory: %w", err)
		}
	}
	return dir, nil
}

// startDown starts every instance that is not running and returns their
// indexes; when all run (none was killed), it returns all of them.
func startDown(ctx context.Context, fleet *sidecar.Fleet) ([]int, error) {
	var started, all []int
	for i, p := range fleet.Procs {
		all = append(all, i)
		if p != nil {
			continue
		}
		if err := fleet.Start(ctx, i); err != nil {
			return nil, err
		}
		started = append(started, i)
	}
	if len(started) == 0 {
		return all, nil
	}
	return started, nil
}

// pickVictims chooses the instances this cycle kills: all with KillAll or
// a single instance, else one at random.
func pickVictims(cfg Config, rng *rand.Rand) []int {
	if cfg.KillAll || cfg.Instances == 1 {
		all := make([]int, cfg.Instances)
		for i := range all {
			all[i] = i
		}
		return all
	}
	return []int{rng.IntN(cfg.Instances)}
}

// waitSurvivors waits until every running instance answers /readyz after
// a database restart (they must reconnect by themselves) and returns how
// many there are.
func waitSurvivors(ctx context.Context, fleet *sidecar.Fleet, timeout time.Duration) (int, error) {
	n := 0
	for i, p := range fleet.Procs {
		if p == nil {
			continue
		}
		if err := p.WaitReady(ctx, timeout); err != nil {
			return n, fmt.Errorf("instance %d: %w", i, err)
		}
		n++
	}
	return n, nil
}

// runCycle runs the workload until the kill, which comes while calls are
// in flight; the workers stop once the victims are gone, and calls then in
// flight to the survivors are abandoned (their outcome is unknown, as a
// kill's would be). A process that exits by itself ends the cycle early.
// restartDB, if set, runs halfway to the kill, under the workers' calls;
// the kill waits for it.
func runCycle(ctx context.Context, fleet *sidecar.Fleet, victims []int, w *workload, cfg Config, rng *rand.Rand,
	uptime time.Duration, restartDB func(context.Context) error) (dbRestarted bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gone := make(chan struct{})
	var once sync.Once
	for _, p := range fleet.Procs {
		go func() {
			select {
			case <-p.Exited():
				once.Do(func() { close(gone) })
			case <-wctx.Done():
			}
		}()
	}
	w.gone = gone
	var wg sync.WaitGroup
	for i := range cfg.Writers {
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		wg.Go(func() { w.writer(wctx, i, r) })
	}
	for i := range cfg.Reviewers {
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(1000+i)))
		wg.Go(func() { w.reviewer(wctx, r) })
	}
	wg.Go(func() { w.eraser(wctx) })
	// restarted receives nil when the database restarted, an error when
	// that failed, errNoRestart when none was due or the cycle ended first.
	restarted := make(chan error, 1)
	if restartDB == nil {
		restarted <- errNoRestart
	} else {
		go func() {
			select {
			case <-time.After(uptime / 2):
				restarted <- restartDB(ctx) // ctx: the cycle's end must not cut pg_ctl off
			case <-wctx.Done():
				restarted <- errNoRestart
			}
		}()
	}
	select {
	case <-time.After(uptime):
	case <-ctx.Done():
	case <-gone:
	}
	for _, i := range victims {
		fleet.KillOne(i)
	}
	cancel()
	wg.Wait()
	err = <-restarted
	// An instance that was not a victim but exited by itself is down too:
	// the next cycle restarts it like a victim.
	for i, p := range fleet.Procs {
		if p != nil {
			select {
			case <-p.Exited():
				fleet.KillOne(i)
			default:
			}
		}
	}
	if errors.Is(err, errNoRestart) {
		return false, nil
	}
	return err == nil, err
}

var errNoRestart = errors.New("no database restart in this cycle")

// storeKind names a store URL's kind for the report without its
// credentials.
func storeKind(u string) string {
	if scheme, _, ok := strings.Cut(u, "://"); ok {
		return scheme
	}
	return "store"
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
