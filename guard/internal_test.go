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

	"github.com/oklog/ulid/v2"
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

// A decision the guard puts in a file (here a quarantine: an edit undone,
// an added entry removed) meets the agent's side of the file in the rename
// window: a reader opening it, a tool saving the same bytes, or a real
// write. The file ends up reading the decision, with only the agent's own
// change judged on top; the decision is never taken for the agent's edit
// and undone (the flake of TestQuarantineWorksOnFiles in CI).
func TestADecisionMetByTheAgentInTheRenameWindowStays(t *testing.T) {
	const (
		base   = "# USER.md\n\n- Alice prefers green tea.\n"
		edited = "# USER.md\n\n- Alice prefers black tea.\n- Alice has two cats.\n"
		added  = "- Alice walks to work.\n"
	)
	for _, tc := range []struct {
		name  string
		agent func(p string) // in the window, once
		want  string         // the file once the agent's change is judged
	}{
		{"a reader opens the file", func(p string) {
			// The open waits on the guard's lease; it must not block the
			// guard, whose rename it races.
			go func() { _, _ = os.ReadFile(p) }()
			time.Sleep(20 * time.Millisecond)
		}, base},
		{"a tool saves the same bytes", func(p string) {
			must(t, os.WriteFile(p+".tmp", []byte(edited), 0o644))
			must(t, os.Rename(p+".tmp", p))
		}, base},
		{"the agent adds an entry", func(p string) {
			must(t, os.WriteFile(p+".tmp", []byte(edited+added), 0o644))
			must(t, os.Rename(p+".tmp", p))
		}, base + added},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIEnv(t, 0)
			p := e.adoptThenEdit("USER.md", base, edited) // both changes applied
			green := e.activeWith("green tea")
			if green != nil || e.activeWith("black tea") == nil || e.activeWith("two cats") == nil {
				t.Fatal("the agent's edit was not applied")
			}
			res, err := e.gov.Quarantine(e.ctx, "run", e.g.RunID(), "the agent was confused", "operator")
			must(t, err)
			if len(res.RolledBack) != 2 {
				t.Fatalf("quarantine rolled back %v", res.RolledBack)
			}
			fired := 0
			testHookBeforeRename = func(string) {
				if fired++; fired == 1 {
					tc.agent(p)
				}
			}
			t.Cleanup(func() { testHookBeforeRename = nil })
			e.g.mu.Lock()
			e.g.followDecisions(e.ctx)
			e.g.mu.Unlock()
			testHookBeforeRename = nil
			if fired == 0 {
				t.Fatal("the guard never rewrote the file")
			}
			e.govern("USER.md") // the guard's next look: the agent's change, if any
			if got := read(t, p); got != tc.want {
				t.Fatalf("the file reads\n%s\nwant\n%s", got, tc.want)
			}
			if e.activeWith("black tea") != nil || e.activeWith("two cats") != nil {
				t.Fatal("the quarantined versions were written again as the agent's")
			}
			if e.activeWith("green tea") == nil {
				t.Fatal("the restored version is not active")
			}
		})
	}
}

// adoptThenEdit writes base to rel, has the guard adopt it, then writes
// edited and has the guard judge the edit; it returns the file's path.
func (e *ienv) adoptThenEdit(rel, base, edited string) string {
	e.t.Helper()
	p := e.path(rel)
	must(e.t, os.WriteFile(p, []byte(base), 0o644))
	e.govern(rel)
	must(e.t, os.WriteFile(p, []byte(edited), 0o644))
	e.govern(rel)
	return p
}

// activeWith is the active record whose summary holds s, or nil.
func (e *ienv) activeWith(s string) *memory.Record {
	e.t.Helper()
	recs, err := e.gov.List(e.ctx, memory.ListFilter{})
	must(e.t, err)
	for _, r := range recs {
		if strings.Contains(r.Summary, s) {
			return r
		}
	}
	return nil
}

// A decision whose event the guard's cursor passed (one another instance
// of a fleet committed late) still reaches the file at the periodic
// rescan: rolled-back edits are undone there too, a turn of slots a
// rescan (here one), every slot within as many rescans as there are.
func TestTheRescanCatchesADecisionTheCursorPassed(t *testing.T) {
	const (
		base   = "# USER.md\n\n- Alice prefers green tea.\n- Bob prefers coffee.\n- Carol prefers cocoa.\n"
		edited = "# USER.md\n\n- Alice prefers black tea.\n- Bob prefers espresso.\n- Carol prefers juice.\n"
	)
	e := newIEnv(t, 0)
	p := e.adoptThenEdit("USER.md", base, edited)
	for _, s := range []string{"black tea", "espresso", "juice"} {
		r := e.activeWith(s)
		if r == nil {
			t.Fatalf("the edit to %q was not applied", s)
		}
		if _, err := e.gov.Rollback(e.ctx, r.ID, false, "wrong", "operator"); err != nil {
			t.Fatal(err)
		}
	}
	e.g.mu.Lock()
	defer e.g.mu.Unlock()
	e.g.cursor = ulid.MustNew(ulid.Timestamp(time.Now().Add(time.Second)), nil).String() // past the rollbacks' events
	e.g.followDecisions(e.ctx)
	if got := read(t, p); got != edited {
		t.Fatalf("the file changed without the events:\n%s", got)
	}
	e.g.checksPerRescan = 1
	undone := func() (n int) {
		for _, s := range []string{"green tea", "coffee", "cocoa"} {
			if strings.Contains(read(t, p), s) {
				n++
			}
		}
		return n
	}
	for i := 1; i <= 3; i++ {
		e.g.rescan(e.ctx)
		if n := undone(); n != i {
			t.Fatalf("after rescan %d, %d edits are undone in the file, want %d:\n%s", i, n, i, read(t, p))
		}
	}
	if got := read(t, p); got != base {
		t.Fatalf("after the rescans the file reads\n%s\nwant\n%s", got, base)
	}
	e.g.rescan(e.ctx) // and again: nothing left to do
	if got := read(t, p); got != base {
		t.Fatalf("another rescan changed the file:\n%s", got)
	}
}

