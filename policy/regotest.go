package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/clip"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// errRegoTests marks a policy refused because its own Rego tests failed.
var errRegoTests = errors.New("policy's Rego tests failed")

// RegoTestReport is the outcome of a policy's own Rego tests.
type RegoTestReport struct {
	Total    int               `json:"total"`
	Passed   int               `json:"passed"`
	Failures []RegoTestFailure `json:"failures"`
}

// RegoTestFailure is one Rego test that failed or could not run, with the
// expression it failed at.
type RegoTestFailure struct {
	Test     string `json:"test"`     // e.g. data.memgate_test.test_state_override
	Location string `json:"location"` // file:line of the test
	// FailedAt is the file:line of the expression the test failed at, and
	// Expr that expression with the values of its variables (clipped), as
	// `opa test --var-values` shows them. Empty when no trace named one.
	FailedAt string `json:"failedAt,omitempty"`
	Expr     string `json:"expr,omitempty"`
	Error    string `json:"error,omitempty"` // the test could not be evaluated
}

// String is the failure in one or a few lines.
func (f RegoTestFailure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)", f.Test, f.Location)
	switch {
	case f.Error != "":
		fmt.Fprintf(&b, ": error: %s", f.Error)
	case f.FailedAt != "":
		fmt.Fprintf(&b, ": failed at %s: %s", f.FailedAt, f.Expr)
	default:
		b.WriteString(": fail")
	}
	return b.String()
}

// err is the report as the error that refuses the policy, nil when every
// test passed.
func (r *RegoTestReport) err() error {
	if len(r.Failures) == 0 {
		return nil
	}
	lines := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		lines[i] = f.String()
	}
	return fmt.Errorf("%w: %d of %d:\n  %s", errRegoTests, len(r.Failures), r.Total, strings.Join(lines, "\n  "))
}

// RunRegoTests runs the Rego tests of a policy's files against its data,
// as `opa test` does, and reports each failure with the expression it
// failed at. An error means the tests could not be run at all (the files
// do not parse, or ctx ended); failed tests are in the report.
func RunRegoTests(ctx context.Context, files FileSet) (*RegoTestReport, error) {
	modules, tests, data, err := parsePolicy(files)
	if err != nil {
		return nil, err
	}
	return runRegoTests(ctx, withTests(modules, tests), data)
}

func withTests(modules, tests map[string]*ast.Module) map[string]*ast.Module {
	all := make(map[string]*ast.Module, len(modules)+len(tests))
	for k, m := range modules {
		all[k] = m
	}
	for k, m := range tests {
		all[k] = m
	}
	return all
}

// runRegoTests runs the test_ rules of modules against data. Tests run
// without a trace; the ones that fail run again, alone, with one, to find
// the expression they failed at (tracing every test would slow every
// reload of a policy that passes).
func runRegoTests(ctx context.Context, modules map[string]*ast.Module, data map[string]any) (*RegoTestReport, error) {
	results, err := regoTestResults(ctx, modules, data, "")
	if err != nil {
		return nil, err
	}
	rep := &RegoTestReport{Total: len(results), Failures: []RegoTestFailure{}}
	var failed []string
	for _, r := range results {
		switch {
		case r.Error != nil:
			rep.Failures = append(rep.Failures, failureOf(r))
		case r.Fail:
			failed = append(failed, regexp.QuoteMeta(r.Package+"."+r.Name))
		default:
			rep.Passed++
		}
	}
	if len(failed) > 0 {
		traced, err := regoTestResults(ctx, modules, data, "^("+strings.Join(failed, "|")+")$")
		if err != nil {
			return nil, err
		}
		for _, r := range traced {
			rep.Failures = append(rep.Failures, failureOf(r))
		}
	}
	slices.SortFunc(rep.Failures, func(a, b RegoTestFailure) int { return strings.Compare(a.Location, b.Location) })
	return rep, nil
}

// regoTestResults runs the tests whose full name matches filter (all when
// it is empty, traced when it is not) and collects their results.
func regoTestResults(ctx context.Context, modules map[string]*ast.Module, data map[string]any, filter string) ([]*tester.Result, error) {
	runner := tester.NewRunner().
		SetStore(dataStore(data)).
		SetModules(modules).
		CapturePrintOutput(true)
	if filter != "" {
		runner = runner.Filter(filter).EnableTracing(true)
	}
	ch, err := runner.RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("compile policy tests: %w", err)
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run policy tests: %w", err)
	}
	return results, nil
}

// failureOf describes a failed test: where it is and, from its trace, the
// last expression that failed in it, as OPA's test reporter finds it.
func failureOf(r *tester.Result) RegoTestFailure {
	f := RegoTestFailure{Test: r.Package + "." + r.Name}
	if r.Location != nil {
		f.Location = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
	}
	if r.Error != nil {
		f.Error = r.Error.Error()
		return f
	}
	for _, e := range slices.Backward(r.Trace) {
		if e.Op != topdown.FailOp || e.Location == nil || e.QueryID == 0 {
			continue
		}
		if expr, ok := e.Node.(*ast.Expr); ok {
			if _, every := expr.Terms.(*ast.Every); every {
				continue // the expression that failed is inside its body
			}
		}
		f.FailedAt = fmt.Sprintf("%s:%d", e.Location.File, e.Location.Row)
		var b bytes.Buffer
		if err := topdown.PrettyEvent(&b, e, topdown.PrettyEventOpts{PrettyVars: true}); err != nil || b.Len() == 0 {
			f.Expr = string(e.Location.Text)
		} else {
			f.Expr = clip.BytesMarked(strings.TrimSpace(b.String()), maxExprText)
		}
		break
	}
	return f
}

// maxExprText bounds a failed expression with its variables' values: a
// decision object can be long.
const maxExprText = 2000
