package embed_test

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/internal/testkit"
)

// The semantic half of search's hybrid: search declares this interface
// (search.Semantic); embed does not import search, so the method set is
// checked here.
var _ interface {
	Scores(ctx context.Context, query string, ids []string) (map[string]float64, error)
} = (*embed.Index)(nil)

func TestMetricsNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := embed.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	names := testkit.MetricNames(t, reg)
	want := []string{"memgate_embed_queue_depth", "memgate_embed_reconciles_total", "memgate_embed_request_seconds",
		"memgate_embed_requests_total", "memgate_embed_vectors"}
	if !slices.Equal(names, want) {
		t.Errorf("metrics %v, want %v", names, want)
	}
	if _, err := embed.NewMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
}
