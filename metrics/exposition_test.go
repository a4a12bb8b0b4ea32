package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
)

// families is every metric family memgate exports besides go_* and process_*.
var families = []string{
	"memgate_build_info",
	"memgate_conflicts_total",
	"memgate_data_volume_free_bytes",
	"memgate_data_volume_size_bytes",
	"memgate_fact_matches_total",
	"memgate_http_request_duration_seconds",
	"memgate_http_requests_total",
	"memgate_outbox_depth",
	"memgate_outbox_oldest_age_seconds",
	"memgate_policy_evaluation_duration_seconds",
	"memgate_policy_evaluation_errors_total",
	"memgate_policy_mode",
	"memgate_policy_reloads_total",
	"memgate_policy_revision_info",
	"memgate_review_decisions_total",
	"memgate_review_queue_depth",
	"memgate_review_queue_oldest_age_seconds",
	"memgate_review_wait_seconds",
	"memgate_rollbacks_total",
	"memgate_rolled_back_records_total",
	"memgate_shadow_decisions_total",
	"memgate_stale_approvals_total",
	"memgate_store_size_bytes",
	"memgate_store_write_reserve_bytes",
	"memgate_writes_total",
}

// TestMetricsEndpointIsLintClean serves the registry the way the admin
// listener does, scrapes it over HTTP on loopback after real operations, and
// runs promlint over what came back, Go and process collectors included.
func TestMetricsEndpointIsLintClean(t *testing.T) {
	e := newEnv(t, nil)
	e.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e.submit(write(memory.LayerState, "project-alpha", "stage", "beta", "native", "run-1"))
	parked := e.submit(write(memory.LayerState, "project-alpha", "stage", "production", "native", "run-1")).Record
	e.clock.Advance(time.Minute)
	if _, err := e.gov.Approve(e.ctx, parked.ID, memory.Review{By: "U1", Route: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gov.Rollback(e.ctx, parked.ID, false, "test", "ops"); err != nil {
		t.Fatal(err)
	}
	e.m.PolicyLoaded("3f2a", nil)
	e.m.PolicyEvaluated(time.Millisecond, errors.New("boom"))
	e.m.Stale()
	e.m.Shadowed(memory.ActionReview, []string{"strategy"})

	if err := metrics.RegisterBuildInfo(e.reg); err != nil {
		t.Fatal(err)
	}
	hm, err := metrics.NewHTTP(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux() // the admin listener's, as the sidecar serves it
	mux.Handle("GET /metrics", promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(hm.Instrument("admin", mux, mux))
	defer srv.Close()
	scrape := func() *http.Response {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := scrape()
	resp.Body.Close() // the second scrape sees the first one counted
	resp = scrape()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}

	problems, err := promlint.New(strings.NewReader(string(body))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse the exposition: %v", err)
	}
	var got []string
	for name := range parsed {
		if strings.HasPrefix(name, "memgate_") {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, families) {
		t.Fatalf("exported families\n%v\nwant\n%v", got, families)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := parsed[name]; !ok {
			t.Errorf("%s missing: the Go and process collectors are registered beside memgate's", name)
		}
	}
	if !strings.Contains(string(body), `memgate_http_requests_total{code="200",dialect="metrics",listener="admin",route="GET /metrics"} 1`+"\n") {
		t.Errorf("the first scrape is not counted in the second:\n%s", body)
	}
	if !strings.Contains(string(body), "memgate_rolled_back_records_total{scope=\"record\"} 1\n") {
		t.Fatalf("the rollback is not in the scraped text:\n%s", body)
	}
}

// TestRegisteringTwiceFails: metrics take the registry they are given and
// refuse a second registration instead of sharing global state.
func TestRegisteringTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	var already prometheus.AlreadyRegisteredError
	if _, err := metrics.New(reg); !errors.As(err, &already) {
		t.Fatalf("second New on one registry: %v, want AlreadyRegisteredError", err)
	}
}
