package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

// recorder collects what a Classifier reports through its hooks and log.
type recorder struct {
	mu      sync.Mutex
	reloads []reload
	evals   []error
	log     bytes.Buffer
}

type reload struct {
	revision string
	err      error
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

func (r *recorder) options(o Options) Options {
	o.Logger = slog.New(slog.NewTextHandler(r, nil))
	o.OnReload = func(rev string, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reloads = append(r.reloads, reload{rev, err})
	}
	o.OnEval = func(_ time.Duration, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.evals = append(r.evals, err)
	}
	return o
}

func (r *recorder) lastReload() reload {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reloads) == 0 {
		return reload{}
	}
	return r.reloads[len(r.reloads)-1]
}

func (r *recorder) logged() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// writePolicy replaces dir's files with files, each written atomically.
func writePolicy(t *testing.T, dir string, files FileSet) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep && !e.IsDir() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := full + ".tmp~"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, full); err != nil {
			t.Fatal(err)
		}
	}
}

// withRule returns the default policy with one rule's attributes changed in
// its data document.
func withRule(t *testing.T, rule, key, value string) FileSet {
	t.Helper()
	return withRules(t, func(rules map[string]any) {
		r, ok := rules[rule].(map[string]any)
		if !ok {
			t.Fatalf("the default data has no %s entry", rule)
		}
		r[key] = value
	})
}

// withRules returns the default policy with the rules of its data document
// changed by edit.
func withRules(t *testing.T, edit func(rules map[string]any)) FileSet {
	t.Helper()
	files := DefaultFiles()
	var data map[string]any
	if err := json.Unmarshal([]byte(files["data.json"]), &data); err != nil {
		t.Fatal(err)
	}
	rules, _ := data[ConfigRoot].(map[string]any)["rules"].(map[string]any)
	edit(rules)
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	files["data.json"] = string(b)
	return files
}

// withoutTests drops a policy's Rego tests, as an operator's policy may.
func withoutTests(files FileSet) FileSet {
	for p := range files {
		if isTestModule(p) {
			delete(files, p)
		}
	}
	return files
}

var checkpointWrite = &memory.PolicyInput{Op: memory.OpWrite, Pending: []*memory.Record{},
	Candidate: &memory.Record{ID: "c", Layer: memory.LayerCheckpoint, SubjectID: "run-1", Summary: "step 2 done", CandidateSource: memory.SourceUser}}

func actionOf(t *testing.T, c memory.Classifier) memory.Action {
	t.Helper()
	d, err := c.Classify(context.Background(), checkpointWrite)
	if err != nil {
		t.Fatal(err)
	}
	return d.Action
}

