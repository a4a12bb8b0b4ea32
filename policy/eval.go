package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Errors Classify returns besides evaluation errors, context errors and
// ErrMalformed; the governor fails closed on any of them.
var (
	ErrUndefined       = errors.New("policy decision is undefined")
	ErrMultipleResults = errors.New("policy decision has more than one result")
)

// Classify evaluates the policy for one candidate. Every decision, and the
// zero decision returned with an error, carries the policy's revision.
func (p *Compiled) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	return p.classify(ctx, in, p.eval)
}

// Place evaluates the policy's placement document for a free-text
// candidate. A policy without one places by the slot fields of its
// decision, as policies written before placement existed do.
func (p *Compiled) Place(ctx context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	return p.placeWith(ctx, in, p.eval)
}

// PlaceAndClassify evaluates the policy's write document: the placement of
// a write before placement (in.Unplaced) and the decision about it once
// placed, in one query (memory.WritePolicy). A policy without one answers
// memory.ErrNoWriteQuery.
func (p *Compiled) PlaceAndClassify(ctx context.Context, in *memory.PolicyInput) (memory.Placement, memory.Decision, error) {
	return p.placeAndClassify(ctx, in, p.eval)
}

func (p *Compiled) placeAndClassify(ctx context.Context, in *memory.PolicyInput, eval evalFunc) (memory.Placement, memory.Decision, error) {
	fail := func(err error) (memory.Placement, memory.Decision, error) {
		return memory.Placement{}, memory.Decision{Revision: p.revision}, err
	}
	if p.write == nil {
		return fail(memory.ErrNoWriteQuery)
	}
	if in == nil || in.Candidate == nil {
		return fail(errors.New("policy input has no candidate"))
	}
	v, err := eval(ctx, p.write, in)
	if err != nil {
		return fail(err)
	}
	obj, ok := v.(ast.Object)
	if !ok {
		return fail(fmt.Errorf("%w: write is %T, not an object", ErrMalformed, v))
	}
	pv, dv := obj.Get(ast.InternedTerm("placement")), obj.Get(ast.InternedTerm("decision"))
	if pv == nil || dv == nil {
		return fail(fmt.Errorf("%w: write needs placement and decision", ErrMalformed))
	}
	pl, err := decodePlacement(pv.Value)
	if err != nil {
		return fail(err)
	}
	d, err := decodeDecision(dv.Value)
	if err != nil {
		return fail(err)
	}
	d.Revision = p.revision
	return pl, d, nil
}

// evalFunc runs one of the policy's queries on an input: p.eval, or the
// differential test's plain reference.
type evalFunc func(ctx context.Context, q *rego.PreparedEvalQuery, in *memory.PolicyInput) (ast.Value, error)

func (p *Compiled) classify(ctx context.Context, in *memory.PolicyInput, eval evalFunc) (memory.Decision, error) {
	d, err := p.decide(ctx, in, eval)
	if err != nil {
		d = memory.Decision{}
	}
	d.Revision = p.revision
	return d, err
}

func (p *Compiled) decide(ctx context.Context, in *memory.PolicyInput, eval evalFunc) (memory.Decision, error) {
	if in == nil || in.Candidate == nil {
		return memory.Decision{}, errors.New("policy input has no candidate")
	}
	v, err := eval(ctx, &p.decision, in)
	if err != nil {
		return memory.Decision{}, err
	}
	return decodeDecision(v)
}

func (p *Compiled) placeWith(ctx context.Context, in *memory.PolicyInput, eval evalFunc) (memory.Placement, error) {
	if p.place == nil {
		d, err := p.classify(ctx, in, eval)
		return memory.Placement{Layer: d.Layer, FactType: d.FactType, SubjectID: d.SubjectID, Value: d.Value}, err
	}
	if in == nil || in.Candidate == nil {
		return memory.Placement{}, errors.New("policy input has no candidate")
	}
	v, err := eval(ctx, p.place, in)
	if errors.Is(err, ErrUndefined) {
		return memory.Placement{}, nil // the policy places this text nowhere
	}
	if err != nil {
		return memory.Placement{}, err
	}
	return decodePlacement(v)
}

// eval runs a prepared query on the input and returns its one result.
func (p *Compiled) eval(ctx context.Context, q *rego.PreparedEvalQuery, in *memory.PolicyInput) (ast.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("evaluate policy: %w", err)
	}
	input, err := inputScanned(in, p.features, p.scans)
	if err != nil {
		return nil, fmt.Errorf("build policy input: %w", err)
	}
	// Cancellation follows ctx without the goroutine OPA would start per
	// query, and OPA's own metrics are skipped.
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	rs, err := q.Eval(ctx, rego.EvalParsedInput(input), rego.EvalGenerateJSON(keepAST),
		rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()), rego.EvalBaseCache(p.data))
	if err != nil {
		return nil, evalError(ctx, err)
	}
	return resultValue(rs)
}

// evalError wraps an evaluation error, naming the context's error first
// when it ended the evaluation.
func evalError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("evaluate policy: %w (%v)", ctxErr, err)
	}
	return fmt.Errorf("evaluate policy: %w", err)
}

// resultValue returns the value of the one result of the decision query.
func resultValue(rs rego.ResultSet) (ast.Value, error) {
	x, err := onlyResult(rs)
	if err != nil {
		return nil, err
	}
	t, ok := x.(*ast.Term)
	if !ok {
		return nil, fmt.Errorf("%w: result is %T", ErrMalformed, x)
	}
	return t.Value, nil
}

// onlyResult returns the value of the one expression of the one result.
func onlyResult(rs rego.ResultSet) (any, error) {
	switch {
	case len(rs) == 0:
		return nil, ErrUndefined
	case len(rs) > 1:
		return nil, fmt.Errorf("%w (%d)", ErrMultipleResults, len(rs))
	case len(rs[0].Expressions) != 1:
		return nil, fmt.Errorf("%w: %d expressions in the result", ErrMalformed, len(rs[0].Expressions))
	}
	return rs[0].Expressions[0].Value, nil
}

// keepAST hands results back as AST terms: decoding the decision from them
// directly skips OPA's conversion to map[string]any.
func keepAST(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }

// Error reasons, a fixed set for metric labels.
const (
	ReasonUndefined = "undefined"
	ReasonMultiple  = "multiple_results"
	ReasonMalformed = "malformed"
	ReasonTimeout   = "timeout"
	ReasonCanceled  = "canceled"
	ReasonEval      = "eval_error"
)

// ErrorReason classifies an error from Classify for metrics ("" for nil).
func ErrorReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrUndefined):
		return ReasonUndefined
	case errors.Is(err, ErrMultipleResults):
		return ReasonMultiple
	case errors.Is(err, ErrMalformed):
		return ReasonMalformed
	case errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	default:
		return ReasonEval
	}
}
