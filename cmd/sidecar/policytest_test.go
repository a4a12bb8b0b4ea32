package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/secrets"
	"github.com/memgate/memgate/store"
)

// defaultGovernor is the governor the sidecar runs with the default policy
// and the secret scanner, on a Badger store.
func defaultGovernor(t *testing.T) *memory.Governor {
	t.Helper()
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	compiled, err := policy.Compile(context.Background(), policy.DefaultFiles())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	return memory.NewGovernor(memory.Options{Store: st, Classifier: compiled, Secrets: sc})
}

// writeDefaultCopy writes the default policy to a directory, as an operator
// copies it, with edit applied to its data document.
func writeDefaultCopy(t *testing.T, edit func(rules map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range policy.DefaultFiles() {
		if p == "data.json" && edit != nil {
			var data map[string]any
			if err := json.Unmarshal([]byte(content), &data); err != nil {
				t.Fatal(err)
			}
			edit(data[policy.ConfigRoot].(map[string]any)["rules"].(map[string]any))
			b, err := json.MarshalIndent(data, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			content = string(b)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// submitLog writes what an operator's first week holds: a new state fact
// and its override (parked: state_override alone), a credential (rejected,
// redacted) and a chit-chat line of a Mem0 conversation (rejected as not a
// memory, redacted too).
func submitLog(t *testing.T, gov *memory.Governor) {
	t.Helper()
	ctx := context.Background()
	for _, w := range []struct {
		c    memory.Candidate
		want memory.Outcome
	}{
		{memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "release.stage", Summary: "project alpha is in beta"}, memory.OutcomeApplied},
		{memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "release.stage", Summary: "project alpha is in production"}, memory.OutcomeParked},
		{memory.Candidate{SubjectID: "u1", Summary: "my api key is sk-abc123def456ghi789jkl"}, memory.OutcomeRefused},
		{memory.Candidate{Summary: "Hi!", Scope: memory.Scope{UserID: "u2"}, Actor: memory.Actor{Dialect: "mem0"},
			Evidence: memory.Evidence{SourceRef: "mem0:infer:u2#0"}}, memory.OutcomeRefused},
	} {
		res, err := gov.Submit(ctx, w.c)
		if err != nil || res.Outcome != w.want {
			t.Fatalf("%q: %v %v, want %s", w.c.Summary, res, err, w.want)
		}
	}
}

// An unchanged copy of the default policy replays with no change over a
// log whose rejected writes were redacted: they keep their recorded
// decision, and the report counts them.
func TestReplayUnchangedCopyKeepsRedactedDecisions(t *testing.T) {
	gov := defaultGovernor(t)
	submitLog(t, gov)
	files, err := policy.ReadDir(writeDefaultCopy(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := replayPolicy(gov)(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	r := out.(*policy.ReplayReport)
	if r.Evaluated != 4 || r.Same != 4 || r.Changed != 0 || r.Errors != 0 || r.Redacted != 2 ||
		r.Transitions["reject->reject"] != 2 {
		t.Fatalf("report %+v, want 4 the same, 2 of them redacted rejections", r)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := printReplay(&text, raw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "4 same, 0 changed") || !strings.Contains(text.String(), "redacted: 2 rejected writes") {
		t.Errorf("replay text:\n%s", text.String())
	}
}

// An operator tunes the policy with data alone: a copy whose only change
// is state_override's action compiles, passes its Rego tests, and its
// replay shows exactly the override that would now apply.
func TestReplayDataOnlyTuning(t *testing.T) {
	gov := defaultGovernor(t)
	submitLog(t, gov)
	dir := writeDefaultCopy(t, func(rules map[string]any) {
		rules["state_override"].(map[string]any)["action"] = "apply"
	})
	files, err := policy.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := replayPolicy(gov)(context.Background(), files)
	if err != nil {
		t.Fatalf("the tuned copy does not load: %v", err)
	}
	r := out.(*policy.ReplayReport)
	if r.Changed != 1 || r.Transitions["review->apply"] != 1 || r.Errors != 0 || r.Redacted != 2 {
		t.Fatalf("report %+v, want one review->apply", r)
	}
	ch := r.Changes[0]
	if ch.Summary != "project alpha is in production" || len(ch.New.Rules) != 1 || ch.New.Rules[0] != "state_override" {
		t.Errorf("change %+v", ch)
	}
}

// runPolicyTest runs `sidecar policy test` with args and returns its
// output and error.
func runPolicyTest(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"policy", "test"}, args...), strings.NewReader(""), &out, &errOut)
	return out.String() + errOut.String(), err
}

// The built-in policy passes its Rego tests and the examples shipped with
// it, offline.
func TestPolicyTestDefault(t *testing.T) {
	out, err := runPolicyTest(t, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep policyTestReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Policy != "default" || rep.Rego.Total == 0 || rep.Rego.Passed != rep.Rego.Total || len(rep.Examples) != 1 ||
		rep.Examples[0].Total == 0 || rep.Examples[0].Passed != rep.Examples[0].Total {
		t.Fatalf("report %s", out)
	}
}

// A copy of the default with a retuned rule, a broken Rego test and its
// own examples: the report names the failed test with its line and the
// expression that failed, and each example whose action changed with the
// rules that fired, and the command fails.
func TestPolicyTestReportsFailures(t *testing.T) {
	dir := writeDefaultCopy(t, func(rules map[string]any) {
		rules["knowledge_verified"].(map[string]any)["action"] = "review"
	})
	tests := filepath.Join(dir, "rules_test.rego")
	b, err := os.ReadFile(tests)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "test_checkpoint if {\n", "test_checkpoint if {\n\tcount(rules(decide(phase_write))) == 7\n", 1)
	if broken == string(b) {
		t.Fatal("test_checkpoint not found")
	}
	if err := os.WriteFile(tests, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	// The copy's own examples.jsonl is read by default; --examples replaces it.
	if err := os.WriteFile(filepath.Join(dir, "examples.jsonl"), policy.DefaultExamples(), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(t.TempDir(), "mine.jsonl")
	if err := os.WriteFile(mine, []byte(`# an operator's examples
{"id": "office-hours", "lang": "en", "kind": "knowledge", "text": "The Berlin office opens at 9", "expect": "apply"}
{"id": "freeze", "lang": "en", "kind": "strategy", "text": "Never deploy on Fridays", "expect": "review"}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := runPolicyTest(t, "--policy-dir", dir)
	if !errors.Is(err, errPolicyTestFailed) {
		t.Fatalf("error %v, want the test to fail\n%s", err, out)
	}
	for _, want := range []string{
		"FAIL data.memgate_test.test_checkpoint (rules_test.rego:",
		"failed at rules_test.rego:",
		"count(rules(decide(phase_write))) == 7",
		"examples.jsonl: ",
		"MISMATCH knowledge-en (knowledge): expected apply, got review; rules knowledge_verified; layer knowledge",
		"FAIL: 1 of ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = runPolicyTest(t, "--policy-dir", dir, "--examples", mine, "--json")
	if !errors.Is(err, errPolicyTestFailed) {
		t.Fatalf("error %v\n%s", err, out)
	}
	var rep policyTestReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Examples) != 1 || rep.Examples[0].File != mine || rep.Examples[0].Total != 2 || rep.Examples[0].Passed != 1 {
		t.Fatalf("examples %+v", rep.Examples)
	}
	m := rep.Examples[0].Mismatches[0]
	if m.ID != "office-hours" || m.Expect != memory.ActionApply || m.Got != memory.ActionReview ||
		len(m.Rules) != 1 || m.Rules[0] != "knowledge_verified" || m.Text != "The Berlin office opens at 9" {
		t.Errorf("mismatch %+v", m)
	}
	if len(rep.Rego.Failures) != 1 || rep.Rego.Failures[0].Test != "data.memgate_test.test_checkpoint" {
		t.Errorf("rego %+v", rep.Rego)
	}
}
