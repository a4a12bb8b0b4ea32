package policy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
)

// TestPerRuleShadowFromData: an operator's copy of the default policy
// whose data marks a rule "mode": "shadow" loads (the default's own Rego
// tests pass with it), and a write that rule alone parks comes back with
// policy's action kept and a shadow that applies it.
func TestPerRuleShadowFromData(t *testing.T) {
	files := DefaultFiles()
	data, ok := files["data.json"]
	if !ok || !strings.Contains(data, `"status_change": {`) {
		t.Fatal("the default data has no status_change rule entry")
	}
	files["data.json"] = strings.Replace(data, `"status_change": {`, `"status_change": {"mode": "shadow", `, 1)
	c, err := Compile(context.Background(), files)
	if err != nil {
		t.Fatalf("a copy with a shadowed rule: %v", err)
	}
	classify := func(summary string) memory.Decision {
		t.Helper()
		rec := &memory.Record{ID: "r1", Layer: memory.LayerKnowledge, SubjectID: "s", Summary: summary, CandidateSource: memory.SourceUser}
		d, err := c.Classify(context.Background(), &memory.PolicyInput{Op: memory.OpWrite, Candidate: rec, Pending: []*memory.Record{}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := classify("The release is now paused")
	if d.Action != memory.ActionReview || d.Shadow == nil || d.Shadow.Action != memory.ActionApply ||
		!slices.Equal(d.Shadow.Rules, []string{"status_change"}) || d.Shadow.By != memory.ShadowByRule {
		t.Errorf("status change with status_change shadowed: %+v shadow %+v", d, d.Shadow)
	}
	if d := classify("Remember that the office is in Berlin"); d.Shadow != nil {
		t.Errorf("a write no shadowed rule stops has a shadow: %+v", d.Shadow)
	}
}

// TestEveryRuleShadowedPassesTheDefaultTests: a copy of the default with
// every rule marked "mode": "shadow" loads, so its Rego tests hold for any
// choice of shadowed rules; every rule that parks or rejects is then
// shadowed, and a secret is still rejected by the decision.
func TestEveryRuleShadowedPassesTheDefaultTests(t *testing.T) {
	files := withRules(t, func(rules map[string]any) {
		if len(rules) == 0 {
			t.Fatal("the default data has no rules")
		}
		for _, r := range rules {
			r.(map[string]any)["mode"] = "shadow"
		}
	})
	c, err := Compile(context.Background(), files)
	if err != nil {
		t.Fatalf("the default with every rule shadowed: %v", err)
	}
	rec := &memory.Record{ID: "r1", Layer: memory.LayerPolicy, SubjectID: "s", FactType: "publish.auto", Summary: "never auto-publish", CandidateSource: memory.SourceUser}
	d, err := c.Classify(context.Background(), &memory.PolicyInput{Op: memory.OpWrite, Candidate: rec, Pending: []*memory.Record{}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != memory.ActionReview || d.Shadow == nil || d.Shadow.Action != memory.ActionApply {
		t.Errorf("a policy write with every rule shadowed: %+v shadow %+v", d, d.Shadow)
	}
	in := &memory.PolicyInput{Op: memory.OpWrite, Candidate: rec, Pending: []*memory.Record{},
		Secrets: []memory.SecretFinding{{Field: "summary", Rule: "github-pat"}}}
	if d, err := c.Classify(context.Background(), in); err != nil || d.Action != memory.ActionReject {
		t.Errorf("a secret with every rule shadowed: %+v, %v; the decision still rejects", d, err)
	}
}

func TestDecodeShadow(t *testing.T) {
	const head = `{"risk": "high", "categories": [], "action": "reject", "reasons": [{"rule": "r", "message": "m"}], "affects": []`
	for _, tc := range []struct {
		name, shadow string
		want         *memory.Shadow
		malformed    bool
	}{
		{"none", ``, nil, false},
		{"null", `, "shadow": null`, nil, false},
		{"applies", `, "shadow": {"rules": ["r"], "action": "apply"}`, &memory.Shadow{Action: memory.ActionApply, Rules: []string{"r"}, By: memory.ShadowByRule}, false},
		{"parks instead", `, "shadow": {"rules": ["r"], "action": "review"}`, &memory.Shadow{Action: memory.ActionReview, Rules: []string{"r"}, By: memory.ShadowByRule}, false},
		{"no less strict: nothing shadowed", `, "shadow": {"rules": ["r"], "action": "reject"}`, nil, false},
		{"no rules: nothing shadowed", `, "shadow": {"rules": [], "action": "apply"}`, nil, false},
		{"not an object", `, "shadow": "apply"`, nil, true},
		{"bad action", `, "shadow": {"rules": ["r"], "action": "maybe"}`, nil, true},
		{"rules missing", `, "shadow": {"action": "apply"}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decodeDecision(ast.MustParseTerm(head + tc.shadow + `}`).Value)
			if tc.malformed {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (d.Shadow == nil) != (tc.want == nil) || d.Shadow != nil && (d.Shadow.Action != tc.want.Action ||
				!slices.Equal(d.Shadow.Rules, tc.want.Rules) || d.Shadow.By != tc.want.By) {
				t.Errorf("shadow %+v, want %+v", d.Shadow, tc.want)
			}
		})
	}
}
