package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/notify"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/store"
)

// TestPrometheusFiresTheRollbackAlert runs a real Prometheus server on
// loopback that scrapes a running sidecar every second and evaluates
// memgate-alerts.yml every second; after a real rollback through the admin
// API, MemgateRollbackPerformed must fire. The same server then runs every
// dashboard query.
func TestPrometheusFiresTheRollbackAlert(t *testing.T) {
	bin := requireTool(t, "prometheus", installPrometheus)
	sc := startSidecar(t)
	prom := startPrometheus(t, bin, sc.adminHost)

	// Prometheus must have seen the counter at zero, or the rollback's
	// increase from 0 to 1 is invisible to increase().
	prom.waitFor(t, 30*time.Second, "the first scrape", func() bool {
		return len(prom.query(t, `memgate_rolled_back_records_total{job="memgate", scope="record"} == 0`)) == 1
	})
	for _, a := range prom.alerts(t) {
		if a.State == "firing" {
			t.Fatalf("alert firing before anything happened: %+v", a)
		}
	}

	ann := sc.write(t, "owner is Ann")
	bob := sc.write(t, "owner is Bob")
	var res memory.RollbackResult
	sc.admin(t, "POST", "/admin/v1/memories/"+bob.ID+"/rollback", `{"reason": "wrong_owner: Bob never owned it"}`, &res)
	if len(res.RolledBack) != 1 || res.Restored == nil || res.Restored.ID != ann.ID {
		t.Fatalf("rollback: %+v, want Bob undone and Ann restored", res)
	}

	var fired alert
	prom.waitFor(t, 60*time.Second, "MemgateRollbackPerformed to fire", func() bool {
		for _, a := range prom.alerts(t) {
			if a.Labels["alertname"] == "MemgateRollbackPerformed" && a.State == "firing" {
				fired = a
				return true
			}
		}
		return false
	})
	for k, v := range map[string]string{"job": "memgate", "instance": sc.adminHost, "severity": "info", "team": "agent-owners"} {
		if fired.Labels[k] != v {
			t.Errorf("alert label %s = %q, want %q (%+v)", k, fired.Labels[k], v, fired.Labels)
		}
	}
	if !strings.Contains(fired.Annotations["summary"], sc.adminHost) {
		t.Errorf("summary %q does not name the sidecar", fired.Annotations["summary"])
	}
	for _, a := range prom.alerts(t) {
		if a.State == "firing" && a.Labels["alertname"] != "MemgateRollbackPerformed" {
			t.Errorf("unexpected alert %s: %+v", a.Labels["alertname"], a.Labels)
		}
	}
	if got := prom.query(t, `memgate_rollbacks_total{job="memgate", scope="record", reason="unspecified"}`); len(got) != 1 || got[0].Value[1] != "1" {
		t.Errorf("Prometheus sees rollbacks %+v, want one", got)
	}

	t.Run("dashboard queries", func(t *testing.T) {
		// Every query must parse and run. Without Slack there are no
		// notification series; every other query has data once rate() has
		// two scrapes of the series the writes created.
		queries := readDashboard(t).queries()
		var empty []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			empty = empty[:0]
			for where, expr := range queries {
				if len(prom.query(t, expr)) == 0 && !strings.Contains(expr, "memgate_notify_") {
					empty = append(empty, where+": "+expr)
				}
			}
			if len(empty) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		for _, e := range empty {
			t.Errorf("no data from %s", e)
		}
	})
}

// sidecar is memgate's HTTP surfaces over a real Governor and Badger store,
// wired as cmd/sidecar wires them: the native API on the agent listener, the
// admin API and /metrics on the admin listener.
type sidecar struct {
	agentURL, adminURL, adminHost, token string
}

func startSidecar(t *testing.T) *sidecar {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	notify.NewMetrics(reg)
	gov := memory.NewGovernor(memory.Options{Store: st, Logger: log, Observer: m,
		Classifier: m.InstrumentClassifier(memory.ClassifierFunc(applyAll))})
	reg.MustRegister(metrics.NewStateCollector(metrics.Sources{Queue: gov, Size: st, Outbox: st, Logger: log}))
	m.PolicyLoaded("test-revision", nil)

	sc := &sidecar{token: "integration-token"}
	agentMux, adminMux := http.NewServeMux(), http.NewServeMux()
	(&proxy.Native{Gov: gov, Log: log}).Register(agentMux)
	(&proxy.Admin{Gov: gov, Log: log, Token: sc.token}).Register(adminMux)
	adminMux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	agent, admin := httptest.NewServer(agentMux), httptest.NewServer(adminMux) // 127.0.0.1
	t.Cleanup(agent.Close)
	t.Cleanup(admin.Close)
	sc.agentURL, sc.adminURL = agent.URL, admin.URL
	sc.adminHost = strings.TrimPrefix(admin.URL, "http://")
	return sc
}

func (sc *sidecar) write(t *testing.T, summary string) *memory.Record {
	t.Helper()
	body := fmt.Sprintf(`{"layer": "knowledge", "subjectId": "project-alpha", "factType": "owner", "summary": %q}`, summary)
	resp, err := http.Post(sc.agentURL+"/api/v1/memories", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec memory.Record // 201 answers with the active record
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &rec) != nil || rec.Status != memory.StatusActive {
		t.Fatalf("write %q: %d %s", summary, resp.StatusCode, b)
	}
	return &rec
}

func (sc *sidecar) admin(t *testing.T, method, path, body string, v any) {
	t.Helper()
	req, err := http.NewRequest(method, sc.adminURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+sc.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, v) != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
}

// promServer is a Prometheus server this test started.
type promServer struct {
	url string
	out *lockedBuffer
}

func startPrometheus(t *testing.T, bin, target string) *promServer {
	t.Helper()
	rules, err := filepath.Abs(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: memgate
    static_configs:
      - targets: [%q]
`, rules, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out.String())
		}
	})
	p := &promServer{url: "http://" + addr, out: out}
	p.waitFor(t, 30*time.Second, "prometheus to be ready", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited: %v\n%s", err, out.String())
		default:
		}
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

func (p *promServer) waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %s", limit, what)
		case <-tick.C:
		}
	}
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query; an expression Prometheus cannot parse or
// evaluate fails the test.
func (p *promServer) query(t *testing.T, expr string) []sample {
	t.Helper()
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	p.api(t, "/api/v1/query?query="+url.QueryEscape(expr), &data)
	if data.ResultType != "vector" {
		if data.ResultType == "scalar" {
			return []sample{{}}
		}
		t.Fatalf("query %s: result type %s", expr, data.ResultType)
	}
	var out []sample
	if err := json.Unmarshal(data.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func (p *promServer) alerts(t *testing.T) []alert {
	t.Helper()
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	p.api(t, "/api/v1/alerts", &data)
	return data.Alerts
}

func (p *promServer) api(t *testing.T, path string, data any) {
	t.Helper()
	resp, err := http.Get(p.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if body.Status != "success" {
		t.Fatalf("GET %s: %s: %s", path, body.Status, body.Error)
	}
	if err := json.Unmarshal(body.Data, data); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lockedBuffer collects a child process's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
