package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memgate/memgate/textfold"
)

// Bounds on candidate fields. Request bodies are bounded by the surfaces;
// these bound what one record may hold, whatever the dialect.
const (
	MaxIDLen         = 256
	MaxSummaryBytes  = 16 << 10
	MaxValueBytes    = 64 << 10
	MaxEvidenceBytes = 16 << 10
	MaxMetadataBytes = 16 << 10
	// MaxNoteBytes bounds what an operator or reviewer writes beside a
	// decision: a review note, the reason of a rollback, quarantine,
	// restore or erasure, and who did it.
	MaxNoteBytes = 16 << 10
)

// checkNotes refuses an operator's text (a review note, a reason, named
// what) or name (by) longer than MaxNoteBytes: both land in records and
// audit events, and the transaction holding them must stay within the
// store's bound.
func checkNotes(what, text, by string) error {
	for _, f := range []struct{ name, v string }{{what, text}, {"by", by}} {
		if len(f.v) > MaxNoteBytes {
			return Errorf(EINVALID, "%s is %d bytes, more than the %d allowed", f.name, len(f.v), MaxNoteBytes)
		}
	}
	return nil
}

// Normalize fills defaults and validates a candidate. It returns an EINVALID
// error that names the first bad field; nothing is written for such a write.
func (c *Candidate) Normalize() error {
	if c.Op == "" {
		c.Op = OpWrite
	}
	if c.Op != OpWrite && c.Op != OpDelete {
		return Errorf(EINVALID, "op must be %q or %q, not %q", OpWrite, OpDelete, c.Op)
	}
	if c.Layer != "" && !c.Layer.Valid() {
		return Errorf(EINVALID, "unknown layer %q (want one of state, policy, knowledge, preference, checkpoint)", c.Layer)
	}
	if c.CandidateSource == "" {
		c.CandidateSource = SourceUser
	}
	if !c.CandidateSource.Valid() {
		return Errorf(EINVALID, "unknown candidateSource %q (want one of user-explicit, model-inference, tool, system, import)", c.CandidateSource)
	}
	c.Summary = strings.TrimSpace(c.Summary)
	if c.Op == OpWrite && c.Summary == "" && len(c.Value) == 0 {
		return Errorf(EINVALID, "summary is required")
	}
	if c.Op == OpDelete && c.SlotID == "" && (c.SubjectID == "" || c.FactType == "") {
		return Errorf(EINVALID, "a delete names a memory id, or a subjectId and factType")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"subjectId", &c.SubjectID}, {"factType", &c.FactType}} {
		if *f.v == "" {
			continue
		}
		id, err := FoldID(*f.v)
		if err != nil {
			return Errorf(EINVALID, "%s: %v", f.name, err)
		}
		*f.v = id
	}
	for _, f := range []struct{ name, v string }{
		{"slotId", c.SlotID}, {"subjectId", c.SubjectID}, {"factType", c.FactType},
		{"actor.agentId", c.Actor.AgentID}, {"actor.userId", c.Actor.UserID},
		{"actor.runId", c.Actor.RunID}, {"actor.sessionId", c.Actor.SessionID},
		{"scope.userId", c.Scope.UserID}, {"scope.agentId", c.Scope.AgentID},
		{"scope.appId", c.Scope.AppID}, {"scope.runId", c.Scope.RunID},
	} {
		if err := checkID(f.name, f.v); err != nil {
			return err
		}
	}
	if len(c.Summary) > MaxSummaryBytes {
		return Errorf(EINVALID, "summary is %d bytes, more than the %d allowed", len(c.Summary), MaxSummaryBytes)
	}
	if !utf8.ValidString(c.Summary) {
		return Errorf(EINVALID, "summary is not valid UTF-8")
	}
	// Text a reviewer will read is inert: CRLF becomes LF, and any other
	// control character (NUL, ESC, a lone CR…) is refused.
	c.Summary = strings.ReplaceAll(c.Summary, "\r\n", "\n")
	c.Evidence.Excerpt = strings.ReplaceAll(c.Evidence.Excerpt, "\r\n", "\n")
	for _, f := range []struct{ name, v string }{{"summary", c.Summary}, {"evidence.excerpt", c.Evidence.Excerpt}} {
		if err := checkText(f.name, f.v); err != nil {
			return err
		}
	}
	if len(c.Value) > MaxValueBytes {
		return Errorf(EINVALID, "value is %d bytes, more than the %d allowed", len(c.Value), MaxValueBytes)
	}
	if len(c.Value) > 0 && !json.Valid(c.Value) {
		return Errorf(EINVALID, "value is not valid JSON")
	}
	if err := checkNumbers("value", c.Value); err != nil {
		return err
	}
	if n := len(c.Evidence.Excerpt) + len(c.Evidence.SourceRef); n > MaxEvidenceBytes {
		return Errorf(EINVALID, "evidence is %d bytes, more than the %d allowed", n, MaxEvidenceBytes)
	}
	if len(c.Metadata) > 0 {
		b, err := json.Marshal(c.Metadata)
		if err != nil {
			return Errorf(EINVALID, "metadata is not representable as JSON")
		}
		if len(b) > MaxMetadataBytes {
			return Errorf(EINVALID, "metadata is %d bytes, more than the %d allowed", len(b), MaxMetadataBytes)
		}
		if err := checkNumbers("metadata", b); err != nil {
			return err
		}
	}
	return nil
}

