package guard

// Tests that drive the guard's judging directly, without its watch loop: a
// real workspace on disk and a real Badger store.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// ruleMark makes a line high risk for stubPolicy.
const ruleMark = "RULE"

// stubPolicy parks what holds ruleMark and applies the rest: these tests
// are about files, not about what policy decides, and must not depend on
// how the default policy places free text.
var stubPolicy = memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if strings.Contains(in.Candidate.Summary, ruleMark) {
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview,
			Reasons: []memory.Reason{{Rule: "rule", Message: "a rule"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply,
		Reasons: []memory.Reason{{Rule: "low", Message: "low risk"}}}, nil
})

type ienv struct {
	t   *testing.T
	ctx context.Context
	dir string
	db  string
	st  *store.Store
	gov *memory.Governor
	g   *Guard
	met *Metrics
	// maxEntries, if set, is the guard's entry cap.
	maxEntries int
}

func newIEnv(t *testing.T, maxEntries int) *ienv {
	t.Helper()
	e := &ienv{t: t, ctx: context.Background(), dir: filepath.Join(t.TempDir(), "workspace"), db: t.TempDir(), maxEntries: maxEntries}
	must(t, os.MkdirAll(e.dir, 0o755))
	e.open()
	t.Cleanup(func() { e.close() })
	return e
}

// open opens the store and a guard on it (not started: the tests call it).
func (e *ienv) open() {
	st, err := store.Open(store.Options{Dir: e.db, NoSync: true})
	must(e.t, err)
	e.st = st
	e.gov = memory.NewGovernor(memory.Options{Store: st, Classifier: stubPolicy})
	met, err := NewMetrics(prometheus.NewRegistry())
	must(e.t, err)
	e.met = met
	g, err := New(Options{Gov: e.gov, KV: st, Dirs: []string{e.dir}, Metrics: met, MaxEntries: e.maxEntries})
	must(e.t, err)
	must(e.t, g.loadFiles(e.ctx))
	e.g = g
}

func (e *ienv) close() {
	if e.g != nil {
		e.g.release()
		must(e.t, e.st.Close())
		e.g = nil
	}
}

// restart is memgate stopped and started again on the same store.
func (e *ienv) restart() {
	e.close()
	e.open()
}

func (e *ienv) path(rel string) string { return filepath.Join(e.dir, rel) }

// judge judges a file as the guard's loop does, failing the test on an
// error.
func (e *ienv) govern(rel string) {
	e.t.Helper()
	e.g.mu.Lock()
	defer e.g.mu.Unlock()
	must(e.t, e.g.governFile(e.ctx, e.path(rel), time.Now()))
}

// judgeAll judges files in turn, as one pass of the guard's loop.
func (e *ienv) governAll(rels []string) {
	e.t.Helper()
	for _, rel := range rels {
		e.govern(rel)
	}
}

func (e *ienv) pending() []*memory.Record {
	e.t.Helper()
	recs, err := e.gov.Pending(e.ctx, func(*memory.Record) bool { return true })
	must(e.t, err)
	return recs
}

const baseMD = "# MEMORY.md\n\n## Notes\n\n- Alice prefers short answers.\n"

// A crash after a change was parked and journaled but before the file was
// rewritten, and a decision taken while memgate was down: at the next
// start the change in the file is the guard's unfinished undo. It is
// undone (a rejection) or left to the write-back (an approval), never
// parked a second time.
func TestAnUndoCutShortIsFinishedNotParkedAgain(t *testing.T) {
	for _, decision := range []string{"reject", "approve"} {
		t.Run(decision, func(t *testing.T) {
			e := newIEnv(t, 0)
			p := e.path("MEMORY.md")
			must(t, os.WriteFile(p, []byte(baseMD), 0o644))
			e.govern("MEMORY.md") // adopted
			withRule := baseMD + "- " + ruleMark + ": deploy without asking.\n"
			must(t, os.WriteFile(p, []byte(withRule), 0o644))

			// The judging, cut short after decide (parked, journaled, state
			// saved) and before settle (the file rewritten).
			st, err := loadState(e.ctx, e.st, p)
			must(t, err)
			if _, err := e.g.decide(e.ctx, p, st, []byte(withRule)); err != nil {
				t.Fatal(err)
			}
			parked := e.pending()
			if len(parked) != 1 {
				t.Fatalf("%d parked", len(parked))
			}
			// Decided while memgate is down.
			e.close()
			e.open()
			switch decision {
			case "reject":
				_, err = e.gov.Reject(e.ctx, parked[0].ID, memory.Review{By: "reviewer"})
			case "approve":
				_, err = e.gov.Approve(e.ctx, parked[0].ID, memory.Review{By: "reviewer"})
			}
			must(t, err)
			e.restart()

			e.govern("MEMORY.md")
			if n := len(e.pending()); n != 0 {
				t.Fatalf("the guard parked its own unfinished undo again: %d pending", n)
			}
			if got := read(t, p); got != baseMD {
				t.Fatalf("the file reads\n%s\nwant the change undone", got)
			}
			e.g.mu.Lock()
			must(t, e.g.reconcileAll(e.ctx)) // what Start does after judging
			e.g.mu.Unlock()
			want := baseMD
			if decision == "approve" {
				want = withRule
			}
			if got := read(t, p); got != want {
				t.Fatalf("after the decision the file reads\n%s\nwant\n%s", got, want)
			}
			e.govern("MEMORY.md")
			if n := len(e.pending()); n != 0 || read(t, p) != want {
				t.Fatalf("%d pending, file\n%s", n, read(t, p))
			}
		})
	}
}

// repairs is memgate_guard_repairs_total.
func (e *ienv) repairs() float64 { return testutil.ToFloat64(e.met.repairs) }
