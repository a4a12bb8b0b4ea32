package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// okDecision decides every write that does not name a trigger word; the
// trigger words make the policies below misbehave.
const okDecision = `package memgate

decision := {"risk": "low", "categories": [], "action": "apply", "reasons": [{"rule": "ok", "message": "fine"}], "affects": []} if {
	not input.candidate.summary in {"undefined", "conflict", "malformed", "slow"}
}
`

func policyWith(extra string) FileSet {
	return FileSet{"memgate.rego": okDecision + extra}
}

func inputWithSummary(s string) *memory.PolicyInput {
	return &memory.PolicyInput{Op: memory.OpWrite, Pending: []*memory.Record{},
		Candidate: &memory.Record{ID: "r", Layer: memory.LayerKnowledge, SubjectID: "s", Summary: s, CandidateSource: memory.SourceUser}}
}

func TestClassifyErrors(t *testing.T) {
	ctx := context.Background()
	p, err := Compile(ctx, policyWith(`
decision := input.candidate.summary if input.candidate.summary == "conflict"
decision := "other" if input.candidate.summary == "conflict"

decision := {"risk": "catastrophic", "categories": [], "action": "apply", "reasons": [{"rule": "x", "message": "y"}], "affects": []} if input.candidate.summary == "malformed"

decision := {"risk": "low", "categories": [], "action": "apply", "reasons": [{"rule": "x", "message": "y"}], "affects": []} if {
	input.candidate.summary == "slow"
	some i in numbers.range(1, 4000)
	some j in numbers.range(1, 4000)
	i * j == -1
}
`))
	if err != nil {
		t.Fatal(err)
	}
	deadline, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	canceled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		summary string
		is      error
		reason  string
	}{
		{"undefined decision", ctx, "undefined", ErrUndefined, ReasonUndefined},
		{"eval error", ctx, "conflict", nil, ReasonEval},
		{"malformed decision", ctx, "malformed", ErrMalformed, ReasonMalformed},
		{"timeout", deadline, "slow", context.DeadlineExceeded, ReasonTimeout},
		{"canceled before", canceled, "fine", context.Canceled, ReasonCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			d, err := p.Classify(tc.ctx, inputWithSummary(tc.summary))
			if err == nil {
				t.Fatalf("no error, decision %+v", d)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if got := ErrorReason(err); got != tc.reason {
				t.Errorf("ErrorReason = %q, want %q (%v)", got, tc.reason, err)
			}
			if d.Revision != p.Revision() || d.Action != "" {
				t.Errorf("error decision %+v, want only the revision", d)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
	if d, err := p.Classify(ctx, inputWithSummary("fine")); err != nil || d.Action != memory.ActionApply {
		t.Fatalf("fine write: %+v, %v", d, err)
	}
	if _, err := p.Classify(ctx, &memory.PolicyInput{}); err == nil {
		t.Error("an input without a candidate was decided")
	}
}

func TestResultSetChecks(t *testing.T) {
	term := ast.NewTerm(ast.NewObject())
	one := rego.Result{Expressions: []*rego.ExpressionValue{{Value: term}}}
	for _, tc := range []struct {
		name string
		rs   rego.ResultSet
		is   error
	}{
		{"undefined", nil, ErrUndefined},
		{"two results", rego.ResultSet{one, one}, ErrMultipleResults},
		{"two expressions", rego.ResultSet{{Expressions: []*rego.ExpressionValue{{Value: term}, {Value: term}}}}, ErrMalformed},
		{"not a term", rego.ResultSet{{Expressions: []*rego.ExpressionValue{{Value: map[string]any{}}}}}, ErrMalformed},
	} {
		if _, err := resultValue(tc.rs); !errors.Is(err, tc.is) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.is)
		}
	}
	if v, err := resultValue(rego.ResultSet{one}); err != nil || v.Compare(ast.NewObject()) != 0 {
		t.Errorf("one result: %v, %v", v, err)
	}
}

func TestDecodeDecision(t *testing.T) {
	valid := `{"risk": "low", "categories": [], "action": "apply", "reasons": [{"rule": "r", "message": "m"}], "affects": []}`
	for _, tc := range []struct {
		name, doc, errPart string
	}{
		{"valid", valid, ""},
		{"valid with slot", `{"risk": "high", "categories": ["strategy"], "action": "review", "reasons": [{"rule": "r", "message": "m"}], "affects": ["x"], "layer": "policy", "factType": "publish.auto", "subjectId": "project-alpha", "value": {"enabled": false}}`, ""},
		{"not an object", `["apply"]`, "want an object"},
		{"unknown risk", strings.Replace(valid, `"low"`, `"severe"`, 1), "risk"},
		{"unknown action", strings.Replace(valid, `"apply"`, `"allow"`, 1), "action"},
		{"missing action", strings.Replace(valid, `"action": "apply", `, "", 1), "action is missing"},
		{"unknown category", strings.Replace(valid, `"categories": []`, `"categories": ["gut_feeling"]`, 1), "category"},
		{"categories not an array", strings.Replace(valid, `"categories": []`, `"categories": "strategy"`, 1), "categories"},
		{"no reasons", strings.Replace(valid, `[{"rule": "r", "message": "m"}]`, `[]`, 1), "no reasons"},
		{"reason without rule", strings.Replace(valid, `"rule": "r", `, "", 1), "rule is missing"},
		{"affects holds numbers", strings.Replace(valid, `"affects": []`, `"affects": [1]`, 1), "affects"},
		{"unknown layer", strings.Replace(valid, `"affects": []`, `"affects": [], "layer": "gossip"`, 1), "layer"},
		{"factType not a string", strings.Replace(valid, `"affects": []`, `"affects": [], "factType": 7`, 1), "factType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ast.MustParseTerm(tc.doc).Value
			d, err := decodeDecision(v)
			if tc.errPart == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(d.Reasons) != 1 || d.Action == "" || d.Risk == "" || d.Categories == nil || d.Affects == nil {
					t.Errorf("decoded %+v", d)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("error %v, want a malformed-decision error about %q", err, tc.errPart)
			}
		})
	}
	d, err := decodeDecision(ast.MustParseTerm(`{"risk": "high", "categories": ["strategy"], "action": "review", "reasons": [{"rule": "r", "message": "m"}], "affects": [], "layer": "policy", "factType": "", "subjectId": "", "value": {"enabled": false}}`).Value)
	if err != nil || d.Layer != memory.LayerPolicy || d.FactType != "" || string(d.Value) != `{"enabled":false}` {
		t.Errorf("slot fields: %+v, %v", d, err)
	}
}

func TestCompileRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		files   FileSet
		errPart string
	}{
		{"syntax error", FileSet{"memgate.rego": "package memgate\ndecision := {"}, "parse policy"},
		{"v0 syntax", FileSet{"memgate.rego": "package memgate\ndecision = x { x := 1 }"}, "parse policy"},
		{"compile error", FileSet{"memgate.rego": "package memgate\ndecision := y"}, "compile policy"},
		{"failing Rego test", FileSet{"memgate.rego": okDecision, "memgate_test.rego": "package memgate_test\ntest_fails if { false }"}, "Rego tests failed"},
		{"erroring Rego test", FileSet{"memgate.rego": okDecision, "memgate_test.rego": "package memgate_test\nf := 1 if true\nf := 2 if true\ntest_errs if f == 1"}, "Rego tests failed"},
		{"undecided probe", FileSet{"memgate.rego": "package memgate\ndecision := 1 if false"}, "plain knowledge write"},
		{"malformed probe", FileSet{"memgate.rego": "package memgate\ndecision := 1"}, "plain knowledge write"},
		{"no module", FileSet{"data.json": "{}"}, "no Rego module"},
		{"data not an object", FileSet{"memgate.rego": okDecision, "data.json": "[1]"}, "want an object"},
		{"data conflict", FileSet{"memgate.rego": okDecision, "data.json": `{"a": {"b": 1}}`, "a/data.yaml": "b: 2"}, "set by another data file"},
		{"bad feature pattern", FileSet{"memgate.rego": okDecision, "data.json": `{"memgate_config": {"features": {"patterns": {"x": ["("]}}}}`}, "features.patterns.x"},
		{"bad feature keywords", FileSet{"memgate.rego": okDecision, "data.json": `{"memgate_config": {"features": {"keywords": {"x": "word"}}}}`}, "features.keywords.x"},
		{"path escapes", FileSet{"../memgate.rego": okDecision}, "clean relative path"},
		{"other file type", FileSet{"memgate.rego": okDecision, "notes.txt": "hi"}, "not .rego"},
		{"file too big", FileSet{"memgate.rego": okDecision, "data.json": `{"x": "` + strings.Repeat("a", MaxPolicyFileBytes) + `"}`}, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(ctx, tc.files)
			if err == nil {
				t.Fatalf("compiled, revision %s", p.Revision())
			}
			if !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("error %q does not mention %q", err, tc.errPart)
			}
		})
	}
}

