package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
)

// TestRetentionRoundRecordsMetrics: a round expires what is due and says
// so in memgate_retention_*.
func TestRetentionRoundRecordsMetrics(t *testing.T) {
	ctx := context.Background()
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: eraseClassifier})
	for _, exp := range []time.Duration{-time.Hour, -time.Minute, time.Hour} {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", Summary: "note " + exp.String(),
			ExpiresAt: time.Now().Add(exp)}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	rm, err := metrics.NewRetention(reg)
	if err != nil {
		t.Fatal(err)
	}
	w := &retentionWorker{gov: gov, rules: func() memory.Retention { return memory.Retention{} }, batch: 1, metrics: rm,
		log: slog.New(slog.DiscardHandler)}
	w.round(ctx)
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got[mf.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	if got["memgate_retention_expired_total"] != 1 || got["memgate_retention_behind"] != 1 || got["memgate_retention_last_run_timestamp_seconds"] <= 0 {
		t.Fatalf("after a round bounded to 1: %v", got)
	}
	w.round(ctx)
	active, err := gov.List(ctx, memory.ListFilter{SubjectID: "s"})
	if err != nil || len(active) != 1 {
		t.Fatalf("after two rounds the active layer holds %d: %v", len(active), err)
	}
}
