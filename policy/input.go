package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
)

// textNormKey is the field the sidecar adds to every record of the input:
// the record's summary as normalizeText returns it. The candidate also gets
// text_features (see textFeatures).
const textNormKey = "text_norm"

// inputValue builds the policy input as an AST value straight from the Go
// struct, which is several times cheaper than a JSON round trip. It mirrors
// encoding/json exactly (field names from the json tags, omitempty and
// omitzero honoured, nil slices as null), so a replay of the JSON kept in the
// audit log sees the same document; the only additions are the text fields
// (text_norm, and text_features, text_first and text_captures on the
// candidate). Every query gets the whole document: a policy may read any
// field, and leaving out one it reads would change a fail-closed check
// silently.
func inputValue(in *memory.PolicyInput, features *textFeatures) (ast.Value, error) {
	return inputScanned(in, features, nil)
}

// inputScanned is inputValue taking the candidate's text scan from scans
// (nil: scanned here).
func inputScanned(in *memory.PolicyInput, features *textFeatures, scans *scanMemo) (ast.Value, error) {
	f := newFields(9)
	f.str("op", string(in.Op))
	cand, err := candidateValue(in.Candidate, features, scans)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	f.term("candidate", ast.NewTerm(cand))
	cur, err := recordValue(in.Current)
	if err != nil {
		return nil, fmt.Errorf("current: %w", err)
	}
	f.term("current", ast.NewTerm(cur))
	pending := ast.NullTerm()
	if in.Pending != nil {
		terms := make([]*ast.Term, len(in.Pending))
		for i, p := range in.Pending {
			v, err := recordValue(p)
			if err != nil {
				return nil, fmt.Errorf("pending[%d]: %w", i, err)
			}
			terms[i] = ast.NewTerm(v)
		}
		pending = ast.ArrayTerm(terms...)
	}
	f.term("pending", pending)
	f.term("actor", ast.NewTerm(actorValue(in.Actor)))
	f.str("dialect", in.Dialect)
	f.term("secrets", secretsTerm(in.Secrets))
	f.term("judge", verdictTerm(in.Judge))
	if in.Unplaced {
		f.term("unplaced", ast.BooleanTerm(true))
	}
	return f.object(), nil
}

// secretsTerm encodes the findings as encoding/json does: nil is null.
func secretsTerm(fs []memory.SecretFinding) *ast.Term {
	if fs == nil {
		return ast.NullTerm()
	}
	terms := make([]*ast.Term, len(fs))
	for i, s := range fs {
		if s.Kind == "" { // omitted, as encoding/json does
			terms[i] = ast.ObjectTerm(item("field", ast.StringTerm(s.Field)), item("rule", ast.StringTerm(s.Rule)))
			continue
		}
		terms[i] = ast.ObjectTerm(item("field", ast.StringTerm(s.Field)), item("rule", ast.StringTerm(s.Rule)),
			item("kind", ast.StringTerm(s.Kind)))
	}
	return ast.ArrayTerm(terms...)
}

func verdictTerm(v *memory.Verdict) *ast.Term {
	if v == nil {
		return ast.NullTerm()
	}
	f := newFields(4)
	f.str("label", v.Label)
	f.str("risk", string(v.Risk))
	f.strOmit("reason", v.Reason)
	f.strOmit("model", v.Model)
	return ast.NewTerm(f.object())
}

// fields accumulates an object's key/value pairs.
type fields struct {
	items []([2]*ast.Term)
}

func newFields(n int) *fields {
	return &fields{items: make([]([2]*ast.Term), 0, n)}
}

// keyTerms holds one term per field name of the input, built once and never
// modified, so every input shares them instead of allocating its own.
var keyTerms = func() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	for _, k := range []string{"op", "candidate", "current", "pending", "actor", "dialect",
		"id", "slotId", "layer", "declaredLayer", "inferredLayer", "secrets", "judge", "field", "kind", "label", "model", "redact", "subjectId", "factType", "summary", "value", "riskLevel", "categories",
		"status", "candidateSource", "scope", "metadata", "evidence", "affects", "supersedes", "supersededBy",
		"rollbackPoint", "expectedHead", "decision", "review", "rollbackReason", "createdAt", "activatedAt",
		"supersededAt", "decidedAt", "rolledBackAt", textNormKey, textFeaturesKey, textFirstKey, textCapturesKey, textClausesKey,
		textScanKey, textMoreKey, textReadKey, textScoresKey,
		"agentId", "userId", "runId", "sessionId", "remoteAddr", "client", "appId", "excerpt", "sourceRef",
		"risk", "action", "reasons", "rule", "message", "revision", "policyError",
		"outcome", "by", "route", "mode", "note", "at"} {
		m[k] = ast.StringTerm(k)
	}
	return m
}()

