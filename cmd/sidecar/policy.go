package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/secrets"
	"github.com/memgate/memgate/store"
)

// openPolicy starts the policy engine: the operator's directory (reloaded on
// change), an OPA bundle server, or the default policy built into the binary.
func openPolicy(ctx context.Context, cfg serveConfig, log *slog.Logger, met *metrics.Metrics) (*policyHandle, error) {
	opts := policy.Options{Dir: cfg.policyDir, Logger: log, OnReload: met.PolicyLoaded}
	describe := "default"
	switch {
	case cfg.policyDir != "":
		describe = cfg.policyDir
	case cfg.policyBundle != "":
		describe = cfg.policyBundle
		opts.Bundle = policy.BundleOptions{URL: cfg.policyBundle, PollInterval: cfg.policyBundlePoll,
			KeyAlgorithm: cfg.policyBundleKeyAlg}
		if cfg.policyBundleKey != "" {
			key, err := os.ReadFile(cfg.policyBundleKey)
			if err != nil {
				return nil, fmt.Errorf("--policy-bundle-key: %w", err)
			}
			opts.Bundle.PublicKey = string(key)
		}
	}
	engine := policy.New(opts)
	if err := engine.Open(ctx); err != nil {
		return nil, err
	}
	log.Info("policy loaded", "source", describe, "revision", engine.Revision())
	return &policyHandle{
		classifier: engine,
		describe:   describe,
		close: func() {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := engine.Close(c); err != nil {
				log.Warn("closing the policy engine", "err", err)
			}
		},
	}, nil
}

// replayPolicy compiles a policy sent to the admin API and evaluates it over
// every recorded write of the audit log. It reads the log a page at a time
// and loads the pending writes the recorded inputs reference by id.
func replayPolicy(gov *memory.Governor) func(ctx context.Context, files map[string]string) (any, error) {
	return func(ctx context.Context, files map[string]string) (any, error) {
		compiled, err := policy.Compile(ctx, policy.FileSet(files))
		if err != nil {
			return nil, memory.Errorf(memory.EINVALID, "the policy does not load: %v", err)
		}
		rp := policy.NewReplayer(compiled, policy.WithRecords(gov.Get))
		for after := ""; ; {
			page, err := gov.EventsPage(ctx, after, replayPageEvents, 0)
			if err != nil {
				return nil, err
			}
			for _, ev := range page.Events {
				if err := rp.Add(ctx, ev); err != nil {
					return nil, err
				}
			}
			if page.Next == "" {
				return rp.Report(), nil
			}
			after = page.Next
		}
	}
}

// replayPageEvents is how many audit events a replay reads at a time (a
// page is also bounded in bytes); a variable for tests.
var replayPageEvents = 1000

func policyCommand(cl *cliEnv) *ffcli.Command {
	var dir string
	replay := adminCommand(cl, "policy replay", "policy replay --policy-dir DIR [--json]",
		"evaluate a new policy over the recorded writes and report where it would decide differently",
		func(fs *flag.FlagSet) { fs.StringVar(&dir, "policy-dir", "", "directory of the policy to try") },
		func(ctx context.Context, c *clientFlags, args []string) error {
			if dir == "" || len(args) > 0 {
				return fmt.Errorf("give --policy-dir")
			}
			files, err := policy.ReadDir(dir)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.call(ctx, "POST", "/admin/v1/policy/replay", map[string]any{"files": files}, &raw); err != nil {
				return err
			}
			return c.show(cl.stdout, raw, func(w io.Writer) error { return printReplay(w, raw) })
		})
	return &ffcli.Command{
		Name: "policy", ShortUsage: "sidecar policy replay|test|mode [flags]", ShortHelp: "test a policy, try it before switching to it, enforce or shadow it",
		Subcommands: []*ffcli.Command{replay, policyTestCommand(cl), policyModeCommand(cl)},
		Exec:        func(context.Context, []string) error { return flag.ErrHelp },
	}
}

