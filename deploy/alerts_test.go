package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	alertRulesFile = "prometheus/memgate-alerts.yml"
	alertTestsFile = "prometheus/memgate-alerts.test.yml"
)

// ruleFile is the part of a Prometheus rule file the tests look at.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// ruleTests is the part of a promtool test file the tests look at.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name           string `json:"name"`
		AlertRuleTests []struct {
			EvalTime  string            `json:"eval_time"`
			AlertName string            `json:"alertname"`
			ExpAlerts []json.RawMessage `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestAlertRulesWithPromtool runs the real promtool: the rules must load and
// every unit test in memgate-alerts.test.yml must pass.
func TestAlertRulesWithPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool", installPrometheus)
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(alertRulesFile)},
		{"test", "rules", filepath.Base(alertTestsFile)},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(alertRulesFile)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestEveryAlertIsUnitTested: each alert has a promtool test in which it
// fires and one in which it stays quiet, and carries the routing labels and
// annotations deploy/README.md documents.
func TestEveryAlertIsUnitTested(t *testing.T) {
	var rules ruleFile
	readYAML(t, alertRulesFile, &rules)
	var tests ruleTests
	readYAML(t, alertTestsFile, &tests)
	if len(tests.RuleFiles) != 1 || tests.RuleFiles[0] != filepath.Base(alertRulesFile) {
		t.Fatalf("the unit tests load %v, want %s", tests.RuleFiles, filepath.Base(alertRulesFile))
	}
	fires, quiet := map[string]int{}, map[string]int{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName]++
			} else {
				quiet[a.AlertName]++
			}
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if fires[r.Alert] == 0 || quiet[r.Alert] == 0 {
				t.Errorf("%s: %d tests where it fires, %d where it stays quiet; want at least one of each", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
			switch r.Labels["severity"] {
			case "critical", "warning", "info":
			default:
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
			}
			switch r.Labels["team"] {
			case "sre", "reviewers", "agent-owners":
			default:
				t.Errorf("%s: team %q, want sre, reviewers or agent-owners", r.Alert, r.Labels["team"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			anchor := "#" + strings.ToLower(r.Alert)
			if !strings.HasSuffix(r.Annotations["runbook_url"], "deploy/README.md"+anchor) {
				t.Errorf("%s: runbook_url %q, want deploy/README.md%s", r.Alert, r.Annotations["runbook_url"], anchor)
			}
			if !strings.Contains(string(readme), "### "+r.Alert+"\n") {
				t.Errorf("%s: deploy/README.md has no section \"### %s\" for its runbook link", r.Alert, r.Alert)
			}
		}
	}
	for name := range fires {
		if !strings.Contains(string(mustRead(t, alertRulesFile)), "alert: "+name+"\n") {
			t.Errorf("the tests expect alert %s, which the rules do not define", name)
		}
	}
	if n < 10 {
		t.Fatalf("%d alerts, want the full set (availability, policy, rollbacks, conflicts, review, outbox)", n)
	}
}

// TestAlertRulesUseExportedMetrics: a rule over a misspelt metric never
// fires, so every name the rules select must be one a sidecar exports.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	exported := exportedNames(t)
	exported["up"] = true // Prometheus' own, per target
	var rules ruleFile
	readYAML(t, alertRulesFile, &rules)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: no metric found in %q", r.Alert, r.Expr)
			}
			for _, name := range names {
				if !exported[name] {
					t.Errorf("%s selects %s, which memgate does not export", r.Alert, name)
				}
			}
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
