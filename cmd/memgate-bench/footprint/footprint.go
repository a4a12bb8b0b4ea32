// Package footprint measures what the sidecar costs to keep around
// (DESIGN §7): its resident memory idle and with a million records, and
// the time from starting the binary to ready. It is memgate-bench's: it
// fills a Badger data directory offline (Load, through store.Open) and
// waits for Badger's compactions before starting the binary on it, so it
// opens the Badger store itself, as only cmd/ does.
package footprint

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memgate/memgate/bench/sidecar"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// Config is one footprint measurement.
type Config struct {
	Binary  string
	DataDir string // "" = a temporary directory, removed afterwards
	// Records is how many active records to load (default 1,000,000).
	Records int
	// Subjects spreads the records (default 1,000 subjects).
	Subjects int
	// Settle is how long the sidecar idles before its memory is read
	// (default 2s): startup garbage is collected by then.
	Settle time.Duration
	// Progress, if set, receives a line per phase.
	Progress io.Writer
}

// Sample is one start of the binary.
type Sample struct {
	Ready time.Duration   `json:"ready"` // exec to the first successful /readyz
	Idle  sidecar.Memory  `json:"idle"`  // after Settle
	Read  *sidecar.Memory `json:"read,omitempty"`
}

// Report is what the measurement found.
type Report struct {
	Empty     Sample        `json:"empty"` // an empty data directory
	Records   int           `json:"records"`
	LoadTime  time.Duration `json:"loadTime"`
	DiskBytes int64         `json:"diskBytes"`
	// AfterLoad is the first start on the loaded directory, Loaded the
	// next one: they differ when the first still finds compactions to do.
	AfterLoad Sample `json:"afterLoad"`
	Loaded    Sample `json:"loaded"`
	// ReadWhat names the reads done before Loaded.Read was measured.
	ReadWhat string `json:"readWhat"`
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
	mem := func(m sidecar.Memory) string {
		return fmt.Sprintf("RSS %s (heap and stacks %s, mapped files %s; peak %s)", mb(m.RSS), mb(m.Anon), mb(m.File), mb(m.Peak))
	}
	fmt.Fprintf(w, "empty data directory: ready in %s, idle %s\n", r.Empty.Ready.Round(time.Millisecond), mem(r.Empty.Idle))
	if r.Records == 0 {
		return
	}
	fmt.Fprintf(w, "%d records loaded in %s, %s on disk\n", r.Records, r.LoadTime.Round(time.Millisecond), mb(r.DiskBytes))
	fmt.Fprintf(w, "first start after the load: ready in %s, idle %s\n",
		r.AfterLoad.Ready.Round(time.Millisecond), mem(r.AfterLoad.Idle))
	fmt.Fprintf(w, "next start with %d records: ready in %s, idle %s\n",
		r.Records, r.Loaded.Ready.Round(time.Millisecond), mem(r.Loaded.Idle))
	if r.Loaded.Read != nil {
		fmt.Fprintf(w, "after %s: %s\n", r.ReadWhat, mem(*r.Loaded.Read))
	}
}

func (c *Config) defaults() {
	if c.Records < 0 {
		c.Records = 0
	} else if c.Records == 0 {
		c.Records = 1_000_000
	}
	if c.Subjects <= 0 {
		c.Subjects = 1000
	}
	if c.Settle <= 0 {
		c.Settle = 2 * time.Second
	}
}