func printReplay(w io.Writer, raw json.RawMessage) error {
	var rep policy.ReplayReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return err
	}
	fmt.Fprintf(w, "Policy %s over %d recorded writes: %d same, %d changed, %d errors\n",
		clip(rep.Revision, 12), rep.Evaluated, rep.Same, rep.Changed, rep.Errors)
	if rep.Redacted > 0 {
		fmt.Fprintf(w, "  redacted: %d rejected writes whose text the log no longer holds were replayed from their recorded decision, not re-evaluated\n", rep.Redacted)
	}
	if rep.PendingMissing > 0 {
		fmt.Fprintf(w, "  %d references to pending writes could not be resolved; those writes were replayed without them\n", rep.PendingMissing)
	}
	pairs := make([]string, 0, len(rep.Transitions))
	for k := range rep.Transitions {
		pairs = append(pairs, k)
	}
	sort.Strings(pairs)
	for _, k := range pairs {
		fmt.Fprintf(w, "  %-16s %d\n", k, rep.Transitions[k])
	}
	if len(rep.Changes) > 0 {
		if err := printTable(w, "RECORD\tSLOT\tTHEN\tNEW\tRULES\tSUMMARY", rep.Changes, func(tw io.Writer, c policy.ReplayChange) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.RecordID, c.SubjectID+"/"+c.FactType, c.Old.Action, c.New.Action,
				strings.Join(c.New.Rules, ","), clip(c.Summary, 50))
		}); err != nil {
			return err
		}
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "error on %s: %s\n", f.RecordID, f.Error)
	}
	return nil
}