// An agent that rewrites the file in every round of the guard's putting a
// rollback in it (maxRaced) keeps its file, and the rolled-back version
// stays rolled back: what memgate accepted goes back to what the file was
// made from, so the guard's next look finds no change of the agent's to
// judge, and the rescan puts the rollback in once the agent lets it.
func TestAnAgentThatOutrunsARollbackNeverGetsItUndone(t *testing.T) {
	const (
		base   = "# USER.md\n\n- Alice prefers green tea.\n"
		edited = "# USER.md\n\n- Alice prefers black tea.\n"
	)
	e := newIEnv(t, 0)
	p := e.adoptThenEdit("USER.md", base, edited)
	black := e.activeWith("black tea")
	if black == nil {
		t.Fatal("the edit was not applied")
	}
	if _, err := e.gov.Rollback(e.ctx, black.ID, false, "wrong", "operator"); err != nil {
		t.Fatal(err)
	}
	rounds := 0
	testHookBeforeRename = func(string) { // the agent saves its file again, every time
		rounds++
		must(t, os.WriteFile(p+".tmp", []byte(edited), 0o644))
		must(t, os.Rename(p+".tmp", p))
	}
	t.Cleanup(func() { testHookBeforeRename = nil })
	e.g.mu.Lock()
	e.g.followDecisions(e.ctx)
	e.g.mu.Unlock()
	testHookBeforeRename = nil
	if rounds <= maxRaced {
		t.Fatalf("the rewrite gave up after %d rounds, want more than %d", rounds, maxRaced)
	}
	if got := read(t, p); got != edited {
		t.Fatalf("the file reads\n%s\nwant the agent's", got)
	}
	e.govern("USER.md") // the guard's next look at the agent's file
	if e.activeWith("black tea") != nil || e.activeWith("green tea") == nil {
		t.Fatal("the rolled-back version was applied again as the agent's edit")
	}
	e.g.mu.Lock()
	e.g.rescan(e.ctx)
	e.g.mu.Unlock()
	if got := read(t, p); got != base {
		t.Fatalf("after the rescan the file reads\n%s\nwant\n%s", got, base)
	}
}

// The same for an approved change's write-back: outrun, it stays on the
// file's parked list and is written back at a later poll, once.
func TestAnApprovedWriteBackOutrunIsWrittenBackLater(t *testing.T) {
	e := newIEnv(t, 0)
	p := e.path("MEMORY.md")
	must(t, os.WriteFile(p, []byte(baseMD), 0o644))
	e.govern("MEMORY.md")
	rule := "- " + ruleMark + ": deploy on Fridays.\n"
	must(t, os.WriteFile(p, []byte(baseMD+rule), 0o644))
	e.govern("MEMORY.md") // parked, undone
	parked := e.pending()
	if len(parked) != 1 || read(t, p) != baseMD {
		t.Fatalf("%d parked, file\n%s", len(parked), read(t, p))
	}
	if _, err := e.gov.Approve(e.ctx, parked[0].ID, memory.Review{By: "reviewer"}); err != nil {
		t.Fatal(err)
	}
	testHookBeforeRename = func(string) {
		must(t, os.WriteFile(p+".tmp", []byte(baseMD), 0o644))
		must(t, os.Rename(p+".tmp", p))
	}
	t.Cleanup(func() { testHookBeforeRename = nil })
	e.g.mu.Lock()
	defer e.g.mu.Unlock()
	e.g.followDecisions(e.ctx)
	testHookBeforeRename = nil
	if got := read(t, p); got != baseMD {
		t.Fatalf("the file reads\n%s\nwant the agent's", got)
	}
	st, err := loadState(e.ctx, e.st, p)
	must(t, err)
	if len(st.Parked) != 1 || st.Content != baseMD {
		t.Fatalf("after the outrun write-back: %d parked, accepted\n%s", len(st.Parked), st.Content)
	}
	e.g.followDecisions(e.ctx)
	e.g.followDecisions(e.ctx)
	if got := read(t, p); got != baseMD+rule {
		t.Fatalf("at the next polls the file reads\n%s\nwant\n%s", got, baseMD+rule)
	}
}
