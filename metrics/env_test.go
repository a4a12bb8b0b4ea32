package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/store"
)

// env is a Governor on a real Badger directory with metrics on a fresh registry.
type env struct {
	t     *testing.T
	ctx   context.Context
	reg   *prometheus.Registry
	m     *metrics.Metrics
	st    *store.Store
	gov   *memory.Governor
	clock *testkit.Clock
}

func newEnv(t *testing.T, cls memory.Classifier, opts ...func(*memory.Options)) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), reg: prometheus.NewRegistry(),
		clock: testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))}
	m, err := metrics.New(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	st := badgertest.New(t)
	e.st = st
	if cls == nil {
		cls = memory.ClassifierFunc(testkit.Rules)
	}
	o := memory.Options{Store: st, Classifier: m.InstrumentClassifier(cls), Observer: m, Now: e.clock.Now, Outbox: true}
	for _, opt := range opts {
		opt(&o)
	}
	e.gov = memory.NewGovernor(o)
	if err := e.reg.Register(metrics.NewStateCollector(metrics.Sources{Queue: e.gov, Disk: st, Outbox: st, Now: e.clock.Now})); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) submit(c memory.Candidate) *memory.SubmitResult {
	e.t.Helper()
	res, err := e.gov.Submit(e.ctx, c)
	if err != nil {
		e.t.Fatalf("submit %+v: %v", c, err)
	}
	return res
}

func write(layer memory.Layer, subject, fact, summary, dialect, run string) memory.Candidate {
	return memory.Candidate{Layer: layer, SubjectID: subject, FactType: fact, Summary: summary,
		Actor: memory.Actor{AgentID: "agent-1", RunID: run, Dialect: dialect}}
}

// value returns the value of the series name{labels} from a fresh gather:
// a counter's or gauge's value, a histogram's sample count. It fails the
// test if the series is missing.
func (e *env) value(name string, labels ...string) float64 {
	e.t.Helper()
	v, ok := seriesValue(e.t, e.reg, name, labels...)
	if !ok {
		e.t.Fatalf("series %s%v is not exported", name, labels)
	}
	return v
}

// want asserts several series at once.
func (e *env) want(cases []series) {
	e.t.Helper()
	for _, c := range cases {
		if got := e.value(c.name, c.labels...); got != c.want {
			e.t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

type series struct {
	name   string
	labels []string // name, value pairs
	want   float64
}

func seriesValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	if len(have) != len(pairs)/2 {
		return false
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if v, ok := have[pairs[i]]; !ok || v != pairs[i+1] {
			return false
		}
	}
	return true
}

func histogram(t *testing.T, g prometheus.Gatherer, name string, labels ...string) *dto.Histogram {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == name && hasLabels(m, labels) && m.GetHistogram() != nil {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("histogram %s%v is not exported", name, labels)
	return nil
}
