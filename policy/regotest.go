package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// errRegoTests marks a policy refused because its own Rego tests failed.
var errRegoTests = errors.New("policy's Rego tests failed")

// runRegoTests runs the test_ rules of modules against data, as `opa test`
// does, and returns the results; any failure or error is an error naming
// the failed tests.
func runRegoTests(ctx context.Context, modules map[string]*ast.Module, data map[string]any) ([]*tester.Result, error) {
	ch, err := tester.NewRunner().
		SetStore(dataStore(data)).
		SetModules(modules).
		CapturePrintOutput(true).
		RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("compile policy tests: %w", err)
	}
	var results []*tester.Result
	var failed []string
	for r := range ch {
		results = append(results, r)
		switch {
		case r.Error != nil:
			failed = append(failed, fmt.Sprintf("%s.%s: error: %v", r.Package, r.Name, r.Error))
		case r.Fail:
			failed = append(failed, fmt.Sprintf("%s.%s: fail", r.Package, r.Name))
		}
	}
	if err := ctx.Err(); err != nil {
		return results, fmt.Errorf("run policy tests: %w", err)
	}
	if len(failed) > 0 {
		return results, fmt.Errorf("%w: %d of %d: %s", errRegoTests, len(failed), len(results), strings.Join(failed, "; "))
	}
	return results, nil
}
