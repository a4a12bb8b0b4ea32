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

// ScanRecord returns what s finds in every string a record's writer chose:
// summary, value, metadata, slot fields, actor, scope and evidence. Nil
// when s is nil or finds nothing.
func ScanRecord(s SecretScanner, r *Record) []SecretFinding {
	if s == nil {
		return nil
	}
	fields := recordStrings(r)
	// Most records hold no secret: one scan of all fields together, and a
	// scan per field only to say where a finding is.
	var all strings.Builder
	for _, f := range fields {
		all.WriteString(f.text)
		all.WriteString("\n\n")
	}
	rules := s.FindSecrets(all.String())
	if len(rules) == 0 {
		return nil
	}
	var out []SecretFinding
	for _, f := range fields {
		for _, rule := range s.FindSecrets(f.text) {
			out = append(out, SecretFinding{Field: f.name, Rule: rule})
		}
	}
	if len(out) == 0 { // found only across fields: the whole record is suspect
		for _, rule := range rules {
			out = append(out, SecretFinding{Field: "record", Rule: rule})
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
func withSecrets(d Decision, findings []SecretFinding) Decision {
	if len(findings) == 0 {
		return d
	}
	for _, f := range findings {
		if !slices.Contains(d.Redact, f.Field) {
			d.Redact = append(d.Redact, f.Field)
		}
	}
	if d.Action == ActionReject {
		return d
	}
	d.Action, d.Risk = ActionReject, RiskHigh
	d.Reasons = append(slices.Clone(d.Reasons), Reason{Rule: RuleSecretDetected,
		Message: "contains a credential (" + findings[0].Rule + " in " + findings[0].Field + "); secrets are never remembered"})
	return d
}
