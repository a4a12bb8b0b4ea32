package main

import (
	"context"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
)

// TestCLIShadowMode: `policy mode` switches a running sidecar to shadow
// mode, a write policy parks is applied and `review list --shadow` lists
// it with its rule, `explain` says it was applied in shadow mode, and
// `policy mode enforce` parks the next one.
func TestCLIShadowMode(t *testing.T) {
	gov, url := cliFixture(t)
	ctx := context.Background()
	submit := func(fact string) *memory.SubmitResult {
		t.Helper()
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: fact, Summary: "auto-publish is on"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if out, err := runCLI(t, url, "policy", "mode"); err != nil || out != "policy mode: enforce\n" {
		t.Fatalf("policy mode: %v %q", err, out)
	}
	if out, err := runCLI(t, url, "review", "list", "--shadow"); err != nil || !strings.Contains(out, "No write was let through") {
		t.Fatalf("review list --shadow before any: %v %q", err, out)
	}
	if _, err := runCLI(t, url, "policy", "mode", "audit"); err == nil {
		t.Fatal("policy mode audit: want an error")
	}
	if out, err := runCLI(t, url, "policy", "mode", "shadow"); err != nil || out != "policy mode: shadow\n" {
		t.Fatalf("policy mode shadow: %v %q", err, out)
	}
	res := submit("publish.auto")
	if res.Outcome != memory.OutcomeApplied {
		t.Fatalf("in shadow mode: %s, want applied", res.Outcome)
	}
	out, err := runCLI(t, url, "review", "list", "--shadow")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Policy mode: shadow", res.Record.ID, "review", "apply", "strategy.publish", "project-alpha/publish.auto", "auto-publish is on", "active"} {
		if !strings.Contains(out, want) {
			t.Errorf("review list --shadow lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, url, "explain", res.Record.ID)
	if err != nil || !strings.Contains(out, "applied in shadow mode: policy would have parked it (rules strategy.publish)") ||
		!strings.Contains(out, "[shadow]") {
		t.Errorf("explain: %v\n%s", err, out)
	}
	if out, err := runCLI(t, url, "policy", "mode", "enforce"); err != nil || out != "policy mode: enforce\n" {
		t.Fatalf("policy mode enforce: %v %q", err, out)
	}
	if res := submit("publish.manual"); res.Outcome != memory.OutcomeParked {
		t.Errorf("back in enforce mode: %s, want parked", res.Outcome)
	}
	// The page cursor: one write a page, and the more: line names the next.
	if err := gov.SetPolicyMode(memory.PolicyShadow); err != nil {
		t.Fatal(err)
	}
	second := submit("publish.weekly")
	out, err = runCLI(t, url, "review", "list", "--shadow", "--limit", "1")
	if err != nil || !strings.Contains(out, second.Record.ID) || !strings.Contains(out, "more: sidecar review list --shadow --after ") {
		t.Errorf("review list --shadow --limit 1: %v\n%s", err, out)
	}
}