// valueTerms holds the values most fields take (layers, operations,
// statuses, sources, dialects), built once and shared like keyTerms.
var valueTerms = func() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	values := []string{"", "write", "delete", "native", "mem0", "mcp"}
	for _, l := range memory.Layers {
		values = append(values, string(l))
	}
	for _, s := range memory.Sources {
		values = append(values, string(s))
	}
	for _, s := range []memory.Status{memory.StatusPending, memory.StatusActive, memory.StatusSuperseded,
		memory.StatusRejected, memory.StatusRolledBack, memory.StatusDeleted} {
		values = append(values, string(s))
	}
	for _, v := range values {
		m[v] = ast.StringTerm(v)
	}
	return m
}()

// stringTerm returns a shared term for common values, else a new one.
func stringTerm(v string) *ast.Term {
	if t, ok := valueTerms[v]; ok {
		return t
	}
	return ast.StringTerm(v)
}

func item(k string, v *ast.Term) [2]*ast.Term {
	return ast.Item(keyTerm(k), v)
}

// keyTerm returns the shared term of a field name (also used to look
// fields up in the decision).
func keyTerm(k string) *ast.Term {
	if kt, ok := keyTerms[k]; ok {
		return kt
	}
	return ast.StringTerm(k)
}

func (f *fields) str(k, v string) {
	f.items = append(f.items, item(k, stringTerm(v)))
}

func (f *fields) term(k string, v *ast.Term) {
	f.items = append(f.items, item(k, v))
}

// strOmit adds k unless v is empty (omitempty).
func (f *fields) strOmit(k, v string) {
	if v != "" {
		f.str(k, v)
	}
}

// objectOmit adds k unless o is empty: encoding/json omits an omitempty
// struct field that encodes as {}.
func (f *fields) objectOmit(k string, o ast.Object) {
	if o.Len() > 0 {
		f.term(k, ast.NewTerm(o))
	}
}

