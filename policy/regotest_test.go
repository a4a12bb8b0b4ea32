package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestDefaultPolicyRegoTests runs the default policy's own Rego tests, as
// `opa test policy/default/` does, and fails if any fails or none ran.
func TestDefaultPolicyRegoTests(t *testing.T) {
	rep, err := RunRegoTests(context.Background(), DefaultFiles())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total == 0 || rep.Passed != rep.Total || len(rep.Failures) > 0 {
		t.Fatalf("%d of %d Rego tests passed: %v", rep.Passed, rep.Total, rep.err())
	}
	t.Logf("%d Rego tests passed", rep.Total)
}

// TestEveryDefaultRuleIsTested checks that every rule id configured in the
// default data document is named by some Rego test.
func TestEveryDefaultRuleIsTested(t *testing.T) {
	files := DefaultFiles()
	var cfg struct {
		Config struct {
			Rules map[string]json.RawMessage `json:"rules"`
		} `json:"memgate_config"`
	}
	if err := json.Unmarshal([]byte(files["data.json"]), &cfg); err != nil {
		t.Fatal(err)
	}
	var tests strings.Builder
	for p, content := range files {
		if isTestModule(p) {
			tests.WriteString(content)
		}
	}
	if len(cfg.Config.Rules) < 10 {
		t.Fatalf("only %d rules configured", len(cfg.Config.Rules))
	}
	for id := range cfg.Config.Rules {
		if !strings.Contains(tests.String(), `"`+id+`"`) {
			t.Errorf("rule %s is not named by any Rego test", id)
		}
	}
}

// A failed Rego test names the test, its file and line, and the
// expression it failed at with the values of its variables; Compile's
// refusal says the same. Retuning a rule's outcome in data alone fails
// nothing.
func TestRegoTestFailureNamesTheExpression(t *testing.T) {
	ctx := context.Background()
	retuned := withRule(t, "state_override", "action", "apply")
	if rep, err := RunRegoTests(ctx, retuned); err != nil || len(rep.Failures) > 0 || rep.Passed != rep.Total {
		t.Fatalf("a copy with state_override's action in data changed fails its tests: %v %v", err, rep.err())
	}
	if _, err := Compile(ctx, retuned); err != nil {
		t.Fatalf("a copy with state_override's action in data changed is refused: %v", err)
	}

	broken := DefaultFiles()
	// The logic changes: an override of state no longer fires state_override.
	broken["rules.rego"] = strings.Replace(broken["rules.rego"], `layer in {"state", "policy"}
	input.current.id
	overrides`, `layer == "policy"
	input.current.id
	overrides`, 1)
	if broken["rules.rego"] == DefaultFiles()["rules.rego"] {
		t.Fatal("the state_override rule was not found to break")
	}
	rep, err := RunRegoTests(ctx, broken)
	if err != nil {
		t.Fatal(err)
	}
	// With the rule broken, an override of state fires no rule (no
	// decision); inferred, only inference_key_fact fires.
	want := map[string][]string{
		"data.memgate_test.test_state_override":             {"decide(with_current(phase_write, cur))", "undefined"},
		"data.memgate_test.test_inference_overriding_state": {`rules(d) == {"inference_key_fact", "state_override"}`, `{"inference_key_fact"}`},
	}
	var f RegoTestFailure
	for _, got := range rep.Failures {
		parts, ok := want[got.Test]
		if !ok {
			continue
		}
		delete(want, got.Test)
		f = got
		if !strings.HasPrefix(got.Location, "rules_test.rego:") || !strings.HasPrefix(got.FailedAt, "rules_test.rego:") {
			t.Errorf("failure %s: want the test's file and line and the failed expression's", got)
		}
		for _, p := range parts {
			if !strings.Contains(got.Expr, p) {
				t.Errorf("failure %s: the expression and its values do not show %s", got, p)
			}
		}
	}
	if len(want) > 0 || rep.Passed+len(rep.Failures) != rep.Total {
		t.Fatalf("report %+v; missing %v", rep, want)
	}
	_, err = Compile(ctx, broken)
	if err == nil || !strings.Contains(err.Error(), f.String()) || !errors.Is(err, errRegoTests) {
		t.Errorf("Compile's refusal %v does not name %s", err, f)
	}
}
