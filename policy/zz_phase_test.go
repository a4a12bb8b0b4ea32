package policy

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

func BenchmarkZZPhase(b *testing.B) {
	p := compileDefault(b)
	inputs := benchInputs(b)
	k, _ := strconv.Atoi(os.Getenv("CALL"))
	call := inputs[k]
	ctx := context.Background()
	q := &p.query
	if call.place {
		q = p.place
	}
	in, _ := inputValue(call.in, p.features, p.shape)
	b.Run("input", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inputValue(call.in, p.features, p.shape)
		}
	})
	b.Run("eval", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cancel := topdown.NewCancel()
			q.Eval(ctx, rego.EvalParsedInput(in), rego.EvalGenerateJSON(keepAST), rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()), rego.EvalBaseCache(p.data))
		}
	})
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			call.run(ctx, p)
		}
	})
}