// rawJSONOmit adds k, the JSON document raw, unless raw is empty
// (omitempty); an error names k.
func (f *fields) rawJSONOmit(k string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	v, err := rawJSONValue(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	f.term(k, ast.NewTerm(v))
	return nil
}

func (f *fields) time(k string, t time.Time) {
	f.str(k, t.Format(time.RFC3339Nano))
}

// timeOmit adds k unless t is zero (omitzero).
func (f *fields) timeOmit(k string, t time.Time) {
	if !t.IsZero() {
		f.time(k, t)
	}
}

func (f *fields) object() ast.Object { return ast.NewObject(f.items...) }

// candidateValue encodes the candidate: recordValue, with its text facts
// (its scan taken from scans) and the texts they were found in.
func candidateValue(r *memory.Record, features *textFeatures, scans *scanMemo) (ast.Value, error) {
	return recordFields(r, features, scans, true)
}

// recordValue encodes a record of the slot (current, pending).
func recordValue(r *memory.Record) (ast.Value, error) {
	return recordFields(r, nil, nil, false)
}

func recordFields(r *memory.Record, features *textFeatures, scans *scanMemo, cand bool) (ast.Value, error) {
	if r == nil {
		return ast.Null{}, nil
	}
	f := newFields(32)
	f.str("id", r.ID)
	f.str("slotId", r.SlotID)
	f.strOmit("op", string(r.Op))
	f.str("layer", string(r.Layer))
	f.strOmit("declaredLayer", string(r.DeclaredLayer))
	f.strOmit("inferredLayer", string(r.InferredLayer))
	f.str("subjectId", r.SubjectID)
	f.strOmit("factType", r.FactType)
	f.str("summary", r.Summary)
	if err := f.rawJSONOmit("value", r.Value); err != nil {
		return nil, err
	}
	f.strOmit("riskLevel", string(r.RiskLevel))
	if len(r.Categories) > 0 {
		f.term("categories", stringsTerm(r.Categories))
	}
	f.str("status", string(r.Status))
	f.str("candidateSource", string(r.CandidateSource))
	f.term("actor", ast.NewTerm(actorValue(r.Actor)))
	f.objectOmit("scope", scopeValue(r.Scope))
	if len(r.Metadata) > 0 {
		v, err := ast.InterfaceToValue(r.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		f.term("metadata", ast.NewTerm(v))
	}
	f.objectOmit("evidence", evidenceValue(r.Evidence))
	if len(r.Affects) > 0 {
		f.term("affects", stringsTerm(r.Affects))
	}
	f.strOmit("supersedes", r.Supersedes)
	f.strOmit("supersededBy", r.SupersededBy)
	f.strOmit("rollbackPoint", r.RollbackPoint)
	f.strOmit("expectedHead", r.ExpectedHead)
	if r.Decision != nil {
		v, err := decisionValue(r.Decision)
		if err != nil {
			return nil, fmt.Errorf("decision: %w", err)
		}
		f.term("decision", ast.NewTerm(v))
	}
	if r.Review != nil {
		f.term("review", ast.NewTerm(reviewValue(r.Review)))
	}
	f.strOmit("rollbackReason", r.RollbackReason)
	f.time("createdAt", r.CreatedAt)
	f.timeOmit("activatedAt", r.ActivatedAt)
	f.timeOmit("supersededAt", r.SupersededAt)
	f.timeOmit("decidedAt", r.DecidedAt)
	f.timeOmit("rolledBackAt", r.RolledBackAt)
	// The scan normalizes the summary too; a record without features to
	// report (current, pending) is normalized on its own.
	var scan *textScan
	if features != nil {
		scan = scans.get(r, features)
		f.str(textNormKey, scan.norm)
	} else {
		f.str(textNormKey, normalizeText(r.Summary))
	}
	if !cand {
		f.term(textClausesKey, stringsTerm(clauses(r.Summary)))
		return f.object(), nil
	}
	// The candidate's texts, for the policy's reference definitions
	// (features.rego): only tests read them.
	var ct *candidateText
	if scan != nil {
		ct = scan.texts
	} else {
		ct = readCandidate(r, features.contextSourceList())
	}
	f.term(textClausesKey, stringsTerm(ct.clauses()))
	if scan != nil {
		f.str(textScanKey, scan.scanNorm)
	} else {
		f.str(textScanKey, ct.scanNorm())
	}
	f.term(textMoreKey, stringsTerm(ct.more))
	var read [][2]*ast.Term
	for _, name := range builtinFeatures {
		if ct.builtin[name] {
			read = append(read, item(name, trueTerm))
		}
	}
	f.term(textReadKey, ast.NewTerm(objectOf(read)))
	if scan != nil && scan.scores != nil {
		f.term(textScoresKey, features.scoresTerm(scan.scores))
	}
	if scan != nil {
		facts := features.facts(scan)
		f.term(textFeaturesKey, ast.NewTerm(facts.features))
		f.term(textFirstKey, ast.NewTerm(facts.first))
		f.term(textCapturesKey, ast.NewTerm(facts.captures))
	}
	return f.object(), nil
}

// omitEmptyObject is the object of kv's key, value pairs whose value is not
// empty: the structs whose fields are all omitempty strings.
func omitEmptyObject(kv ...string) ast.Object {
	f := newFields(len(kv) / 2)
	for i := 0; i+1 < len(kv); i += 2 {
		f.strOmit(kv[i], kv[i+1])
	}
	return f.object()
}

func actorValue(a memory.Actor) ast.Object {
	return omitEmptyObject("agentId", a.AgentID, "userId", a.UserID, "runId", a.RunID, "sessionId", a.SessionID,
		"dialect", a.Dialect, "remoteAddr", a.RemoteAddr, "client", a.Client)
}

func scopeValue(s memory.Scope) ast.Object {
	return omitEmptyObject("userId", s.UserID, "agentId", s.AgentID, "appId", s.AppID, "runId", s.RunID)
}

func evidenceValue(e memory.Evidence) ast.Object {
	return omitEmptyObject("excerpt", e.Excerpt, "sourceRef", e.SourceRef)
}

func decisionValue(d *memory.Decision) (ast.Object, error) {
	f := newFields(11)
	f.str("risk", string(d.Risk))
	f.term("categories", nullableStrings(d.Categories))
	f.str("action", string(d.Action))
	if d.Reasons == nil {
		f.term("reasons", ast.NullTerm())
	} else {
		terms := make([]*ast.Term, len(d.Reasons))
		for i, r := range d.Reasons {
			terms[i] = ast.ObjectTerm(item("rule", ast.StringTerm(r.Rule)), item("message", ast.StringTerm(r.Message)))
		}
		f.term("reasons", ast.ArrayTerm(terms...))
	}
	f.term("affects", nullableStrings(d.Affects))
	f.strOmit("layer", string(d.Layer))
	f.strOmit("factType", d.FactType)
	f.strOmit("subjectId", d.SubjectID)
	if err := f.rawJSONOmit("value", d.Value); err != nil {
		return nil, err
	}
	f.strOmit("revision", d.Revision)
	f.strOmit("policyError", d.PolicyError)
	if len(d.Redact) > 0 {
		f.term("redact", stringsTerm(d.Redact))
	}
	return f.object(), nil
}

func reviewValue(r *memory.Review) ast.Object {
	f := newFields(6)
	f.str("outcome", r.Outcome)
	f.str("by", r.By)
	f.strOmit("route", r.Route)
	f.strOmit("mode", string(r.Mode))
	f.strOmit("note", r.Note)
	f.time("at", r.At)
	return f.object()
}

func stringsTerm(ss []string) *ast.Term {
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(terms...)
}

// nullableStrings encodes a slice field without omitempty: nil is null.
func nullableStrings(ss []string) *ast.Term {
	if ss == nil {
		return ast.NullTerm()
	}
	return stringsTerm(ss)
}

// rawJSONValue parses a structured value; numbers keep their JSON text.
func rawJSONValue(raw json.RawMessage) (ast.Value, error) {
	return ast.ValueFromReader(bytes.NewReader(raw))
}
