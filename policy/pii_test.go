package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// piiGovernor is the sidecar's governor (the secret scanner, a Badger store
// on disk) on the default policy, with data.json's pii_detected action set
// to action ("" keeps the default's).
func piiGovernor(t *testing.T, action string) (*memory.Governor, *store.Store) {
	t.Helper()
	files := DefaultFiles()
	if action != "" {
		files = withRule(t, memory.RulePIIDetected, "action", action)
	}
	// Compile runs the policy's Rego tests: the operator's copy must pass them.
	c, err := Compile(context.Background(), files)
	if err != nil {
		t.Fatalf("the default with pii_detected %q: %v", action, err)
	}
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	return memory.NewGovernor(memory.Options{Store: st, Classifier: c, Secrets: testScanner(t)}), st
}

// cardWrite is a note whose metadata holds a test card number, as an agent
// that copied a checkout form would write it.
func cardWrite() memory.Candidate {
	return memory.Candidate{Summary: "Card on file for the annual renewal",
		Metadata: map[string]any{"source": "checkout form", "card": "4242 4242 4242 4242", "exp": "12/27"},
		Evidence: memory.Evidence{Excerpt: "use my card 4242 4242 4242 4242 for the renewal",
			SourceRef: "checkout card=4242424242424242"}, // a slot field: redacted only when named
		CandidateSource: memory.SourceUser, Scope: memory.Scope{UserID: "u-1"},
		Actor: memory.Actor{AgentID: "openclaw", UserID: "u-1", Dialect: "mem0"}}
}

// submitCard submits cardWrite and checks its outcome.
func submitCard(t *testing.T, gov *memory.Governor, want memory.Outcome) *memory.SubmitResult {
	t.Helper()
	res, err := gov.Submit(context.Background(), cardWrite())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != want {
		t.Fatalf("outcome %s, want %s (%+v)", res.Outcome, want, res.Record.Decision)
	}
	return res
}

// cardForms are how the card number could be kept.
var cardForms = []string{"4242 4242 4242 4242", "4242424242424242"}

// keeps reports whether v, as JSON, holds the card number.
func keeps(t *testing.T, v any) bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(cardForms, func(f string) bool { return bytes.Contains(b, []byte(f)) })
}

// TestPIIInMetadataIsRefusedAndRedacted: by default a card number in
// metadata is refused by pii_detected (not secret_detected), and neither
// the record, its history, its explanation, the audit log nor the store
// on disk keeps it.
func TestPIIInMetadataIsRefusedAndRedacted(t *testing.T) {
	ctx := context.Background()
	gov, st := piiGovernor(t, "")
	res := submitCard(t, gov, memory.OutcomeRefused)
	d := res.Record.Decision
	rules := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		rules[i] = r.Rule
		if strings.Contains(r.Message, "4242") {
			t.Errorf("a reason echoes the value: %q", r.Message)
		}
	}
	if !slices.Contains(rules, memory.RulePIIDetected) || slices.Contains(rules, memory.RuleSecretDetected) {
		t.Errorf("rules %v, want pii_detected and not secret_detected", rules)
	}
	if d.Risk != memory.RiskHigh || !slices.Contains(d.Redact, "metadata") || !slices.Contains(d.Redact, "evidence.sourceRef") {
		t.Errorf("risk %s, redact %v", d.Risk, d.Redact)
	}
	if keeps(t, res) {
		t.Errorf("the answer keeps the card number: %+v", res.Record)
	}
	rec, err := gov.Get(ctx, res.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := gov.History(ctx, res.Record.SlotID)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := gov.Explain(ctx, res.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := gov.Events(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"record": rec, "history": hist, "explanation": ex, "audit log": evs} {
		if keeps(t, v) {
			t.Errorf("the %s keeps the card number", name)
		}
	}
	if rec.Scope.UserID != "u-1" || rec.Actor.AgentID != "openclaw" {
		t.Errorf("fields without personal data were redacted: scope %+v actor %+v", rec.Scope, rec.Actor)
	}
	var disk bytes.Buffer
	if err := st.Backup(&disk); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(cardForms, func(f string) bool { return bytes.Contains(disk.Bytes(), []byte(f)) }) {
		t.Error("the store keeps the card number")
	}
}

// TestPIIRetunedToReviewParks: an operator who sets pii_detected's action
// to review gets the write parked with its text, for the reviewer; a
// credential beside it is still refused.
func TestPIIRetunedToReviewParks(t *testing.T) {
	ctx := context.Background()
	gov, _ := piiGovernor(t, "review")
	res := submitCard(t, gov, memory.OutcomeParked)
	item, err := gov.Review(ctx, res.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !keeps(t, item) || len(res.Record.Decision.Redact) > 0 {
		t.Errorf("the parked write lost its text: redact %v", res.Record.Decision.Redact)
	}
	if !slices.ContainsFunc(res.Record.Decision.Reasons, func(r memory.Reason) bool { return r.Rule == memory.RulePIIDetected }) {
		t.Errorf("reasons %v, want pii_detected", res.Record.Decision.Reasons)
	}

	// Shadow mode applies what policy parks, but not personal data.
	if err := gov.SetPolicyMode(memory.PolicyShadow); err != nil {
		t.Fatal(err)
	}
	c := cardWrite()
	c.Summary = "Second card on file"
	if res, err := gov.Submit(ctx, c); err != nil || res.Outcome != memory.OutcomeParked {
		t.Errorf("in shadow mode: %v, %v; want parked", res.Outcome, err)
	}

	c = cardWrite()
	c.Summary = "Card and the billing API key sk_live_lqiJjPU6Jnz4Oi7yshZFkfoKFzVg8kfkmbiowScBnp4QdFSW"
	res, err = gov.Submit(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != memory.OutcomeRefused || keeps(t, res) {
		t.Errorf("a secret beside the card: %s, %+v; want refused and redacted", res.Outcome, res.Record)
	}
}
