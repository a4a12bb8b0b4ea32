package metrics_test

import (
	"testing"

	"github.com/memgate/memgate/memory"
)

// TestShadowIsCounted: the mode gauge follows SetPolicyMode, and a write
// applied in shadow mode counts once per rule under what policy would have
// done; written as policy said (apply) it counts under writes_total only.
func TestShadowIsCounted(t *testing.T) {
	e := newEnv(t, nil)
	e.want([]series{
		{"memgate_policy_mode", []string{"mode", "enforce"}, 1},
		{"memgate_policy_mode", []string{"mode", "shadow"}, 0},
	})
	if err := e.gov.SetPolicyMode(memory.PolicyShadow); err != nil {
		t.Fatal(err)
	}
	e.submit(write(memory.LayerPolicy, "project-alpha", "publish.auto", "auto-publish is off", "native", "run-1"))
	e.submit(write(memory.LayerKnowledge, "project-alpha", "", "the wiki password is on page 3", "native", "run-1"))
	e.submit(write(memory.LayerKnowledge, "project-alpha", "", "the office is in Berlin", "native", "run-1"))
	e.want([]series{
		{"memgate_policy_mode", []string{"mode", "enforce"}, 0},
		{"memgate_policy_mode", []string{"mode", "shadow"}, 1},
		{"memgate_shadow_decisions_total", []string{"would", "review", "rule", "strategy"}, 1},
		{"memgate_shadow_decisions_total", []string{"would", "reject", "rule", "secret"}, 1},
		// Applied: writes_total counts what was done, shadow_decisions_total what policy said.
		{"memgate_writes_total", []string{"dialect", "native", "action", "apply", "risk", "high"}, 2},
		{"memgate_writes_total", []string{"dialect", "native", "action", "apply", "risk", "low"}, 1},
	})
	if err := e.gov.SetPolicyMode(memory.PolicyEnforce); err != nil {
		t.Fatal(err)
	}
	e.submit(write(memory.LayerPolicy, "project-alpha", "publish.manual", "releases need a human", "native", "run-1"))
	e.want([]series{
		{"memgate_policy_mode", []string{"mode", "enforce"}, 1},
		{"memgate_shadow_decisions_total", []string{"would", "review", "rule", "strategy"}, 1},
		{"memgate_writes_total", []string{"dialect", "native", "action", "review", "risk", "high"}, 1},
	})
}
