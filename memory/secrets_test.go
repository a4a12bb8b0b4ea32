package memory

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fakeScanner finds "SECRET-" followed by anything.
type fakeScanner struct{}

func (fakeScanner) FindSecrets(text string) []string {
	if strings.Contains(text, "SECRET-") {
		return []string{"fake"}
	}
	return nil
}

func TestScanRecordNamesEveryField(t *testing.T) {
	for _, tc := range []struct {
		field string
		rec   Record
	}{
		{"summary", Record{Summary: "x SECRET-1"}},
		{"value", Record{Value: json.RawMessage(`{"k": ["SECRET-\u0032"]}`)}}, // escaped in JSON
		{"metadata", Record{Metadata: map[string]any{"a": "SECRET-3"}}},
		{"factType", Record{FactType: "SECRET-4"}},
		{"actor.agentId", Record{Actor: Actor{AgentID: "SECRET-5"}}},
		{"evidence.sourceRef", Record{Evidence: Evidence{SourceRef: "SECRET-6"}}},
		{"scope.runId", Record{Scope: Scope{RunID: "SECRET-7"}}},
	} {
		got := ScanRecord(fakeScanner{}, &tc.rec)
		if len(got) != 1 || got[0].Field != tc.field || got[0].Rule != "fake" {
			t.Errorf("%s: findings %v", tc.field, got)
		}
	}
	if got := ScanRecord(fakeScanner{}, &Record{Summary: "plain", Actor: Actor{AgentID: "a"}}); got != nil {
		t.Errorf("a clean record: %v", got)
	}
	if got := ScanRecord(nil, &Record{Summary: "SECRET-1"}); got != nil {
		t.Errorf("no scanner: %v", got)
	}
}

func TestASecretIsRejectedWhateverPolicySays(t *testing.T) {
	findings := []SecretFinding{{Field: "actor.agentId", Rule: "fake"}}
	for _, a := range []Action{ActionApply, ActionReview, ActionReject} {
		d := withSecrets(Decision{Action: a, Risk: RiskLow, Reasons: []Reason{{Rule: "r", Message: "m"}}}, findings)
		if d.Action != ActionReject || !slices.Contains(d.Redact, "actor.agentId") {
			t.Errorf("policy said %s: %+v", a, d)
		}
	}
	if d := withSecrets(Decision{Action: ActionApply}, nil); d.Action != ActionApply || d.Redact != nil {
		t.Errorf("no findings changed the decision: %+v", d)
	}
}

func TestRejectKeepsNoSecret(t *testing.T) {
	rec := &Record{ID: "r1", SlotID: "s1", Op: OpWrite, Layer: LayerKnowledge, SubjectID: "u", FactType: "SECRET-f",
		Summary: "SECRET-s", Value: json.RawMessage(`"SECRET-v"`), Metadata: map[string]any{"m": "SECRET-m"},
		Actor: Actor{AgentID: "SECRET-a", UserID: "bob"}, Evidence: Evidence{Excerpt: "SECRET-e", SourceRef: "SECRET-r"}}
	d := withSecrets(Decision{Action: ActionApply, Risk: RiskLow}, ScanRecord(fakeScanner{}, rec))
	eff, out, err := Submit(SlotState{}, rec, d, t0)
	if err != nil || out != OutcomeRefused {
		t.Fatalf("%s, %v", out, err)
	}
	b, _ := json.Marshal(eff)
	if strings.Contains(string(b), "SECRET-") {
		t.Errorf("the effects of a rejection keep a secret: %s", b)
	}
	if eff.Records[0].Actor.UserID != "bob" {
		t.Errorf("a field without a secret was redacted: %+v", eff.Records[0].Actor)
	}
}
