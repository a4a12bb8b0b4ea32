package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
)

// countingPolicy counts the evaluations it answers.
type countingPolicy struct {
	calls atomic.Int64
	next  memory.ClassifierFunc
}

func (c *countingPolicy) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	c.calls.Add(1)
	return c.next(ctx, in)
}

// countingPlacer also places free text, counting placements as evaluations.
type countingPlacer struct{ countingPolicy }

func (c *countingPlacer) Place(context.Context, *memory.PolicyInput) (memory.Placement, error) {
	c.calls.Add(1)
	return memory.Placement{Layer: memory.LayerKnowledge}, nil
}

func TestEveryPolicyEvaluationIsTimed(t *testing.T) {
	plain := &countingPolicy{next: testkit.Rules}
	placing := &countingPlacer{countingPolicy{next: testkit.Rules}}
	for _, tc := range []struct {
		name  string
		pol   memory.Classifier
		calls *atomic.Int64
		want  int64
	}{
		// A plain classifier places free text through its decision; a
		// placer is asked where every text goes, and then decides.
		{"classifier", plain, &plain.calls, 4},
		{"classifier that places", placing, &placing.calls, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.pol)
			e.submit(write(memory.LayerState, "project-alpha", "stage", "beta", "native", "run-1"))
			// A free-text write is evaluated twice: once to place it, once to decide.
			e.submit(memory.Candidate{SubjectID: "project-alpha", Summary: "the team ships on Fridays", Actor: memory.Actor{Dialect: "mem0"}})
			e.submit(write(memory.LayerState, "project-alpha", "stage", "production", "native", "run-1"))
			if tc.calls.Load() != tc.want {
				t.Fatalf("the policy answered %d evaluations, want %d", tc.calls.Load(), tc.want)
			}
			h := histogram(t, e.reg, "memgate_policy_evaluation_duration_seconds")
			if int64(h.GetSampleCount()) != tc.calls.Load() {
				t.Fatalf("latency histogram counts %d evaluations, the policy answered %d", h.GetSampleCount(), tc.calls.Load())
			}
			if h.GetSampleSum() <= 0 {
				t.Fatalf("latency sum %v, want > 0", h.GetSampleSum())
			}
			e.want([]series{
				{"memgate_policy_evaluation_errors_total", []string{"reason", "eval_error"}, 0},
				{"memgate_policy_evaluation_errors_total", []string{"reason", "timeout"}, 0},
			})
		})
	}
}

// TestPolicyFailuresAreCountedAndParked checks both failure reasons on a
// real Governor: the write is parked (fail closed) and the error counted.
func TestPolicyFailuresAreCountedAndParked(t *testing.T) {
	cases := []struct {
		name   string
		policy memory.ClassifierFunc
		reason string
	}{
		{"policy error", func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
			return memory.Decision{}, errors.New("rego: undefined decision")
		}, "eval_error"},
		{"policy timeout", func(ctx context.Context, _ *memory.PolicyInput) (memory.Decision, error) {
			<-ctx.Done()
			return memory.Decision{}, ctx.Err()
		}, "timeout"},
		{"decision after the deadline", func(ctx context.Context, _ *memory.PolicyInput) (memory.Decision, error) {
			<-ctx.Done() // answers, but too late: the governor distrusts it
			return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
		}, "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.policy, func(o *memory.Options) { o.PolicyTimeout = 20 * time.Millisecond })
			res := e.submit(write(memory.LayerState, "project-alpha", "stage", "beta", "native", "run-1"))
			if res.Outcome != memory.OutcomeParked {
				t.Fatalf("outcome %s, want parked (fail closed)", res.Outcome)
			}
			e.want([]series{
				{"memgate_policy_evaluation_errors_total", []string{"reason", c.reason}, 1},
				{"memgate_policy_evaluation_duration_seconds", nil, 1},
				{"memgate_writes_total", []string{"dialect", "native", "action", "review", "risk", "high"}, 1},
				{"memgate_review_queue_depth", nil, 1},
			})
			// The wait until the deadline is recorded, not ~0. The governor
			// starts the 20ms clock a moment before the timer does, so
			// the bound is loose: a scheduler delay must not fail it.
			if h := histogram(t, e.reg, "memgate_policy_evaluation_duration_seconds"); c.reason == "timeout" && h.GetSampleSum() < 0.01 {
				t.Fatalf("a timed-out evaluation took %vs, want most of the 20ms timeout", h.GetSampleSum())
			}
		})
	}
}

func TestPolicyRevisionFollowsReloads(t *testing.T) {
	e := newEnv(t, nil)
	revisions := func() map[string]float64 {
		out := map[string]float64{}
		mfs, err := e.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "memgate_policy_revision_info" {
				continue
			}
			for _, m := range mf.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	steps := []struct {
		revision string
		err      error
		active   string
		success  float64
		failure  float64
	}{
		{"3f2a", nil, "3f2a", 1, 0},
		{"", errors.New("rego_parse_error"), "3f2a", 1, 1}, // a broken reload keeps the previous policy
		{"9bc1", nil, "9bc1", 2, 1},
	}
	for i, s := range steps {
		e.m.PolicyLoaded(s.revision, s.err)
		got := revisions()
		if len(got) != 1 || got[s.active] != 1 {
			t.Fatalf("step %d: revision series %v, want only %s=1", i, got, s.active)
		}
		e.want([]series{
			{"memgate_policy_reloads_total", []string{"result", "success"}, s.success},
			{"memgate_policy_reloads_total", []string{"result", "failure"}, s.failure},
		})
	}
}

var errUndefined = errors.New("policy: undefined decision")

// TestPolicyErrorReasonsCanBeNamedFinely: with the policy engine's own
// classification, reasons are its names; anything unknown stays bounded.
func TestPolicyErrorReasonsCanBeNamedFinely(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithPolicyErrorReason(func(err error) string {
		if errors.Is(err, errUndefined) {
			return "undefined"
		}
		return err.Error() // a careless classifier: prose must not become labels
	}))
	if err != nil {
		t.Fatal(err)
	}
	m.PolicyEvaluated(time.Microsecond, fmt.Errorf("eval: %w", errUndefined))
	for i := range 100 {
		m.PolicyEvaluated(time.Microsecond, fmt.Errorf("rego error number %d", i))
	}
	if v, ok := seriesValue(t, reg, "memgate_policy_evaluation_errors_total", "reason", "undefined"); !ok || v != 1 {
		t.Fatalf("errors{reason=undefined} = %v (exported %v), want 1", v, ok)
	}
	if v, ok := seriesValue(t, reg, "memgate_policy_evaluation_errors_total", "reason", "other"); !ok || v != 100 {
		t.Fatalf("errors{reason=other} = %v (exported %v), want 100", v, ok)
	}
}
