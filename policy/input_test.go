package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

func TestNormalizeText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Auto-publish is DISABLED.", " auto publish is disabled "},
		{"  many   spaces\tand\nlines ", " many spaces and lines "},
		{"项目 alpha 当前阶段 禁止自动发布。", " 项目alpha当前阶段禁止自动发布 "},
		{"Ｆｕｌｌ－ｗｉｄｔｈ，１２３", " full width 123 "},
		{"don't", " don t "},
		{"", " "},
		{"!!!", " "},
	} {
		if got := normalizeText(tc.in); got != tc.want {
			t.Errorf("normalizeText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// fullInput has every field of PolicyInput set, to compare the direct AST
// build with encoding/json field by field.
func fullInput() *memory.PolicyInput {
	at := time.Date(2026, 12, 2, 10, 30, 0, 123456789, time.UTC)
	cand := &memory.Record{ID: "01JA", SlotID: "slot_1", Op: memory.OpWrite, Layer: memory.LayerState,
		SubjectID: "project-alpha", FactType: "status.phase", Summary: "Phase 3!", Value: json.RawMessage(`{"phase": 3, "big": 12345678901234567890}`),
		RiskLevel: memory.RiskHigh, Categories: []string{"state_override"}, Status: memory.StatusPending,
		CandidateSource: memory.SourceInference, Actor: memory.Actor{AgentID: "a", UserID: "u", RunID: "r", SessionID: "s", Dialect: "mem0", RemoteAddr: "127.0.0.1:1", Client: "c/1"},
		Scope: memory.Scope{UserID: "u", AgentID: "a", AppID: "app", RunID: "r"}, Metadata: map[string]any{"n": 1.5, "tags": []any{"x", true, nil}},
		Evidence: memory.Evidence{Excerpt: "said so", SourceRef: "conv/1"}, Affects: []string{"plans"}, Supersedes: "01J0",
		SupersededBy: "01J2", RollbackPoint: "rp_01JA", ExpectedHead: "01J0",
		Decision: &memory.Decision{Risk: memory.RiskHigh, Categories: nil, Action: memory.ActionReview,
			Reasons: []memory.Reason{{Rule: "r", Message: "m"}}, Affects: []string{}, Layer: memory.LayerState,
			FactType: "f", SubjectID: "s", Value: json.RawMessage(`true`), Revision: "rev", PolicyError: "e"},
		Review:         &memory.Review{Outcome: "approved", By: "bob", Route: "slack", Mode: memory.ModeOverride, Note: "ok", At: at},
		RollbackReason: "why", CreatedAt: at, ActivatedAt: at, SupersededAt: at, DecidedAt: at, RolledBackAt: at}
	sparse := &memory.Record{ID: "01JB", Layer: memory.LayerState, Summary: "phase 2", Status: memory.StatusActive,
		Decision: &memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}}
	return &memory.PolicyInput{Op: memory.OpWrite, Candidate: cand, Current: sparse, Pending: []*memory.Record{sparse, cand},
		Actor: cand.Actor, Dialect: "mem0"}
}

// TestInputMatchesJSON proves the AST input is the JSON document the audit
// log keeps (what a replay decodes), plus the sidecar's text fields.
func TestInputMatchesJSON(t *testing.T) {
	for name, in := range map[string]*memory.PolicyInput{
		"full":       fullInput(),
		"no current": {Op: memory.OpDelete, Candidate: &memory.Record{ID: "x"}, Pending: nil},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := inputValue(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			got = stripSidecarFields(t, got)
			raw, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ast.ValueFromReader(bytesReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if got.Compare(want) != 0 {
				t.Errorf("AST input differs from JSON:\n got  %v\n want %v", got, want)
			}
		})
	}
}

// stripSidecarFields removes text_norm and text_features wherever they are.
func stripSidecarFields(t *testing.T, v ast.Value) ast.Value {
	t.Helper()
	switch x := v.(type) {
	case ast.Object:
		kept := ast.NewObject()
		x.Foreach(func(k, val *ast.Term) {
			if k.Value.Compare(ast.String(textNormKey)) != 0 && k.Value.Compare(ast.String(textFeaturesKey)) != 0 {
				kept.Insert(k, ast.NewTerm(stripSidecarFields(t, val.Value)))
			}
		})
		return kept
	case *ast.Array:
		terms := make([]*ast.Term, 0, x.Len())
		x.Foreach(func(e *ast.Term) { terms = append(terms, ast.NewTerm(stripSidecarFields(t, e.Value))) })
		return ast.NewArray(terms...)
	}
	return v
}

// TestFeaturesMatchRego proves the Go matcher finds exactly the features the
// policy's own Rego definition (computed_features) finds, over every
// realistic write and some edge cases.
func TestFeaturesMatchRego(t *testing.T) {
	ctx := context.Background()
	p := compileDefault(t)
	if p.features == nil {
		t.Fatal("the default policy declares no features")
	}
	files := DefaultFiles()
	modules, _, err := parseModules(files)
	if err != nil {
		t.Fatal(err)
	}
	data, err := mergeData(files)
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){rego.Query("data.memgate.computed_features"), rego.Store(dataStore(data))}
	for _, m := range modules {
		opts = append(opts, rego.ParsedModule(m))
	}
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs := []*memory.Record{
		{Summary: "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
		{Summary: "plain", Evidence: memory.Evidence{Excerpt: "password=Secr3t!"}},
		{Summary: "plain", Value: json.RawMessage(`{"api_key": "AKIAABCDEFGHIJKLMNOP"}`)},
		{Summary: "on and on, not only"},
	}
	for _, w := range realisticWrites {
		recs = append(recs, &memory.Record{Summary: w.summary, Evidence: memory.Evidence{Excerpt: w.evidence}, Value: json.RawMessage(w.value)})
	}
	for _, rec := range recs {
		if len(rec.Value) == 0 {
			rec.Value = nil
		}
		goFeatures := p.features.match(rec, normalizeText(rec.Summary))
		in, err := inputValue(&memory.PolicyInput{Op: memory.OpWrite, Candidate: rec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := pq.Eval(ctx, rego.EvalParsedInput(in), rego.EvalGenerateJSON(keepAST))
		if err != nil {
			t.Fatal(err)
		}
		regoFeatures := ast.NewObject().(ast.Value)
		if len(rs) == 1 {
			regoFeatures = rs[0].Expressions[0].Value.(*ast.Term).Value
		}
		if goFeatures.Compare(regoFeatures) != 0 {
			t.Errorf("%q: Go features %v, Rego features %v", rec.Summary, goFeatures, regoFeatures)
		}
	}
}

// TestDefaultKeywordsAreNormalized: a keyword that normalization can never
// produce would never match.
func TestDefaultKeywordsAreNormalized(t *testing.T) {
	p := compileDefault(t)
	for _, kf := range p.features.keywords {
		for _, w := range kf.words {
			n := normalizeText(w)
			if n[1:len(n)-1] != trimSpaces(w) {
				t.Errorf("keyword %q of %s is not in normalized form (%q)", w, kf.name, n)
			}
		}
	}
}

func trimSpaces(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
