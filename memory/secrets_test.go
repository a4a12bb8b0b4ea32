package memory

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fakeScanner finds "SECRET-" followed by anything as a secret, and
// "PII-" as personal data.
type fakeScanner struct{}

func (fakeScanner) FindSecrets(text string) []string {
	if strings.Contains(text, "SECRET-") {
		return []string{"fake"}
	}
	return nil
}

func (fakeScanner) FindPII(text string) []string {
	if strings.Contains(text, "PII-") {
		return []string{"fake-pii"}
	}
	return nil
}

// secretsOnly is a SecretScanner that is no PIIScanner.
type secretsOnly struct{}

func (secretsOnly) FindSecrets(text string) []string { return fakeScanner{}.FindSecrets(text) }

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
		if len(got) != 1 || got[0].Field != tc.field || got[0].Rule != "fake" || got[0].Kind != FindingSecret {
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
	eff, out, err := PlanSubmit(SlotState{}, rec, d, t0)
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

// acrossFields finds "SPLIT-" only when the text also holds "-HALF", as a
// key cut in two would be.
type acrossFields struct{}

func (acrossFields) FindSecrets(text string) []string {
	if strings.Contains(text, "SPLIT-") && strings.Contains(text, "-HALF") {
		return []string{"split"}
	}
	return nil
}

func TestScanRecordKinds(t *testing.T) {
	rec := &Record{Summary: "card PII-1", Metadata: map[string]any{"token": "SECRET-2"}, Actor: Actor{UserID: "PII-3"}}
	want := []SecretFinding{
		{Field: "metadata", Rule: "fake", Kind: FindingSecret},
		{Field: "summary", Rule: "fake-pii", Kind: FindingPII},
		{Field: "actor.userId", Rule: "fake-pii", Kind: FindingPII},
	}
	if got := ScanRecord(fakeScanner{}, rec); !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	// A scanner that finds no personal data still finds secrets.
	if got := ScanRecord(secretsOnly{}, rec); !slices.Equal(got, want[:1]) {
		t.Errorf("a secrets-only scanner: %v", got)
	}
}

// TestScanRecordAcrossFields: what only the fields together hold is the
// record's, also beside findings in single fields, so every field is
// redacted.
func TestScanRecordAcrossFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  Record
		want []SecretFinding
	}{
		{"split alone", Record{Summary: "SPLIT-a", Evidence: Evidence{SourceRef: "b-HALF"}},
			[]SecretFinding{{Field: "record", Rule: "split", Kind: FindingSecret}}},
		{"one field holds both", Record{Summary: "SPLIT-a b-HALF"},
			[]SecretFinding{{Field: "summary", Rule: "split", Kind: FindingSecret}}},
	} {
		if got := ScanRecord(acrossFields{}, &tc.rec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOldFindingsAreSecrets: an audit log written before findings had a
// kind decodes to secrets, and a finding without a kind encodes as it did.
func TestOldFindingsAreSecrets(t *testing.T) {
	var f SecretFinding
	if err := json.Unmarshal([]byte(`{"field": "summary", "rule": "github-pat"}`), &f); err != nil || f.IsPII() {
		t.Errorf("an old finding: %+v, %v", f, err)
	}
	if b, _ := json.Marshal(SecretFinding{Field: "summary", Rule: "r"}); string(b) != `{"field":"summary","rule":"r"}` {
		t.Errorf("a finding without a kind encodes as %s, not as before", b)
	}
	if b, _ := json.Marshal(SecretFinding{Field: "value", Rule: "pii-iban", Kind: FindingPII}); !strings.Contains(string(b), `"kind":"pii"`) {
		t.Errorf("a PII finding encodes as %s", b)
	}
}

// TestPIIIsLeftToPolicy: the governor forces no action for personal data;
// it redacts the fields only when the write is rejected, by policy or for
// a secret beside it.
func TestPIIIsLeftToPolicy(t *testing.T) {
	pii := SecretFinding{Field: "metadata", Rule: "fake-pii", Kind: FindingPII}
	secret := SecretFinding{Field: "actor.agentId", Rule: "fake", Kind: FindingSecret}
	for _, tc := range []struct {
		policy   Action
		findings []SecretFinding
		action   Action
		redact   []string
	}{
		{ActionApply, []SecretFinding{pii}, ActionApply, nil},
		{ActionReview, []SecretFinding{pii}, ActionReview, nil},
		{ActionReject, []SecretFinding{pii}, ActionReject, []string{"metadata"}},
		{ActionReview, []SecretFinding{pii, secret}, ActionReject, []string{"metadata", "actor.agentId"}},
		{ActionApply, []SecretFinding{{Field: "summary", Rule: "old"}}, ActionReject, []string{"summary"}}, // no kind: a secret
	} {
		d := withSecrets(Decision{Action: tc.policy, Risk: RiskLow, Reasons: []Reason{{Rule: "r", Message: "m"}}}, tc.findings)
		if d.Action != tc.action || !slices.Equal(d.Redact, tc.redact) {
			t.Errorf("policy %s, findings %v: action %s redact %v, want %s %v", tc.policy, tc.findings, d.Action, d.Redact, tc.action, tc.redact)
		}
		secretReason := slices.ContainsFunc(d.Reasons, func(r Reason) bool { return r.Rule == RuleSecretDetected })
		if wantSecret := tc.action != tc.policy; secretReason != wantSecret {
			t.Errorf("policy %s, findings %v: reasons %v", tc.policy, tc.findings, d.Reasons)
		}
	}
}

// TestRejectKeepsNoPII: a write policy rejects for personal data keeps
// none of it, in any field; one it parks keeps its text for the reviewer.
func TestRejectKeepsNoPII(t *testing.T) {
	newRec := func() *Record {
		return &Record{ID: "r1", SlotID: "s1", Op: OpWrite, Layer: LayerKnowledge, SubjectID: "u",
			Summary: "card on file", Metadata: map[string]any{"card": "PII-4111"},
			Actor: Actor{AgentID: "a", UserID: "PII-ssn"}, Evidence: Evidence{Excerpt: "PII-e", SourceRef: "conv/1"}}
	}
	rec := newRec()
	d := withSecrets(Decision{Action: ActionReject, Risk: RiskHigh, Reasons: []Reason{{Rule: RulePIIDetected, Message: "m"}}}, ScanRecord(fakeScanner{}, rec))
	eff, out, err := PlanSubmit(SlotState{}, rec, d, t0)
	if err != nil || out != OutcomeRefused {
		t.Fatalf("%s, %v", out, err)
	}
	if b, _ := json.Marshal(eff); strings.Contains(string(b), "PII-") {
		t.Errorf("the effects of a rejection keep personal data: %s", b)
	}
	if eff.Records[0].Evidence.SourceRef != "conv/1" {
		t.Errorf("a field without personal data was redacted: %+v", eff.Records[0].Evidence)
	}

	rec = newRec()
	d = withSecrets(Decision{Action: ActionReview, Risk: RiskHigh, Reasons: []Reason{{Rule: RulePIIDetected, Message: "m"}}}, ScanRecord(fakeScanner{}, rec))
	eff, out, err = PlanSubmit(SlotState{}, rec, d, t0)
	if err != nil || out != OutcomeParked {
		t.Fatalf("%s, %v", out, err)
	}
	if got := eff.Records[0]; got.Metadata["card"] != "PII-4111" || got.Actor.UserID != "PII-ssn" {
		t.Errorf("a parked write lost its text: %+v", got)
	}
}
