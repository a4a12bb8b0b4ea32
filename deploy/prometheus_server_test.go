package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
)

// TestPrometheusFiresTheRollbackAlert runs the real sidecar binary,
// configured as the example overlay's manifest configures it, and a real
// Prometheus server on loopback that scrapes it every second and evaluates
// memgate-alerts.yml every second. After a real rollback through the admin
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

	step1 := sc.write(t, "step 1 done")
	step2 := sc.write(t, "step 2 done")
	// A write policy parks, applied in shadow mode (switched on and off
	// with no restart): the shadow panel's series.
	var mode map[string]string
	sc.admin(t, "PUT", "/admin/v1/policy/mode", `{"mode": "shadow"}`, &mode)
	if shadowed := sc.post(t, `{"layer": "policy", "subjectId": "project-alpha", "factType": "publish.auto", "summary": "never auto-publish"}`); shadowed.Decision.Shadow == nil {
		t.Fatalf("in shadow mode, a policy write has no shadow: %+v", shadowed.Decision)
	}
	sc.admin(t, "PUT", "/admin/v1/policy/mode", `{"mode": "enforce"}`, &mode)
	var res memory.RollbackResult
	sc.admin(t, "POST", "/admin/v1/memories/"+step2.ID+"/rollback", `{"reason": "wrong_step: step 2 failed after all"}`, &res)
	if len(res.RolledBack) != 1 || res.RolledBack[0].ID != step2.ID || res.Restored == nil || res.Restored.ID != step1.ID {
		t.Fatalf("rollback: %+v, want step 2 undone and step 1 restored", res)
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
	if got := prom.query(t, `sum(memgate_rollbacks_total{job="memgate", scope="record"})`); len(got) != 1 || got[0].Value[1] != "1" {
		t.Errorf("Prometheus sees rollbacks %+v, want one", got)
	}
	if got := prom.query(t, `memgate_policy_revision_info{job="memgate"}`); len(got) != 1 || got[0].Metric["revision"] != sc.policyRevision {
		t.Errorf("Prometheus sees policy revisions %+v, want the ConfigMap's %s", got, sc.policyRevision)
	}

	t.Run("dashboard queries", func(t *testing.T) {
		// Every query must parse and run. Without Slack there are no
		// notification or Slack series; every other query has data once
		// rate() has two scrapes of the series the writes created.
		queries := readDashboard(t).queries()
		var empty []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			empty = empty[:0]
			for where, expr := range queries {
				if len(prom.query(t, expr)) == 0 && !strings.Contains(expr, "memgate_notify_") && !strings.Contains(expr, "memgate_slack_") {
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

// sidecar is the real memgate binary, running with the environment the
// example overlay gives its container.
type sidecar struct {
	agentURL, adminURL, adminHost, token, policyRevision string
}

// startSidecar builds cmd/sidecar and runs it the way the kubelet would run
// the rendered container: its env and envFrom, the policy ConfigMap's files
// in the policy directory, the admin token from the "Secret". Only the
// addresses (loopback, free ports), the data directory and the guarded
// workspace (an empty directory standing in for the agent's volume) differ.
func startSidecar(t *testing.T) *sidecar {
	t.Helper()
	bin := sidecarBin.Path(t)
	r := render(t, exampleOverlay)
	var c *corev1.Container
	for i, ic := range r.deployments[0].Spec.Template.Spec.InitContainers {
		if ic.Name == sidecarName {
			c = &r.deployments[0].Spec.Template.Spec.InitContainers[i]
		}
	}
	dir := t.TempDir()
	sc := &sidecar{token: "integration-token"}
	agentAddr, adminAddr := freeLoopbackAddr(t), freeLoopbackAddr(t)
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		for k, v := range r.configMap(t, from.ConfigMapRef.Name).Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.Name == "MEMGATE_ADMIN_TOKEN":
			env[e.Name] = sc.token
		} // optional Slack secrets stay unset: no Slack here
	}
	policyDir := filepath.Join(dir, "policy")
	for _, v := range r.deployments[0].Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil || v.Name != mountNamed(t, c, env["MEMGATE_POLICY_DIR"]) {
			continue
		}
		cm := r.configMap(t, v.ConfigMap.Name)
		if err := os.MkdirAll(policyDir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := policy.FileSet{}
		for name, content := range cm.Data {
			files[name] = content
			writeFile(t, filepath.Join(policyDir, name), content)
		}
		sc.policyRevision = files.Revision()
	}
	if sc.policyRevision == "" {
		t.Fatal("the manifest mounts no policy ConfigMap at MEMGATE_POLICY_DIR")
	}
	env["MEMGATE_LISTEN"], env["MEMGATE_ADMIN_LISTEN"] = agentAddr, adminAddr
	env["MEMGATE_DATA_DIR"], env["MEMGATE_POLICY_DIR"] = filepath.Join(dir, "data"), policyDir
	if env["MEMGATE_GUARD_DIR"] != "" {
		workspace := filepath.Join(dir, "workspace")
		if err := os.MkdirAll(workspace, 0o755); err != nil {
			t.Fatal(err)
		}
		env["MEMGATE_GUARD_DIR"] = workspace
	}

	cmd := exec.Command(bin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEMGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	sc.agentURL, sc.adminURL, sc.adminHost = "http://"+agentAddr, "http://"+adminAddr, adminAddr
	startServer(t, cmd, "memgate", sc.adminURL+"/readyz")
	return sc
}

// mountNamed returns the name of the container's volume mounted at path.
func mountNamed(t *testing.T, c *corev1.Container, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return m.Name
		}
	}
	t.Fatalf("nothing is mounted at %s", path)
	return ""
}

func (sc *sidecar) write(t *testing.T, summary string) *memory.Record {
	t.Helper()
	return sc.post(t, fmt.Sprintf(`{"layer": "checkpoint", "subjectId": "task-42", "factType": "progress", "summary": %q}`, summary))
}

// post writes a native candidate that must apply.
func (sc *sidecar) post(t *testing.T, body string) *memory.Record {
	t.Helper()
	resp, err := http.Post(sc.agentURL+"/api/v1/memories", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec memory.Record // 201 answers with the active record
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &rec) != nil || rec.Status != memory.StatusActive {
		t.Fatalf("write %s: %d %s", body, resp.StatusCode, b)
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
	req.Header.Set("Content-Type", "application/json")
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

// process is a child process a test started.
type process struct{ done chan error }

// exited returns the process's exit error if it has ended, else nil.
func (p *process) exited() error {
	select {
	case err := <-p.done:
		if err == nil {
			err = errors.New("exit status 0")
		}
		p.done <- err // keep it for the cleanup
		return err
	default:
		return nil
	}
}

// startServer starts cmd, its output collected (and logged if the test
// fails), and waits at most 30 s until readyURL answers 200; the process
// exiting first fails the test. It is stopped (SIGTERM, then SIGKILL after
// 10 s) when the test ends.
func startServer(t *testing.T, cmd *exec.Cmd, name, readyURL string) {
	t.Helper()
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	waitUntil(t, 30*time.Second, name+" to be ready", func() bool {
		if err := p.exited(); err != nil {
			t.Fatalf("%s exited: %v\n%s", name, err, out.String())
		}
		resp, err := http.Get(readyURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// promServer is a Prometheus server this test started.
type promServer struct{ url string }

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
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--log.level=warn")
	p := &promServer{url: "http://" + addr}
	startServer(t, cmd, "prometheus", p.url+"/-/ready")
	return p
}

func (p *promServer) waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	waitUntil(t, limit, what, ok)
}

// waitUntil polls ok every 250ms until it holds, failing the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, ok func() bool) {
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