// Measure starts the binary on an empty directory, loads the records,
// restarts it on them and reads.
func Measure(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "memgate-footprint-")
		if err != nil {
			return nil, fmt.Errorf("footprint: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	progress := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	rep := &Report{Records: cfg.Records}
	var err error
	if rep.Empty, err = sample(ctx, cfg, nil); err != nil {
		return rep, fmt.Errorf("empty start: %w", err)
	}
	progress("empty: ready in %s, RSS %d kB", rep.Empty.Ready, rep.Empty.Idle.RSS>>10)
	if cfg.Records == 0 {
		return rep, nil
	}
	start := time.Now()
	if err := Load(ctx, filepath.Join(cfg.DataDir, "db"), cfg.Records, cfg.Subjects, cfg.Progress); err != nil {
		return rep, err
	}
	rep.LoadTime = time.Since(start)
	if rep.DiskBytes, err = dirSize(filepath.Join(cfg.DataDir, "db")); err != nil {
		return rep, err
	}
	if rep.AfterLoad, err = sample(ctx, cfg, nil); err != nil {
		return rep, fmt.Errorf("first start after the load: %w", err)
	}
	progress("first start after the load: ready in %s, RSS %d kB", rep.AfterLoad.Ready, rep.AfterLoad.Idle.RSS>>10)
	rep.ReadWhat = fmt.Sprintf("listing subject fp-0 (%d records), a search in it and 100 reads by id", cfg.Records/cfg.Subjects)
	rep.Loaded, err = sample(ctx, cfg, func(c *sidecar.Client) error {
		var list struct {
			Memories []struct {
				ID string `json:"id"`
			} `json:"memories"`
		}
		// The list comes in pages of at most 1,000; read them all.
		listed := 0
		for after := ""; ; {
			var page struct {
				Count    int `json:"count"`
				Memories []struct {
					ID string `json:"id"`
				} `json:"memories"`
				Next string `json:"next"`
			}
			q := url.Values{"subjectId": {"fp-0"}, "limit": {"1000"}}
			if after != "" {
				q.Set("after", after)
			}
			if err := c.Do(ctx, http.MethodGet, c.Agent+"/api/v1/memories?"+q.Encode(), nil, &page); err != nil {
				return err
			}
			if after == "" {
				list.Memories = page.Memories
			}
			if listed += page.Count; page.Next == "" {
				break
			}
			after = page.Next
		}
		if listed != cfg.Records/cfg.Subjects {
			return fmt.Errorf("subject fp-0 lists %d records, want %d", listed, cfg.Records/cfg.Subjects)
		}
		if err := c.Do(ctx, http.MethodGet, c.Agent+"/api/v1/memories?"+url.Values{"subjectId": {"fp-1"}, "q": {"cedar"}}.Encode(), nil, nil); err != nil {
			return err
		}
		for i := range min(100, len(list.Memories)) {
			if _, err := c.Get(ctx, list.Memories[i].ID); err != nil {
				return err
			}
		}
		return nil
	})
	progress("loaded: ready in %s, RSS %d kB", rep.Loaded.Ready, rep.Loaded.Idle.RSS>>10)
	return rep, err
}

// sample starts the binary, lets it settle, reads its memory, runs read
// (if any) and reads its memory again.
func sample(ctx context.Context, cfg Config, read func(*sidecar.Client) error) (Sample, error) {
	var s Sample
	p, err := sidecar.Start(ctx, sidecar.Options{Binary: cfg.Binary, DataDir: cfg.DataDir})
	if err != nil {
		return s, err
	}
	defer p.Stop(10 * time.Second)
	s.Ready = p.Ready
	select {
	case <-time.After(cfg.Settle):
	case <-ctx.Done():
		return s, ctx.Err()
	}
	if s.Idle, err = p.Memory(); err != nil {
		return s, err
	}
	if read == nil {
		return s, nil
	}
	if err := read(sidecar.NewClient(p, http.DefaultClient)); err != nil {
		return s, fmt.Errorf("reading: %w", err)
	}
	m, err := p.Memory()
	s.Read = &m
	return s, err
}

// applyAll applies every write: loading is not what is measured.
func applyAll(context.Context, *memory.PolicyInput) (memory.Decision, error) {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply,
		Reasons: []memory.Reason{{Rule: "footprint_load", Message: "bulk load for a footprint measurement"}}}, nil
}

// Load writes n active checkpoint records spread over subjects into the
// store in dir through the governor (so every index and audit entry is
// there), without syncing each commit: a crash during the load only means
// loading again.
func Load(ctx context.Context, dir string, n, subjects int, progress io.Writer) error {
	st, err := store.Open(store.Options{Dir: dir, NoSync: true})
	if err != nil {
		return err
	}
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(applyAll)})
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	words := []string{"amber", "basil", "cedar", "daisy", "ember", "fern", "ginger", "hazel"}
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				subject := fmt.Sprintf("fp-%d", i%int64(subjects))
				_, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerCheckpoint, SubjectID: subject,
					FactType: fmt.Sprintf("step.%d", i/int64(subjects)), CandidateSource: memory.SourceImport,
					Summary: fmt.Sprintf("step %d of task %s is done; it used %s and %s for the next stage of the run", i/int64(subjects), subject,
						words[i%8], words[(i/8)%8]), Actor: memory.Actor{AgentID: "footprint", RunID: fmt.Sprintf("load-%d", i/10000)}})
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("loading record %d: %w", i, err) })
					return
				}
				if d := done.Add(1); progress != nil && d%100_000 == 0 {
					fmt.Fprintf(progress, "loaded %d records\n", d)
				}
			}
		})
	}
	wg.Wait()
	if err := st.Close(); err != nil && firstErr == nil {
		firstErr = err // closing flushed the memtables into new tables
	}
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return firstErr
	}
	if st, err = store.Open(store.Options{Dir: dir, NoSync: true}); err != nil {
		return err
	}
	settle(ctx, st, progress)
	return st.Close()
}

// settle waits (up to three minutes) until Badger has compacted what the
// load wrote, so the sidecar starts on a database in its steady shape
// rather than with a backlog of compactions (which allocate hundreds of
// megabytes on the first starts after a bulk load).
func settle(ctx context.Context, st *store.Store, progress io.Writer) {
	deadline := time.Now().Add(3 * time.Minute)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		worst := 0.0
		for _, l := range st.DB().Levels() {
			worst = max(worst, l.Score)
		}
		if worst < 1 {
			return
		}
		if progress != nil {
			fmt.Fprintf(progress, "waiting for compactions (worst level score %.2f)\n", worst)
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// Badger preallocates its logs: count the blocks really used.
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total, err
}
