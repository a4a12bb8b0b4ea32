package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// RuleSecretDetected is the reason the governor gives when it rejects a
// candidate for a secret that policy did not reject.
const RuleSecretDetected = "secret_detected"

// RulePIIDetected is the default policy's rule for personal data in a
// candidate (findings of kind FindingPII). The governor leaves its action
// to policy, but never shadows it (see shadowable).
const RulePIIDetected = "pii_detected"

// ScanRecord returns what s finds in every string a record's writer chose:
// summary, value, metadata, slot fields, actor, scope and evidence. Nil
// when s is nil or finds nothing. Secrets come first (Kind FindingSecret),
// then personal data (FindingPII) if s is also a PIIScanner.
func ScanRecord(s SecretScanner, r *Record) []SecretFinding {
	if s == nil {
		return nil
	}
	fields := recordStrings(r)
	// Most records hold nothing: one scan of all fields together, and a
	// scan per field only to say where a finding is.
	var all strings.Builder
	for _, f := range fields {
		all.WriteString(f.text)
		all.WriteString("\n\n")
	}
	out := scanFields(fields, all.String(), s.FindSecrets, FindingSecret)
	if p, ok := s.(PIIScanner); ok {
		out = append(out, scanFields(fields, all.String(), p.FindPII, FindingPII)...)
	}
	return out
}

// scanFields runs find over all (the fields joined) and, when it finds
// anything, over each field to say where.
func scanFields(fields []namedText, all string, find func(string) []string, kind string) []SecretFinding {
	rules := find(all)
	if len(rules) == 0 {
		return nil
	}
	var out []SecretFinding
	for _, f := range fields {
		for _, rule := range find(f.text) {
			out = append(out, SecretFinding{Field: f.name, Rule: rule, Kind: kind})
		}
	}
	// What only the fields together hold (an encoded token in one field
	// and the word "password" in another, a key id beside its secret) is
	// the whole record's: every field is redacted.
	for _, rule := range rules {
		if !slices.ContainsFunc(out, func(f SecretFinding) bool { return f.Rule == rule }) {
			out = append(out, SecretFinding{Field: "record", Rule: rule, Kind: kind})
		}
	}
	return out
}

type namedText struct{ name, text string }

// stringFields are the string fields of a record its writer chooses,
// besides summary, value and metadata, by the names SecretFinding uses.
var stringFields = []struct {
	name string
	of   func(*Record) *string
}{
	{"subjectId", func(r *Record) *string { return &r.SubjectID }},
	{"factType", func(r *Record) *string { return &r.FactType }},
	{"evidence.excerpt", func(r *Record) *string { return &r.Evidence.Excerpt }},
	{"evidence.sourceRef", func(r *Record) *string { return &r.Evidence.SourceRef }},
	{"actor.agentId", func(r *Record) *string { return &r.Actor.AgentID }},
	{"actor.userId", func(r *Record) *string { return &r.Actor.UserID }},
	{"actor.runId", func(r *Record) *string { return &r.Actor.RunID }},
	{"actor.sessionId", func(r *Record) *string { return &r.Actor.SessionID }},
	{"actor.client", func(r *Record) *string { return &r.Actor.Client }},
	{"scope.userId", func(r *Record) *string { return &r.Scope.UserID }},
	{"scope.agentId", func(r *Record) *string { return &r.Scope.AgentID }},
	{"scope.appId", func(r *Record) *string { return &r.Scope.AppID }},
	{"scope.runId", func(r *Record) *string { return &r.Scope.RunID }},
}

func recordStrings(r *Record) []namedText {
	var out []namedText
	add := func(name, text string) {
		if text != "" {
			out = append(out, namedText{name, text})
		}
	}
	add("summary", r.Summary)
	add("value", jsonStrings(r.Value))
	if len(r.Metadata) > 0 {
		b, _ := json.Marshal(r.Metadata)
		add("metadata", jsonStrings(b))
	}
	for _, f := range stringFields {
		add(f.name, *f.of(r))
	}
	return out
}

// redactFields replaces each named string field that is not empty with a
// short hash of it; "record" (a finding no single field explains) names
// them all.
func redactFields(r *Record, names []string) {
	all := slices.Contains(names, "record")
	for _, f := range stringFields {
		if p := f.of(r); *p != "" && (all || slices.Contains(names, f.name)) {
			sum := sha256.Sum256([]byte(*p))
			*p = fmt.Sprintf("[redacted %x]", sum[:4])
		}
	}
}

// jsonStrings returns the keys and string values of a JSON document, one a
// line, decoded (so escapes such as \u0041 hide nothing); the raw text if
// it does not parse.
func jsonStrings(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case string:
			b.WriteString(t)
			b.WriteByte('\n')
		case json.Number:
			b.WriteString(t.String())
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 && !json.Valid(raw) {
		return string(raw)
	}
	return b.String()
}

// withSecrets makes sure a candidate with a secret is rejected, whatever
// the policy (or its failure) decided, and says which fields to redact.
// Personal data is policy's to decide (pii_detected): its fields are
// redacted only when the write is rejected, so a refusal keeps no copy of
// the value while a write policy parks keeps its text for the reviewer.
func withSecrets(d Decision, findings []SecretFinding) Decision {
	if len(findings) == 0 {
		return d
	}
	if i := slices.IndexFunc(findings, func(f SecretFinding) bool { return !f.IsPII() }); i >= 0 && d.Action != ActionReject {
		d.Action, d.Risk = ActionReject, RiskHigh
		d.Reasons = append(slices.Clone(d.Reasons), Reason{Rule: RuleSecretDetected,
			Message: "contains a credential (" + findings[i].Rule + " in " + findings[i].Field + "); secrets are never remembered"})
	}
	if d.Action != ActionReject {
		return d
	}
	redact := slices.Clone(d.Redact)
	for _, f := range findings {
		if !slices.Contains(redact, f.Field) {
			redact = append(redact, f.Field)
		}
	}
	d.Redact = redact
	return d
}