func TestDirReload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writePolicy(t, dir, DefaultFiles())
	rec := &recorder{}
	c := New(rec.options(Options{Dir: dir, PollInterval: time.Hour}))
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if c.Revision() != DefaultFiles().Revision() || actionOf(t, c) != memory.ActionApply {
		t.Fatalf("revision %s, want the default's", c.Revision())
	}

	// A good change takes effect.
	reviewCheckpoints := withoutTests(withRule(t, "checkpoint", "action", "review"))
	writePolicy(t, dir, reviewCheckpoints)
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	good := reviewCheckpoints.Revision()
	if c.Revision() != good || actionOf(t, c) != memory.ActionReview {
		t.Fatalf("revision %s after a good change, want %s", c.Revision(), good)
	}
	if r := rec.lastReload(); r.revision != good || r.err != nil {
		t.Errorf("OnReload got %+v", r)
	}

	// A change that does not compile is refused, once, and the good one stays.
	broken := withoutTests(withRule(t, "checkpoint", "action", "review"))
	broken["rules.rego"] += "\nfired contains if {\n"
	writePolicy(t, dir, broken)
	for range 2 {
		if err := c.Reload(ctx); err == nil {
			t.Fatal("a broken policy was accepted")
		}
	}
	if c.Revision() != good || actionOf(t, c) != memory.ActionReview {
		t.Fatalf("revision %s after a broken change, want %s kept", c.Revision(), good)
	}
	if r := rec.lastReload(); r.revision != broken.Revision() || r.err == nil {
		t.Errorf("OnReload got %+v, want the refusal", r)
	}
	if s := c.Stats(); s.ReloadFailures != 1 || s.Reloads != 2 {
		t.Errorf("stats %+v, want 2 reloads and 1 failure reported once", s)
	}
	if !strings.Contains(rec.logged(), "policy refused") {
		t.Errorf("refusal not logged: %s", rec.logged())
	}

	// A change that fails the policy's own Rego tests is refused too, with
	// the test and the expression it failed at named. (A rule's outcome
	// changed in data alone fails no test: the tests leave it to data.)
	failing := DefaultFiles()
	failing["rules.rego"] = strings.Replace(failing["rules.rego"], "fired contains \"checkpoint\" if {\n\tlayer == \"checkpoint\"",
		"fired contains \"checkpoint\" if {\n\tlayer == \"no-such-layer\"", 1)
	if failing["rules.rego"] == DefaultFiles()["rules.rego"] {
		t.Fatal("the checkpoint rule was not found")
	}
	writePolicy(t, dir, failing)
	err := c.Reload(ctx)
	if err == nil || !strings.Contains(err.Error(), "test_checkpoint (rules_test.rego:") || !strings.Contains(err.Error(), "failed at rules_test.rego:") {
		t.Fatalf("reload error %v, want the failing test and expression named", err)
	}
	if c.Revision() != good || actionOf(t, c) != memory.ActionReview {
		t.Fatalf("revision %s after a failing test, want %s kept", c.Revision(), good)
	}

	// A missing directory keeps the policy too.
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(ctx); err == nil || c.Revision() != good {
		t.Fatalf("reload of a missing directory: %v, revision %s", err, c.Revision())
	}
}

