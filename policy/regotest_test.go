package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// TestDefaultPolicyRegoTests runs the default policy's own Rego tests, as
// `opa test policy/default/` does, and fails if any fails or none ran.
func TestDefaultPolicyRegoTests(t *testing.T) {
	files := DefaultFiles()
	modules, tests, err := parseModules(files)
	if err != nil {
		t.Fatal(err)
	}
	data, err := mergeData(files)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]*ast.Module{}
	for k, m := range modules {
		all[k] = m
	}
	for k, m := range tests {
		all[k] = m
	}
	results, err := runRegoTests(context.Background(), all, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no Rego test ran")
	}
	t.Logf("%d Rego tests passed", len(results))
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