// policyTestCommand is `sidecar policy test`: offline, with no sidecar
// running, it runs a policy's Rego tests and decides the operator's
// example writes through it as the sidecar would.
func policyTestCommand(cl *cliEnv) *ffcli.Command {
	fs := flag.NewFlagSet("sidecar policy test", flag.ContinueOnError)
	fs.SetOutput(cl.stderr)
	var t policyTest
	fs.StringVar(&t.dir, "policy-dir", "", "directory of the policy to test (default: the policy built into the binary)")
	fs.Func("examples", "file of example writes, in the labelled corpus's format; repeatable (default: DIR/examples.jsonl if it exists)",
		func(s string) error { t.examples = append(t.examples, s); return nil })
	fs.BoolVar(&t.json, "json", false, "print the report as JSON")
	fs.StringVar(&t.corpus, "corpus", "", "directory of real text by source (the repository's policy/corpus/real): also print what the policy parks of each source (reported, not a pass or fail)")
	return &ffcli.Command{
		Name: "test", ShortUsage: "sidecar policy test [--policy-dir DIR] [--examples FILE ...] [--corpus DIR] [--json]",
		ShortHelp: "run a policy's Rego tests and its table of example writes, offline",
		LongHelp: "Runs the Rego tests of the policy in DIR and reports each failure with its file:line and the\n" +
			"expression that failed; then writes each example of the examples files through the policy as\n" +
			"the sidecar would (placement, secret scanner, decision; no judge) on a scratch store, and\n" +
			"reports each whose action differs from the one expected, with the rules that fired. Exits\n" +
			"with status 1 if anything failed. With --corpus, it also writes every text of a directory of\n" +
			"real text by source and prints, for each source and part, the reviews per 1,000 ordinary\n" +
			"writes, the high-risk texts caught, precision and the poisoning kept out.",
		FlagSet: fs, Options: envOptions,
		Exec: func(ctx context.Context, args []string) error {
			args, err := interspersed(fs, args)
			if err != nil {
				return err
			}
			if len(args) > 0 {
				return fmt.Errorf("policy test takes no arguments, got %q", args)
			}
			rep, err := t.run(ctx)
			if err != nil {
				return err
			}
			if t.json {
				enc := json.NewEncoder(cl.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				var buf bytes.Buffer
				printPolicyTest(&buf, rep)
				if _, err := io.WriteString(cl.stdout, inert(buf.String())); err != nil {
					return err
				}
			}
			if rep.Failed() {
				return errPolicyTestFailed
			}
			return nil
		},
	}
}

// errPolicyTestFailed is `policy test`'s exit status 1: the report said
// what failed.
var errPolicyTestFailed = errors.New("policy test failed")

type policyTest struct {
	dir      string
	examples []string
	corpus   string
	json     bool
}

// policyTestReport is what `policy test` prints (and answers with --json).
type policyTestReport struct {
	Policy   string                 `json:"policy"` // the directory, or "default"
	Revision string                 `json:"revision"`
	Rego     *policy.RegoTestReport `json:"rego"`
	Examples []exampleFileReport    `json:"examples"`
	// Sources is what the policy did with each source of real text
	// (--corpus), tuning parts first.
	Sources []*policy.SourceScore `json:"sources,omitempty"`
}

// exampleFileReport is the outcome of one file of example writes.
type exampleFileReport struct {
	File       string            `json:"file"`
	Total      int               `json:"total"`
	Passed     int               `json:"passed"`
	Mismatches []exampleMismatch `json:"mismatches"`
}

// exampleMismatch is an example the policy decided otherwise than expected.
type exampleMismatch struct {
	ID     string        `json:"id"`
	Kind   string        `json:"kind"`
	Text   string        `json:"text"`
	Expect memory.Action `json:"expect"`
	Got    memory.Action `json:"got"`
	Rules  []string      `json:"rules"`
	Layer  memory.Layer  `json:"layer,omitempty"`
}

// Failed reports whether a Rego test or an example failed.
func (r *policyTestReport) Failed() bool {
	if len(r.Rego.Failures) > 0 {
		return true
	}
	for _, f := range r.Examples {
		if len(f.Mismatches) > 0 {
			return true
		}
	}
	return false
}

// run tests the policy: its Rego tests, then every example file.
func (t *policyTest) run(ctx context.Context) (*policyTestReport, error) {
	files, name := policy.DefaultFiles(), "default"
	if t.dir != "" {
		var err error
		if files, err = policy.ReadDir(t.dir); err != nil {
			return nil, err
		}
		name = t.dir
	}
	rego, err := policy.RunRegoTests(ctx, files)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	compiled, err := policy.CompileUntested(ctx, files)
	if err != nil {
		return nil, fmt.Errorf("policy %s does not load: %w", name, err)
	}
	rep := &policyTestReport{Policy: name, Revision: compiled.Revision(), Rego: rego, Examples: []exampleFileReport{}}
	tables, err := t.exampleTables()
	if err != nil {
		return nil, err
	}
	if len(tables) == 0 && t.corpus == "" {
		return rep, nil
	}
	gov, done, err := scratchGovernor(compiled)
	if err != nil {
		return nil, err
	}
	defer done()
	for _, tab := range tables {
		fr, err := decideExamples(ctx, gov, tab)
		if err != nil {
			return nil, err
		}
		rep.Examples = append(rep.Examples, *fr)
	}
	if t.corpus != "" {
		examples, err := policy.ReadRealCorpus(t.corpus)
		if err != nil {
			return nil, err
		}
		scores := policy.SourceScores{}
		for _, e := range examples {
			got, _, err := policy.SubmitExample(ctx, gov, e, "", "/corpus")
			if err != nil {
				return nil, fmt.Errorf("corpus: %s: %w", e.ID, err)
			}
			scores.Add(e, got)
		}
		rep.Sources = scores.Sorted()
	}
	return rep, nil
}

// exampleTable is one file of examples, read.
type exampleTable struct {
	file     string
	examples []policy.Example
}

// exampleTables reads the examples files given, or else the policy
// directory's examples.jsonl, or else (for the built-in policy) the
// examples shipped with it.
func (t *policyTest) exampleTables() ([]exampleTable, error) {
	paths := t.examples
	if len(paths) == 0 && t.dir != "" {
		p := filepath.Join(t.dir, "examples.jsonl")
		if _, err := os.Stat(p); err == nil {
			paths = []string{p}
		}
	}
	if len(paths) == 0 && t.dir == "" {
		ex, err := policy.ReadExamples(bytes.NewReader(policy.DefaultExamples()))
		if err != nil {
			return nil, fmt.Errorf("built-in examples: %w", err)
		}
		return []exampleTable{{file: "(built-in examples.jsonl)", examples: ex}}, nil
	}
	var out []exampleTable
	for _, p := range paths {
		ex, err := policy.ReadExamplesFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, exampleTable{file: p, examples: ex})
	}
	return out, nil
}

