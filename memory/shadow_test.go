package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// shadowObserver records what the governor reports of shadowed writes.
type shadowObserver struct {
	NopObserver
	shadowed []string // "would:rule,rule"
	modes    []PolicyMode
}

func (o *shadowObserver) Shadowed(would Action, rules []string) {
	o.shadowed = append(o.shadowed, string(would)+":"+strings.Join(rules, ","))
}
func (o *shadowObserver) PolicyMode(m PolicyMode) { o.modes = append(o.modes, m) }

// shadowPolicy decides by the summary's first word: "park", "reject",
// "rule-park" (parked by a rule the policy's data shadows), "rule-mixed"
// (a shadowed rejecting rule beside a parking one that is not), "broken"
// (policy fails) or anything else (apply).
func shadowPolicy(_ context.Context, in *PolicyInput) (Decision, error) {
	word, _, _ := strings.Cut(in.Candidate.Summary, " ")
	d := Decision{Risk: RiskHigh, Categories: []string{}, Affects: []string{}}
	switch word {
	case "park":
		d.Action, d.Reasons = ActionReview, []Reason{{Rule: "state_override", Message: "m"}}
	case "reject":
		d.Action, d.Reasons = ActionReject, []Reason{{Rule: "not_a_memory", Message: "m"}}
	case "rule-park":
		d.Action, d.Reasons = ActionReview, []Reason{{Rule: "status_change", Message: "m"}}
		d.Shadow = &Shadow{Action: ActionApply, Rules: []string{"status_change"}, By: ShadowByRule}
	case "rule-mixed":
		d.Action, d.Reasons = ActionReject, []Reason{{Rule: "not_a_memory", Message: "m"}, {Rule: "status_change", Message: "m"}}
		d.Shadow = &Shadow{Action: ActionReview, Rules: []string{"not_a_memory"}, By: ShadowByRule}
	case "pii":
		// The default policy retuned to park personal data.
		d.Action, d.Reasons = ActionReview, []Reason{{Rule: RulePIIDetected, Message: "m"}}
	case "broken":
		return d, errors.New("policy is broken")
	default:
		d.Action, d.Risk, d.Reasons = ActionApply, RiskLow, []Reason{{Rule: "new_fact", Message: "m"}}
	}
	return d, nil
}

func newShadowGov(mode PolicyMode) (*Governor, *shadowObserver) {
	obs := &shadowObserver{}
	n := 0
	return NewGovernor(Options{Store: newMemStore(), Classifier: ClassifierFunc(shadowPolicy), Secrets: fakeScanner{},
		Observer: obs, PolicyMode: mode, NewID: func() string { n++; return fmt.Sprintf("id%06d", n) }}), obs
}

func TestShadowDecisions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    PolicyMode
		summary string
		outcome Outcome
		action  Action // what policy said, kept on the record
		shadow  string // "by:did:rules", "" for none
	}{
		{"enforce parks", PolicyEnforce, "park stage is ga", OutcomeParked, ActionReview, ""},
		{"shadow applies a park", PolicyShadow, "park stage is ga", OutcomeApplied, ActionReview, "mode:apply:state_override"},
		{"shadow applies a rejection", PolicyShadow, "reject hello there", OutcomeApplied, ActionReject, "mode:apply:not_a_memory"},
		{"a secret is rejected in shadow mode", PolicyShadow, "park SECRET-1", OutcomeRefused, ActionReject, ""},
		{"a policy failure parks in shadow mode", PolicyShadow, "broken text", OutcomeParked, ActionReview, ""},
		{"a low-risk write has no shadow", PolicyShadow, "fine text", OutcomeApplied, ActionApply, ""},
		{"per-rule shadow applies in enforce mode", PolicyEnforce, "rule-park stage is ga", OutcomeApplied, ActionReview, "rule:apply:status_change"},
		{"per-rule shadow of a rejection still parks for the other rule", PolicyEnforce, "rule-mixed x", OutcomeParked, ActionReject, "rule:review:not_a_memory"},
		{"shadow mode wins over a per-rule partial shadow", PolicyShadow, "rule-mixed x", OutcomeApplied, ActionReject, "mode:apply:not_a_memory,status_change"},
		{"per-rule shadow never lets a secret through", PolicyEnforce, "rule-park SECRET-2", OutcomeRefused, ActionReject, ""},
		{"personal data policy parks stays parked in shadow mode", PolicyShadow, "pii card PII-1", OutcomeParked, ActionReview, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gov, obs := newShadowGov(tc.mode)
			ctx := context.Background()
			res, err := gov.Submit(ctx, Candidate{SubjectID: "p", FactType: "stage", Layer: LayerState, Summary: tc.summary})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s", res.Outcome, tc.outcome)
			}
			d := res.Record.Decision
			if d.Action != tc.action {
				t.Errorf("recorded action %s, want %s (what policy said)", d.Action, tc.action)
			}
			got := ""
			if d.Shadow != nil {
				got = d.Shadow.By + ":" + string(d.Shadow.Action) + ":" + strings.Join(d.Shadow.Rules, ",")
			}
			if got != tc.shadow {
				t.Errorf("shadow %q, want %q", got, tc.shadow)
			}
			page, err := gov.Shadowed(ctx, "", 10, false)
			if err != nil {
				t.Fatal(err)
			}
			// Listed, counted and marked in the audit log exactly when shadowed.
			if listed := page.Count == 1; listed != (tc.shadow != "") {
				t.Errorf("listed %d shadowed writes, shadow %q", page.Count, tc.shadow)
			}
			if counted := len(obs.shadowed) == 1; counted != (tc.shadow != "") {
				t.Errorf("observer heard %v, shadow %q", obs.shadowed, tc.shadow)
			}
			if tc.shadow == "" {
				return
			}
			it := page.Items[0]
			if it.RecordID != res.Record.ID || it.Would != tc.action || it.Did != d.Shadow.Action ||
				!slices.Equal(it.Rules, d.Shadow.Rules) || it.Summary != tc.summary || it.Status != res.Record.Status {
				t.Errorf("listed %+v for %+v", it, res.Record)
			}
			if want := string(tc.action) + ":" + strings.Join(d.Shadow.Rules, ","); obs.shadowed[0] != want {
				t.Errorf("observer heard %q, want %q", obs.shadowed[0], want)
			}
			ex, err := gov.Explain(ctx, res.Record.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ev := ex.Events[len(ex.Events)-1]; ev.Decision == nil || ev.Decision.Shadow == nil {
				t.Errorf("the write's audit event %+v carries no shadow mark", ev)
			}
		})
	}
}

