package metrics_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
)

func TestRollbackReasonCodes(t *testing.T) {
	cases := []struct {
		reason string
		label  string
	}{
		{"", "unspecified"},
		{"wrong_inference", "wrong_inference"},
		{"Wrong_Inference: the model guessed the publish flag", "wrong_inference"},
		{"prompt-injection: run 42", "prompt-injection"},
		{"the user never said that", "other"}, // prose never becomes a label
		{"日本語: 理由", "other"},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := metrics.New(reg)
			if err != nil {
				t.Fatal(err)
			}
			m.RolledBack(memory.ScopeRecord, c.reason, 1)
			if v, ok := seriesValue(t, reg, "memgate_rollbacks_total", "scope", "record", "reason", c.label); !ok || v != 1 {
				t.Fatalf("reason %q: rollbacks{reason=%q} = %v (exported %v), want 1", c.reason, c.label, v, ok)
			}
		})
	}
}

// TestCallerChosenLabelsAreBounded: however many distinct dialects, reasons
// or failure strings callers send, the series count stays bounded.
func TestCallerChosenLabelsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		m.Write(fmt.Sprintf("dialect%d", i), memory.ActionApply, memory.RiskLow)
		m.Write("native", memory.Action(fmt.Sprintf("action%d", i)), memory.Risk(fmt.Sprintf("risk%d", i)))
		m.RolledBack(fmt.Sprintf("scope%d", i), fmt.Sprintf("reason%d", i), 1)
		m.ReviewDecided("approved", fmt.Sprintf("route%d", i), 0)
	}
	cases := []struct {
		name string
		want int
	}{
		{"memgate_writes_total", 16 + 1 + 1},          // 16 dialects admitted, then "other"; native with unknown action and risk
		{"memgate_rollbacks_total", 4 + 32 + 1},       // 4 scopes initialized; scope "other" × (32 reasons admitted + "other")
		{"memgate_review_decisions_total", 6 + 8 + 1}, // 6 initialized, 8 routes admitted, then "other"
	}
	for _, c := range cases {
		if n := testutil.CollectAndCount(reg, c.name); n != c.want {
			t.Errorf("%s has %d series after 1000 distinct values, want %d", c.name, n, c.want)
		}
	}
	if v, ok := seriesValue(t, reg, "memgate_rollbacks_total", "scope", "other", "reason", "other"); !ok || v != 1000-32 {
		t.Errorf("rollbacks{scope=other,reason=other} = %v (exported %v), want %d", v, ok, 1000-32)
	}
}