// scratchGovernor is the governor the sidecar runs (the policy, the secret
// scanner, a Badger store on disk), on a store in a temporary directory
// that done removes.
func scratchGovernor(c *policy.Compiled) (*memory.Governor, func(), error) {
	dir, err := os.MkdirTemp("", "memgate-policy-test-")
	if err != nil {
		return nil, nil, err
	}
	st, err := store.Open(store.Options{Dir: dir, NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("scratch store: %w", err)
	}
	done := func() {
		st.Close()
		os.RemoveAll(dir)
	}
	sc, err := secrets.New()
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("secret scanner: %w", err)
	}
	return memory.NewGovernor(memory.Options{Store: st, Classifier: c, Secrets: sc}), done, nil
}

// decideExamples writes each example through gov (policy.SubmitExample,
// as the labelled corpus's tests do) and collects the mismatches.
func decideExamples(ctx context.Context, gov *memory.Governor, tab exampleTable) (*exampleFileReport, error) {
	fr := &exampleFileReport{File: tab.file, Total: len(tab.examples), Mismatches: []exampleMismatch{}}
	for _, e := range tab.examples {
		got, res, err := policy.SubmitExample(ctx, gov, e, "", "/"+tab.file)
		if err != nil {
			return nil, fmt.Errorf("%s: example %s: %w", tab.file, e.ID, err)
		}
		if got == e.Expect {
			fr.Passed++
			continue
		}
		m := exampleMismatch{ID: e.ID, Kind: e.Kind, Text: e.Text, Expect: e.Expect, Got: got, Rules: []string{}}
		if rec := res.Record; rec != nil {
			m.Layer = rec.Layer
			if rec.Decision != nil {
				for _, r := range rec.Decision.Reasons {
					m.Rules = append(m.Rules, r.Rule)
				}
			}
		}
		fr.Mismatches = append(fr.Mismatches, m)
	}
	return fr, nil
}

func printPolicyTest(w io.Writer, rep *policyTestReport) {
	fmt.Fprintf(w, "Policy %s (revision %s)\n", rep.Policy, clip(rep.Revision, 12))
	r := rep.Rego
	fmt.Fprintf(w, "Rego tests: %d of %d passed\n", r.Passed, r.Total)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  FAIL %s\n", indentLines(f.String(), "       "))
	}
	examples, mismatches := 0, 0
	for _, f := range rep.Examples {
		examples += f.Total
		mismatches += len(f.Mismatches)
		fmt.Fprintf(w, "Examples %s: %d of %d as expected\n", f.File, f.Passed, f.Total)
		for _, m := range f.Mismatches {
			fmt.Fprintf(w, "  MISMATCH %s (%s): expected %s, got %s; rules %s; layer %s\n    %q\n", m.ID, m.Kind, m.Expect, m.Got,
				orDefault(strings.Join(m.Rules, ","), "-"), orDefault(string(m.Layer), "-"), clip(m.Text, 120))
		}
	}
	if len(rep.Examples) == 0 {
		fmt.Fprintln(w, "Examples: none (give --examples FILE, or keep examples.jsonl in the policy directory)")
	}
	if len(rep.Sources) > 0 {
		fmt.Fprintf(w, "Real text by source (reported; tuning parts were learned from, aside parts never):\n%s", policy.SourceTable(rep.Sources))
	}
	verdict := "PASS"
	if rep.Failed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%s: %d of %d Rego tests failed, %d of %d examples differ\n", verdict, len(r.Failures), r.Total, mismatches, examples)
}

// indentLines indents every line of s but the first.
func indentLines(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}