// checkID bounds identifiers: they become parts of storage keys and log
// lines, so control characters are refused.
func checkID(name, v string) error {
	if len(v) > MaxIDLen {
		return Errorf(EINVALID, "%s is %d bytes, more than the %d allowed", name, len(v), MaxIDLen)
	}
	return CheckLookupID(name, v)
}

// CheckLookupID refuses, with EINVALID naming the field, an id given to a
// read that no write could have stored: invalid UTF-8, or a control
// character (NUL among them). Checked before any store sees it, every
// store answers the same 400 (PostgreSQL's text cannot even hold NUL to
// look it up). Length is not checked: a longer id is simply not found.
// The message never echoes the id: it may hold what a log or terminal
// should not print.
func CheckLookupID(name, v string) error {
	if !utf8.ValidString(v) {
		return Errorf(EINVALID, "%s is not valid UTF-8", name)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return Errorf(EINVALID, "%s contains a control character", name)
		}
	}
	return nil
}

// checkLookupIDs is CheckLookupID over (name, value) pairs.
func checkLookupIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := CheckLookupID(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// checkScope checks the ids of a scope a read names.
func checkScope(s Scope) error {
	return checkLookupIDs("userId", s.UserID, "agentId", s.AgentID, "appId", s.AppID, "runId", s.RunID)
}

// checkNumbers refuses a JSON document holding a number that does not fit
// a float64 (1e999999): valid JSON, but policy cannot read it, so it would
// park the write with a policy error and every later write to its slot
// with it.
func checkNumbers(name string, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or a syntax error json.Valid reports
		}
		if n, ok := tok.(json.Number); ok {
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				return Errorf(EINVALID, "%s holds the number %.40s, which is out of range for a 64-bit float", name, string(n))
			}
		}
	}
}

// FoldID normalises a slot id part (subjectId, factType) so that look-alikes
// name one slot: NFKC, white space trimmed, invisible characters removed,
// mixed-script confusables folded (see package textfold). "proj-c\u0430fe",
// " proj-cafe" and "proj-\u200bcafe" are all "proj-cafe".
func FoldID(s string) (string, error) {
	id, err := textfold.ID(s)
	if err != nil {
		return "", errors.New(strings.TrimPrefix(err.Error(), "textfold: "))
	}
	return id, nil
}

// checkText refuses invalid UTF-8 and control characters other than tab
// and newline in free text.
func checkText(name, v string) error {
	if !utf8.ValidString(v) {
		return Errorf(EINVALID, "%s is not valid UTF-8", name)
	}
	for _, r := range v {
		if r != '\t' && r != '\n' && (r < 0x20 || r == 0x7f) {
			return Errorf(EINVALID, "%s contains the control character %U; only tab and newline are allowed", name, r)
		}
	}
	return nil
}