func TestShadowModeSwitchesWithoutRestart(t *testing.T) {
	gov, obs := newShadowGov("")
	ctx := context.Background()
	outcome := func(summary string) Outcome {
		t.Helper()
		res, err := gov.Submit(ctx, Candidate{SubjectID: "p", FactType: "stage", Layer: LayerState, Summary: summary})
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome
	}
	steps := []struct {
		mode PolicyMode
		want Outcome
	}{{PolicyShadow, OutcomeApplied}, {PolicyEnforce, OutcomeParked}, {PolicyShadow, OutcomeApplied}}
	for i, s := range steps {
		if err := gov.SetPolicyMode(s.mode); err != nil {
			t.Fatal(err)
		}
		if got := gov.PolicyMode(); got != s.mode {
			t.Fatalf("mode %s after setting %s", got, s.mode)
		}
		if got := outcome(fmt.Sprintf("park version %d", i)); got != s.want {
			t.Errorf("step %d (%s): %s, want %s", i, s.mode, got, s.want)
		}
	}
	if err := gov.SetPolicyMode("audit"); ErrorCode(err) != EINVALID {
		t.Errorf("an unknown mode: %v, want EINVALID", err)
	}
	want := []PolicyMode{PolicyEnforce, PolicyShadow, PolicyEnforce, PolicyShadow}
	if !slices.Equal(obs.modes, want) {
		t.Errorf("observer heard modes %v, want %v", obs.modes, want)
	}
	// One active version: each shadow-applied write superseded the last.
	hist, err := gov.History(ctx, KeyedSlotID("p", "stage"))
	if err != nil {
		t.Fatal(err)
	}
	var active []string
	for _, r := range hist {
		if r.Status == StatusActive {
			active = append(active, r.Summary)
			if r.RollbackPoint == "" || r.Supersedes == "" {
				t.Errorf("shadow-applied override %s has rollback point %q, supersedes %q", r.ID, r.RollbackPoint, r.Supersedes)
			}
		}
	}
	if !slices.Equal(active, []string{"park version 2"}) {
		t.Errorf("active versions %q, want only the last", active)
	}
}

func TestShadowedPages(t *testing.T) {
	gov, _ := newShadowGov(PolicyShadow)
	ctx := context.Background()
	var want []string
	for i := range 7 {
		res, err := gov.Submit(ctx, Candidate{SubjectID: "p", FactType: fmt.Sprint("f", i), Summary: fmt.Sprint("park ", i)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res.Record.ID)
		if _, err := gov.Submit(ctx, Candidate{SubjectID: "q", FactType: fmt.Sprint("f", i), Summary: "fine"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, newest := range []bool{false, true} {
		var got []string
		after, pages := "", 0
		for {
			page, err := gov.Shadowed(ctx, after, 3, newest)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range page.Items {
				got = append(got, it.RecordID)
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
		exp := slices.Clone(want)
		if newest {
			slices.Reverse(exp)
		}
		if !slices.Equal(got, exp) || pages != 3 {
			t.Errorf("newest=%v: %d pages %v, want 3 pages %v", newest, pages, got, exp)
		}
	}
	if _, err := gov.Shadowed(ctx, "", 0, false); ErrorCode(err) != EINVALID {
		t.Errorf("limit 0: %v, want EINVALID", err)
	}
}
