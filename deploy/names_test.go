package deploy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/notify"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

// describingRegistry records the descriptor of every collector registered
// with it, so the names of metrics that have no series yet (a vector no one
// has used) are known too.
type describingRegistry struct {
	*prometheus.Registry
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *describingRegistry) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registry.Register(c)
}

func (r *describingRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedNames returns every series name a memgate sidecar exports,
// registered the way the sidecar registers them: memgate's metrics and state
// collector, the notification outbox's and the Slack integration's metrics,
// the listeners' request metrics, build info, and the Go and process
// collectors. Histograms and summaries add their _bucket/_sum/_count series.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	reg := &describingRegistry{Registry: prometheus.NewRegistry(), names: map[string]bool{}}
	st := badgertest.New(t)
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	gov := memory.NewGovernor(memory.Options{Store: st, Observer: m, Outbox: true,
		Classifier: m.InstrumentClassifier(memory.ClassifierFunc(applyAll))})
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Queue: gov, Disk: st, Outbox: st}),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	notify.NewMetrics(reg)
	// With Slack on, its integration registers its own (no call to Slack here).
	if _, err := slacknotify.New(slacknotify.Config{BotToken: "xoxb-x", Channel: "C0X"},
		slacknotify.Deps{Gov: gov, KV: st, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.NewRetention(reg); err != nil {
		t.Fatal(err)
	}
	if err := metrics.RegisterBuildInfo(reg); err != nil {
		t.Fatal(err)
	}
	hm, err := metrics.NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	hm.Instrument("admin", http.NewServeMux(), http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if _, err := gov.Submit(context.Background(), memory.Candidate{SubjectID: "s", FactType: "f", Summary: "x"}); err != nil {
		t.Fatal(err)
	}

	names := map[string]bool{}
	for n := range reg.names {
		names[n] = true
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			names[mf.GetName()+"_bucket"] = true
			fallthrough
		case dto.MetricType_SUMMARY:
			names[mf.GetName()+"_sum"], names[mf.GetName()+"_count"] = true, true
		}
	}
	if !names["memgate_writes_total"] || !names["memgate_notify_retries_total"] || !names["go_goroutines"] {
		t.Fatalf("the exported names miss whole groups of metrics: %v", sortedKeys(names))
	}
	return names
}

func applyAll(context.Context, *memory.PolicyInput) (memory.Decision, error) {
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
}

// promqlKeywords are identifiers in PromQL that are not metric names.
var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
}

var (
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
)

// metricNames returns the metric names a PromQL expression selects. It is a
// lexer, not a parser: it drops strings, label matchers, ranges and grouping
// lists, then keeps identifiers that are not functions or keywords. The real
// Prometheus parses every expression in the server test.
func metricNames(expr string) []string {
	expr = promqlString.ReplaceAllString(expr, `""`)
	expr = promqlMatchers.ReplaceAllString(expr, " ")
	expr = promqlRange.ReplaceAllString(expr, " ")
	expr = promqlGrouping.ReplaceAllString(expr, " ")
	var out []string
	for _, loc := range promqlIdent.FindAllStringIndex(expr, -1) {
		tok := expr[loc[0]:loc[1]]
		if strings.HasSuffix(tok, "(") || promqlKeywords[strings.ToLower(tok)] {
			continue // a function call or an aggregation, or a keyword
		}
		if loc[0] > 0 && (isDigit(expr[loc[0]-1]) || expr[loc[0]-1] == '.') {
			continue // the exponent or unit of a number (1e3, 4h)
		}
		out = append(out, tok)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestMetricNamesLexer(t *testing.T) {
	cases := []struct {
		expr string
		want []string
	}{
		{`up{job="memgate"} == 0`, []string{"up"}},
		{`sum without (reason) (rate(memgate_policy_evaluation_errors_total{reason!="canceled"}[10m])) / rate(memgate_policy_evaluation_duration_seconds_count[10m]) > 0.05`,
			[]string{"memgate_policy_evaluation_duration_seconds_count", "memgate_policy_evaluation_errors_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(memgate_review_wait_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`,
			[]string{"memgate_review_wait_seconds_bucket"}},
		{`memgate_review_queue_oldest_age_seconds > 4 * 3600 and on (instance) absent(foo_bar)`,
			[]string{"foo_bar", "memgate_review_queue_oldest_age_seconds"}},
		{`x offset 5m or y unless bool z`, []string{"x", "y", "z"}},
		{`1e3 * metric_a`, []string{"metric_a"}},
	}
	for _, c := range cases {
		if got := metricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("metricNames(%q) = %v, want %v", c.expr, got, c.want)
		}
	}
}
