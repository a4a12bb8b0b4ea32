package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/types"
)

// paths lists a shape as sorted dotted paths, "*" where it is whole and
// "[]" for every element.
func (s *inputShape) paths(prefix string) []string {
	if s.all {
		return []string{prefix + "*"}
	}
	if len(s.fields) == 0 && s.elem == nil && prefix != "" {
		return []string{prefix + "present"}
	}
	var out []string
	for k, c := range s.fields {
		out = append(out, c.paths(prefix+k+".")...)
	}
	if s.elem != nil {
		out = append(out, s.elem.paths(prefix+"[].")...)
	}
	slices.Sort(out)
	return out
}

func TestShapeOf(t *testing.T) {
	for _, tc := range []struct {
		name, module string
		want         []string
	}{
		{"fields", `package p
d if { input.op == "write"; input.candidate.layer == "state" }`, []string{"candidate.layer.*", "op.*"}},
		{"iteration reads every element whole", `package p
d if { some r in input.pending; r.value }`, []string{"pending.[].*"}},
		{"elements read field by field", `package p
d if { some i; input.pending[i].value == input.pending[i].id }`, []string{"pending.[].id.*", "pending.[].value.*"}},
		{"a variable key", `package p
d if { input.candidate[k] == 1 }`, []string{"candidate.[].*"}},
		// The compiler binds the part to a variable for !=, so that reads it
		// whole; == null stays a comparison.
		{"comparing with null reads no field", `package p
d if { input.current == null; input.pending[0] != null; input.candidate.value == null }`, []string{"candidate.value.present", "current.present", "pending.[].*"}},
		{"a list passed whole", `package p
d if count(input.pending) > 0`, []string{"pending.*"}},
		{"a record passed whole", `package p
f(r) if r.value
d if f(input.current)`, []string{"current.*"}},
		{"imports are resolved", `package p
import input.candidate as c
d if c.summary == "x"`, []string{"candidate.summary.*"}},
		{"input itself", `package p
d if count(input) > 0`, []string{"*"}},
		// The compiler binds a with value read from input to a variable
		// first: the part is read whole.
		{"a part of input bound to data by with", `package p
e if data.cfg.layer == "x"
d if e with data.cfg.layer as input.current.layer`, []string{"current.layer.*"}},
		{"a part in a comprehension head", `package p
d if count([input.candidate.layer | some x in [1]]) > 0`, []string{"candidate.layer.*"}},
		{"a part under every", `package p
d if every p in input.pending { p.layer == "x" }`, []string{"pending.*"}},
		{"a whole part absorbs its fields", `package p
d if { input.candidate.layer; x := input.candidate }`, []string{"candidate.*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ast.NewCompiler()
			r := rego.New(rego.Query("data.p.d"), rego.Module("p.rego", tc.module), rego.Compiler(c))
			if _, err := r.PrepareForEval(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := shapeOf(c.Modules).paths(""); !slices.Equal(got, tc.want) {
				t.Errorf("shape %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQueryShape(t *testing.T) {
	const module = `package p
d if { input.op == "write"; helper }
d if { f(input.current) }
helper := x if { x := input.candidate.layer } else := y if { y := input.candidate.factType }
f(r) if r.id == g(input.dialect)
g(s) := s
e if { input.candidate.summary == "x"; not unused }
unused if input.actor.id
`
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"data.p.d", []string{"candidate.factType.*", "candidate.layer.*", "current.*", "dialect.*", "op.*"}},
		{"data.p.e", []string{"actor.id.*", "candidate.summary.*"}},
		{"data.p.helper", []string{"candidate.factType.*", "candidate.layer.*"}},
		{"data.p.nothing", []string{"actor.id.*", "candidate.factType.*", "candidate.layer.*", "candidate.summary.*", "current.*", "dialect.*", "op.*"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			c := ast.NewCompiler()
			r := rego.New(rego.Query(tc.query), rego.Module("p.rego", module), rego.Compiler(c))
			if _, err := r.PrepareForEval(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := queryShape(c, ast.MustParseRef(tc.query)).paths(""); !slices.Equal(got, tc.want) {
				t.Errorf("shape %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUnboundedReadsGetTheWholeInput: a policy whose reads of input the
// analysis cannot bound is evaluated with all of it, whatever else it
// reads field by field.
func TestUnboundedReadsGetTheWholeInput(t *testing.T) {
	decl := &ast.Builtin{Name: "custom.read", Decl: types.NewFunction(types.Args(types.A), types.B)}
	for _, tc := range []struct {
		name, rules string
		compiler    func(*ast.Compiler)
	}{
		{"input passed whole to a function", `f(x) if x.candidate.layer == "x"
d if f(input)`, nil},
		{"input replaced by with", `e if input.candidate.layer == "x"
d if e with input as {"candidate": {"layer": "x"}}`, nil},
		{"a part of input replaced by with", `e if input.candidate.layer == "x"
d if e with input.candidate.layer as "x"`, nil},
		{"data bound to input by with", `e if data.cfg.current.layer == "x"
d if e with data.cfg as input`, nil},
		{"a variable key at the root", `d if { some k; input[k] == "write" }`, nil},
		{"a key from data at the root", `d if input[data.cfg.root][data.cfg.field] == "x"`, nil},
		{"walk", `d if { walk(input, [_, v]); v == "x" }`, nil},
		{"json.marshal", `d if count(json.marshal(input)) > 10`, nil},
		{"object.get", `d if object.get(input, ["candidate", "layer"], "") == "x"`, nil},
		{"object.filter", `d if object.filter(input, ["candidate"]).candidate.layer == "x"`, nil},
		{"object.remove", `d if object.remove(input, ["pending"]).candidate.layer == "x"`, nil},
		{"a rule that is input, read through data", `alias := input
d if data.p.alias.candidate.layer == "x"`, nil},
		{"input in a comprehension head", `d if count([input | some x in ["a"]]) > 0`, nil},
		{"input in a comprehension body", `d if count([x | some x in ["a"]; input]) > 0`, nil},
		{"input under every", `d if every k, _ in {"op": 1} { input[k] }`, nil},
		{"an else branch reads input whole", `g := "a" if input.op == "x"
else := input
d if g`, nil},
		{"a rule reached through a variable", `r["a"] := input.op
r["b"] := input
d if { some k in ["a"]; r[k] }`, nil},
		{"print kept", `d if { print(input.op); input.candidate.layer == "x" }`,
			func(c *ast.Compiler) { c.WithEnablePrintStatements(true) }},
		{"a builtin the sidecar does not know", `d if custom.read(input.candidate)`,
			func(c *ast.Compiler) { c.WithBuiltins(map[string]*ast.Builtin{decl.Name: decl}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ast.NewCompiler()
			if tc.compiler != nil {
				tc.compiler(c)
			}
			r := rego.New(rego.Query("data.p.d"), rego.Module("p.rego", "package p\n"+tc.rules), rego.Compiler(c))
			if _, err := r.PrepareForEval(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := queryShape(c, ast.MustParseRef("data.p.d")); got != fullShape {
				t.Errorf("shape %v, want the whole input", got.paths(""))
			}
		})
	}
}

// TestDefaultPolicyReadsLittleOfTheInput pins what the default policy's
// shape leaves out, so a change that reads a record whole shows up here
// (it would still decide the same, only slower).
func TestDefaultPolicyReadsLittleOfTheInput(t *testing.T) {
	p := compileDefault(t)
	shape := p.decision.shape
	cand := shape.field("candidate")
	if cand == nil || cand.all {
		t.Fatalf("the default policy reads the whole candidate: %v", shape.paths(""))
	}
	for _, unread := range []string{"id", "slotId", "status", "createdAt", "actor", "metadata", "decision", "review"} {
		if cand.has(unread) {
			t.Errorf("candidate.%s is in the shape %v", unread, cand.paths("candidate."))
		}
	}
	// The slot's other versions are compared on their value and text only.
	for _, part := range []*inputShape{shape.field("current"), shape.field("pending").element()} {
		if part == nil || part.all || part.has("decision") || part.has("summary") || !part.has("text_norm") {
			t.Errorf("a version of the slot is read beyond its value and text: %v", shape.paths(""))
		}
	}
	// Placing a text reads neither the slot's versions nor the secret
	// patterns; deciding reads no capture.
	place := p.place.shape
	if place.has("current") || place.has("pending") {
		t.Errorf("placement reads the slot's versions: %v", place.paths(""))
	}
	if p.place.features == nil || slices.ContainsFunc(p.place.features.patterns, func(pf patternFeature) bool { return p.features.names[pf.id] == "secret" }) {
		t.Errorf("placement computes the secret patterns or no text facts at all")
	}
	if p.decision.features == nil || len(p.decision.features.captures) != 0 {
		t.Errorf("the decision computes captures or no text facts at all")
	}
}

// TestPrunedInputDecidesTheSame evaluates every realistic write with the
// input each query of the default policy reads and with the whole input
// (every field, every text fact): the decisions and placements must be
// identical.
func TestPrunedInputDecidesTheSame(t *testing.T) {
	ctx := context.Background()
	p := compileDefault(t)
	whole := *p
	whole.decision.shape, whole.decision.features = fullShape, p.features
	wholePlace := *p.place
	wholePlace.shape, wholePlace.features = fullShape, p.features
	whole.place = &wholePlace
	calls := benchInputs(t)
	for i, call := range calls {
		var got, want string
		if call.place {
			a, errA := p.Place(ctx, call.in)
			b, errB := whole.Place(ctx, call.in)
			got, want = fmt.Sprint(a, errA), fmt.Sprint(b, errB)
		} else {
			a, errA := p.Classify(ctx, call.in)
			b, errB := whole.Classify(ctx, call.in)
			got, want = fmt.Sprint(a, errA), fmt.Sprint(b, errB)
		}
		if got != want {
			t.Errorf("call %d (%q): pruned input gives %s, whole input %s", i, call.in.Candidate.Summary, got, want)
		}
		if strings.Contains(got, "error") {
			t.Errorf("call %d: %s", i, got)
		}
	}
	if len(calls) < 80 {
		t.Fatalf("only %d calls", len(calls))
	}
}