func TestDirPollPicksUpChanges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writePolicy(t, dir, DefaultFiles())
	c := New((&recorder{}).options(Options{Dir: dir, PollInterval: 10 * time.Millisecond}))
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	changed := withoutTests(withRule(t, "checkpoint", "action", "review"))
	writePolicy(t, dir, changed)
	deadline := time.Now().Add(20 * time.Second)
	for c.Revision() != changed.Revision() {
		if time.Now().After(deadline) {
			t.Fatal("the poller did not pick up the change")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if actionOf(t, c) != memory.ActionReview {
		t.Error("the new policy does not decide")
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// After Close the policy in force still decides, and nothing reloads.
	writePolicy(t, dir, DefaultFiles())
	time.Sleep(50 * time.Millisecond)
	if c.Revision() != changed.Revision() || actionOf(t, c) != memory.ActionReview {
		t.Error("a closed classifier changed policy")
	}
}

func TestOpenRefusesABrokenDir(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, FileSet{"memgate.rego": "package memgate\ndecision := {"})
	rec := &recorder{}
	c := New(rec.options(Options{Dir: dir}))
	if err := c.Open(context.Background()); err == nil {
		t.Fatal("a broken policy directory opened")
	}
	if _, err := c.Classify(context.Background(), checkpointWrite); err == nil {
		t.Error("a classifier that failed to open decided")
	}
	if r := rec.lastReload(); r.err == nil {
		t.Errorf("OnReload got %+v, want the refusal", r)
	}
}

func TestClassifierLifecycle(t *testing.T) {
	ctx := context.Background()
	if err := New(Options{Dir: "x", Bundle: BundleOptions{URL: "http://127.0.0.1:1/b.tar.gz"}}).Open(ctx); err == nil {
		t.Error("a directory and a bundle together were accepted")
	}
	if err := New(Options{Bundle: BundleOptions{URL: "ftp://example/b.tar.gz"}}).Open(ctx); err == nil {
		t.Error("a non-HTTP bundle URL was accepted")
	}
	c := New((&recorder{}).options(Options{}))
	if c.Revision() != "" {
		t.Error("a revision before Open")
	}
	if _, err := c.Classify(ctx, checkpointWrite); err == nil {
		t.Error("decided before Open")
	}
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Open(ctx); err == nil {
		t.Error("opened twice")
	}
	if c.Revision() != DefaultFiles().Revision() || c.Current().Revision() != c.Revision() {
		t.Errorf("revision %s, want the default's %s", c.Revision(), DefaultFiles().Revision())
	}
	if err := c.Reload(ctx); err != nil {
		t.Errorf("reload of the default: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestEvalHookAndStats(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writePolicy(t, dir, policyWith(""))
	rec := &recorder{}
	c := New(rec.options(Options{Dir: dir}))
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Classify(ctx, inputWithSummary("fine")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Classify(ctx, inputWithSummary("undefined")); !errors.Is(err, ErrUndefined) {
		t.Fatalf("error %v, want undefined", err)
	}
	rec.mu.Lock()
	evals := append([]error(nil), rec.evals...)
	rec.mu.Unlock()
	if len(evals) != 2 || evals[0] != nil || !errors.Is(evals[1], ErrUndefined) {
		t.Errorf("OnEval saw %v", evals)
	}
	if s := c.Stats(); s.Evaluations != 2 || s.EvalErrors != 1 || s.Reloads != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestRevision(t *testing.T) {
	a := DefaultFiles()
	if a.Revision() != DefaultFiles().Revision() || len(a.Revision()) != 64 {
		t.Fatalf("revision %q is not a stable content hash", a.Revision())
	}
	edited := DefaultFiles()
	edited["data.json"] += " "
	renamed := DefaultFiles()
	renamed["x/rules.rego"] = renamed["rules.rego"]
	delete(renamed, "rules.rego")
	swapped := FileSet{"a.rego": "xy", "b.rego": "z"}
	for name, other := range map[string]FileSet{"edited": edited, "renamed": renamed} {
		if other.Revision() == a.Revision() {
			t.Errorf("%s policy has the same revision", name)
		}
	}
	if swapped.Revision() == (FileSet{"a.rego": "x", "b.rego": "yz"}).Revision() {
		t.Error("moving bytes between files kept the revision")
	}
	p := compileDefault(t)
	d, err := p.Classify(context.Background(), checkpointWrite)
	if err != nil || d.Revision != a.Revision() || p.Revision() != a.Revision() {
		t.Errorf("decision revision %q, policy %q, want %q (%v)", d.Revision, p.Revision(), a.Revision(), err)
	}
}

// TestConcurrentClassifyDuringReload decides from several goroutines while
// the policy is swapped underneath (run with -race): every decision comes
// whole from one revision or the other.
func TestConcurrentClassifyDuringReload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := withoutTests(DefaultFiles()), withoutTests(withRule(t, "checkpoint", "action", "review"))
	writePolicy(t, dir, a)
	c := New((&recorder{}).options(Options{Dir: dir, PollInterval: time.Hour}))
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var inputs []*memory.PolicyInput
	for _, call := range benchInputs(t) {
		if !call.place && !call.write {
			inputs = append(inputs, call.in)
		}
	}
	revisions := map[string]bool{a.Revision(): true, b.Revision(): true}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 150 {
				d, err := c.Classify(ctx, inputs[(g*31+i)%len(inputs)])
				if err != nil || !revisions[d.Revision] || len(d.Reasons) == 0 {
					errs <- fmt.Errorf("decision %+v, error %v", d, err)
					return
				}
			}
		})
	}
	for i := range 6 {
		writePolicy(t, dir, map[bool]FileSet{true: a, false: b}[i%2 == 1])
		if err := c.Reload(ctx); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := c.Stats(); s.Reloads < 7 || s.EvalErrors != 0 {
		t.Errorf("stats %+v", s)
	}
}