func TestCompileAcceptsNestedDataAndYAML(t *testing.T) {
	p, err := Compile(context.Background(), FileSet{
		"memgate.rego": `package memgate

decision := {"risk": data.levels.risk, "categories": [], "action": data.memgate.cfg.action, "reasons": [{"rule": "r", "message": "m"}], "affects": []}
`,
		"memgate/cfg/data.yaml": "action: review\n",
		"data.json":             `{"levels": {"risk": "medium"}}`,
		"memgate_test.rego":     "package memgate_test\n\nimport data.memgate\n\ntest_review if memgate.decision.action == \"review\"\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Classify(context.Background(), inputWithSummary("anything"))
	if err != nil || d.Action != memory.ActionReview || d.Risk != memory.RiskMedium {
		t.Fatalf("%+v, %v", d, err)
	}
}

// TestPlace covers the placement document's contract: its fields fill a
// Placement, an undefined placement places nothing, a malformed one is an
// error, and a policy without one is placed by its decision's slot fields.
func TestPlace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, module string
		want         memory.Placement
		wantErr      string
	}{
		{name: "fields", module: `placement := {"layer": "policy", "factType": "publish.auto", "subjectId": "project-a", "value": {"enabled": false}} if input.candidate.summary == "text"`,
			want: memory.Placement{Layer: memory.LayerPolicy, FactType: "publish.auto", SubjectID: "project-a", Value: json.RawMessage(`{"enabled":false}`)}},
		{name: "partial", module: `placement := {"layer": "state"}`, want: memory.Placement{Layer: memory.LayerState}},
		{name: "undefined places nothing", module: `placement := {"layer": "state"} if input.candidate.summary == "other"`},
		{name: "unknown layer", module: `placement := {"layer": "gossip"}`, wantErr: "unknown layer"},
		{name: "not an object", module: `placement := "policy"`, wantErr: "want an object"},
		{name: "wrong type", module: `placement := {"factType": 3}`, wantErr: "factType is number"},
		{name: "no placement: the decision's fields", module: `decision := {"risk": "low", "categories": [], "action": "apply", "reasons": [{"rule": "r", "message": "m"}], "affects": [], "layer": "checkpoint", "factType": "task.step"}`,
			want: memory.Placement{Layer: memory.LayerCheckpoint, FactType: "task.step"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			module := "package memgate\n\n" + tc.module + "\n"
			if !strings.Contains(tc.module, "decision :=") {
				module = okDecision + "\n" + tc.module + "\n"
			}
			p, err := Compile(ctx, FileSet{"memgate.rego": module})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Place(ctx, &memory.PolicyInput{Op: memory.OpWrite, Candidate: &memory.Record{ID: "c", Summary: "text"}, Pending: []*memory.Record{}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Layer != tc.want.Layer || got.FactType != tc.want.FactType || got.SubjectID != tc.want.SubjectID || string(got.Value) != string(tc.want.Value) {
				t.Fatalf("placement %+v, want %+v", got, tc.want)
			}
		})
	}
}
