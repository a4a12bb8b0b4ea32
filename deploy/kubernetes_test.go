package deploy_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/memgate/memgate/policy"
)

const (
	exampleOverlay = "kubernetes/overlays/example"
	baseDir        = "kubernetes/base"
	sidecarName    = "memgate"
	adminPort      = 7601
	// components/markdown-guard: where memgate sees the agent's workspace.
	guardDir        = "/workspace"
	workspaceVolume = "agent-workspace"
)

// rendered is a kustomization built and decoded into Kubernetes API types.
type rendered struct {
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	configMaps      []*corev1.ConfigMap
	claims          []*corev1.PersistentVolumeClaim
	serviceMonitors []*monitoringv1.ServiceMonitor
	ingresses       []*networkingv1.Ingress
	pgClusters      []*cnpgCluster // fleet_test.go
}

// render builds a kustomization in-process (kustomize's own library, with
// its default load restrictions, as `kubectl apply -k` does) and decodes
// every object strictly against the Kubernetes API types: an unknown or
// duplicate field, a wrong type or a malformed quantity fails the test.
func render(t *testing.T, dir string) *rendered {
	t.Helper()
	r, err := renderStrict(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func renderStrict(dir string) (*rendered, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, monitoringv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	codec := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
	out := &rendered{}
	for _, r := range resources.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		if errs := validation.IsDNS1123Subdomain(r.GetName()); len(errs) > 0 {
			return nil, fmt.Errorf("%s name %q: %v", r.GetKind(), r.GetName(), errs)
		}
		if r.GetApiVersion() == cnpgAPIVersion && r.GetKind() == "Cluster" {
			c, err := decodeCNPGCluster(y)
			if err != nil {
				return nil, err
			}
			out.pgClusters = append(out.pgClusters, c)
			continue
		}
		obj, gvk, err := codec.Decode(y, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s does not decode strictly as a Kubernetes object: %w\n%s", r.GetKind(), r.GetName(), err, y)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			out.deployments = append(out.deployments, o)
		case *corev1.Service:
			out.services = append(out.services, o)
		case *corev1.ConfigMap:
			out.configMaps = append(out.configMaps, o)
		case *corev1.PersistentVolumeClaim:
			out.claims = append(out.claims, o)
		case *monitoringv1.ServiceMonitor:
			out.serviceMonitors = append(out.serviceMonitors, o)
		case *networkingv1.Ingress:
			out.ingresses = append(out.ingresses, o)
		default:
			return nil, fmt.Errorf("unexpected object %s %s", gvk, r.GetName())
		}
	}
	return out, nil
}

func (r *rendered) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	for _, c := range r.configMaps {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no ConfigMap %q rendered", name)
	return nil
}

// TestStrictDecodingCatchesMistakes proves the check is strict: the same
// sidecar patch with one misspelt field, a field of the wrong type or a bad
// quantity must not render cleanly.
func TestStrictDecodingCatchesMistakes(t *testing.T) {
	patch := string(mustRead(t, "kubernetes/components/sidecar/sidecar-patch.yaml"))
	cases := []struct{ name, from, to, want string }{
		{"misspelt field", "readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", "unknown field"},
		{"wrong type", "containerPort: 7601", "containerPort: admin", "containerPort"},
		{"bad quantity", "memory: 256Mi", "memory: 256 MB", "quantities must match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(patch, c.from) {
				t.Fatalf("the patch no longer contains %q", c.from)
			}
			dir := copyTree(t, "kubernetes")
			writeFile(t, dir+"/components/sidecar/sidecar-patch.yaml", strings.Replace(patch, c.from, c.to, 1))
			_, err := renderStrict(dir + "/overlays/example")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("rendering with %s: %v, want an error about %q", c.name, err, c.want)
			}
			t.Logf("refused: %s", strings.SplitN(err.Error(), "\n", 2)[0])
		})
	}
}

func TestBaseRendersStrictly(t *testing.T) {
	r := render(t, baseDir)
	if len(r.services) != 1 || len(r.claims) != 1 || len(r.configMaps) != 1 || len(r.deployments) != 0 {
		t.Fatalf("base renders %d services, %d claims, %d config maps, %d deployments; want 1, 1, 1, 0",
			len(r.services), len(r.claims), len(r.configMaps), len(r.deployments))
	}
}

// TestExampleOverlayAddsTheSidecar checks what the sidecar needs, on the
// example agent Deployment as the overlay renders it.
func TestExampleOverlayAddsTheSidecar(t *testing.T) {
	r := render(t, exampleOverlay)
	if len(r.deployments) != 1 {
		t.Fatalf("%d deployments rendered, want the example agent", len(r.deployments))
	}
	dep := r.deployments[0]
	pod := &dep.Spec.Template.Spec
	var mg *corev1.Container
	for i := range pod.InitContainers {
		if pod.InitContainers[i].Name == sidecarName {
			mg = &pod.InitContainers[i]
		}
	}
	if mg == nil {
		t.Fatalf("no %s init container in %s", sidecarName, dep.Name)
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "agent" || pod.Containers[0].Image != "ghcr.io/example/openclaw-agent:2026.11" {
		t.Fatalf("the agent container changed: %+v", pod.Containers)
	}
	for _, c := range append(slices.Clone(pod.Containers), pod.InitContainers...) {
		if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
			t.Errorf("container name %q: %v", c.Name, errs)
		}
		for _, p := range c.Ports {
			if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
				t.Errorf("port name %q: %v", p.Name, errs)
			}
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range mg.Env {
		env[e.Name] = e
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range mg.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			t.Errorf("mount %s names no volume of the pod", m.Name)
		}
		mounts[m.MountPath] = m
	}

	t.Run("native sidecar", func(t *testing.T) {
		if mg.RestartPolicy == nil || *mg.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Fatal("memgate must be a restartable init container (a native sidecar), started before the agent")
		}
		if mg.Image != "ghcr.io/memgate/memgate:v0.1.0" {
			t.Fatalf("image %q, want the overlay's tag", mg.Image)
		}
		if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || dep.Spec.Strategy.RollingUpdate != nil {
			t.Fatalf("strategy %+v: the ReadWriteOnce data volume needs Recreate", dep.Spec.Strategy)
		}
	})

	t.Run("listeners", func(t *testing.T) {
		for name, want := range map[string]string{
			"MEMGATE_LISTEN":       "127.0.0.1:7600", // the agent shares the pod's loopback
			"MEMGATE_ADMIN_LISTEN": fmt.Sprintf("0.0.0.0:%d", adminPort),
		} {
			if env[name].Value != want {
				t.Errorf("%s = %q, want %q", name, env[name].Value, want)
			}
		}
		if len(mg.Ports) != 1 || mg.Ports[0].ContainerPort != adminPort {
			t.Errorf("ports %+v: only the admin listener is exposed", mg.Ports)
		}
	})

	t.Run("probes", func(t *testing.T) {
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{
			{"liveness", mg.LivenessProbe, "/healthz"},
			{"readiness", mg.ReadinessProbe, "/readyz"},
			{"startup", mg.StartupProbe, "/readyz"},
		} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s probe: none over HTTP", p.name)
				continue
			}
			if p.probe.HTTPGet.Path != p.path || resolvePort(mg, p.probe.HTTPGet.Port) != adminPort {
				t.Errorf("%s probe: %s on port %s, want %s on %d", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path, adminPort)
			}
		}
	})

	t.Run("policy from a ConfigMap", func(t *testing.T) {
		m, ok := mounts[env["MEMGATE_POLICY_DIR"].Value]
		if !ok || !m.ReadOnly || volumes[m.Name].ConfigMap == nil {
			t.Fatalf("MEMGATE_POLICY_DIR %q is not a read-only ConfigMap mount", env["MEMGATE_POLICY_DIR"].Value)
		}
		cm := r.configMap(t, volumes[m.Name].ConfigMap.Name)
		modules := 0
		for file := range cm.Data {
			switch path.Ext(file) {
			case ".rego":
				modules++
			case ".json", ".yaml", ".yml":
			case ".model":
				if file != policy.ModelFile {
					t.Errorf("policy ConfigMap holds %s; the classifier is %s", file, policy.ModelFile)
				}
			default:
				t.Errorf("policy ConfigMap holds %s, which is not a policy file", file)
			}
		}
		if modules == 0 {
			t.Fatal("the policy ConfigMap has no Rego module")
		}
		// What the sidecar does with the mounted directory: compile it, run
		// its Rego tests, and decide a probe write with it.
		if _, err := policy.Compile(context.Background(), policy.FileSet(cm.Data)); err != nil {
			t.Fatalf("the sidecar would refuse the policy in ConfigMap %s: %v", cm.Name, err)
		}
	})

	t.Run("tokens from a Secret", func(t *testing.T) {
		for _, name := range []string{"MEMGATE_ADMIN_TOKEN", "MEMGATE_SLACK_BOT_TOKEN", "MEMGATE_SLACK_APP_TOKEN", "MEMGATE_SLACK_SIGNING_SECRET"} {
			e := env[name]
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "memgate-secrets" {
				t.Errorf("%s must come from the memgate-secrets Secret, got %+v", name, e)
				continue
			}
			optional := e.ValueFrom.SecretKeyRef.Optional != nil && *e.ValueFrom.SecretKeyRef.Optional
			if optional != strings.HasPrefix(name, "MEMGATE_SLACK_") {
				t.Errorf("%s optional=%v: the admin token is required, Slack is optional", name, optional)
			}
		}
		if len(mg.EnvFrom) != 1 || mg.EnvFrom[0].ConfigMapRef == nil {
			t.Fatalf("envFrom %+v, want the memgate-config ConfigMap", mg.EnvFrom)
		}
		cfg := r.configMap(t, mg.EnvFrom[0].ConfigMapRef.Name)
		for _, k := range []string{"MEMGATE_SLACK_CHANNEL", "MEMGATE_SLACK_REVIEWERS", "MEMGATE_LOG_FORMAT"} {
			if cfg.Data[k] == "" {
				t.Errorf("config %s has no %s", cfg.Name, k)
			}
		}
		for k := range cfg.Data {
			if strings.Contains(k, "TOKEN") || strings.Contains(k, "SECRET") {
				t.Errorf("config %s holds %s: credentials belong in the Secret", cfg.Name, k)
			}
		}
	})

	t.Run("data volume", func(t *testing.T) {
		m, ok := mounts[env["MEMGATE_DATA_DIR"].Value]
		if !ok || m.ReadOnly {
			t.Fatalf("MEMGATE_DATA_DIR %q is not a writable mount", env["MEMGATE_DATA_DIR"].Value)
		}
		pvc := volumes[m.Name].PersistentVolumeClaim
		if pvc == nil || len(r.claims) != 1 || r.claims[0].Name != pvc.ClaimName {
			t.Fatalf("the data volume %+v is not the rendered claim", volumes[m.Name])
		}
		if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup != *mg.SecurityContext.RunAsGroup {
			t.Fatal("the pod's fsGroup must be memgate's group, or the volume is not writable")
		}
	})

	t.Run("Markdown guard on the agent's workspace", func(t *testing.T) {
		// components/markdown-guard: memgate watches the agent's workspace
		// volume, the one the agent writes MEMORY.md and memory/*.md in.
		m, ok := mounts[guardDir]
		if !ok {
			t.Fatalf("memgate mounts nothing at %s", guardDir)
		}
		if m.Name != workspaceVolume || m.ReadOnly || m.SubPath != "" {
			t.Fatalf("memgate mounts %s (readOnly %v, subPath %q) at %s, want the whole %s volume, writable: it undoes edits in the files",
				m.Name, m.ReadOnly, m.SubPath, guardDir, workspaceVolume)
		}
		if got := env["MEMGATE_GUARD_DIR"]; got.Value != guardDir || got.ValueFrom != nil {
			t.Fatalf("MEMGATE_GUARD_DIR = %+v, want %s", got, guardDir)
		}
		if _, ok := volumes[workspaceVolume]; !ok {
			t.Fatalf("the pod has no %s volume", workspaceVolume)
		}
		if strings.HasPrefix(env["MEMGATE_DATA_DIR"].Value+"/", guardDir+"/") {
			t.Fatalf("memgate's data directory %s is inside the agent's workspace", env["MEMGATE_DATA_DIR"].Value)
		}
		agent, data := &pod.Containers[0], mounts[env["MEMGATE_DATA_DIR"].Value].Name
		var am *corev1.VolumeMount
		for i, v := range agent.VolumeMounts {
			if v.Name == workspaceVolume {
				am = &agent.VolumeMounts[i]
			}
			if v.Name == data {
				t.Errorf("the agent mounts memgate's data volume %s", v.Name)
			}
		}
		if am == nil || am.ReadOnly || am.SubPath != m.SubPath {
			t.Fatalf("the agent container does not mount the %s volume memgate watches, writable and whole: %+v", workspaceVolume, agent.VolumeMounts)
		}
		agentEnv := map[string]string{}
		for _, e := range agent.Env {
			agentEnv[e.Name] = e.Value
		}
		// OpenClaw resolves its workspace from OPENCLAW_WORKSPACE_DIR, else
		// ~/.openclaw/workspace (its image's HOME is /home/node).
		if ws := agentEnv["OPENCLAW_WORKSPACE_DIR"]; am.MountPath != ws || ws != "/home/node/.openclaw/workspace" {
			t.Errorf("the agent mounts the workspace at %s and OpenClaw uses %q: they must be the same directory", am.MountPath, ws)
		}
		// memgate undoes an edit by renaming a rewritten copy over the file,
		// which then belongs to memgate's uid; OpenClaw's tools write files
		// in place, so the agent could no longer write a file another uid
		// owns (mode 0644), nor memgate write in a directory the agent made.
		// Running as the agent's uid, memgate keeps both working.
		mu, au := effectiveUID(pod, mg), effectiveUID(pod, agent)
		if mu == nil || au == nil || *mu != *au {
			t.Errorf("memgate runs as uid %v and the agent as %v: the guard needs the same uid", deref(mu), deref(au))
		}
		if mg.SecurityContext == nil || mg.SecurityContext.RunAsGroup == nil || pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || *mg.SecurityContext.RunAsGroup != *pod.SecurityContext.FSGroup {
			t.Error("memgate's group must stay the pod's fsGroup, or its data volume is not writable")
		}
	})

	t.Run("resources sized from DESIGN §7", func(t *testing.T) {
		req, lim := mg.Resources.Requests, mg.Resources.Limits
		idle, loaded := resource.MustParse("40M"), resource.MustParse("150M")
		if req.Memory().Cmp(idle) < 0 {
			t.Errorf("memory request %s is below the 40 MB idle RSS", req.Memory())
		}
		if lim.Memory().Cmp(loaded) <= 0 || lim.Memory().Value() < loaded.Value()*3/2 {
			t.Errorf("memory limit %s leaves no headroom over 150 MB with 1M records", lim.Memory())
		}
		if req.Cpu().IsZero() {
			t.Error("no CPU request")
		}
		if _, ok := lim[corev1.ResourceCPU]; ok {
			t.Error("a CPU limit throttles every memory write; request CPU only")
		}
	})

	t.Run("locked-down securityContext", func(t *testing.T) {
		sc := mg.SecurityContext
		if sc == nil {
			t.Fatal("no securityContext")
		}
		checks := []struct {
			what string
			ok   bool
		}{
			{"runAsNonRoot", sc.RunAsNonRoot != nil && *sc.RunAsNonRoot},
			{"non-root uid", sc.RunAsUser != nil && *sc.RunAsUser > 0},
			{"readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem},
			{"allowPrivilegeEscalation false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation},
			{"not privileged", sc.Privileged == nil || !*sc.Privileged},
			{"drop ALL capabilities", sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0},
			{"seccomp RuntimeDefault", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("securityContext: want %s, got %+v", c.what, sc)
			}
		}
	})

	t.Run("scrape configuration", func(t *testing.T) {
		if len(r.services) != 1 || len(r.serviceMonitors) != 1 {
			t.Fatalf("%d services and %d service monitors, want one each", len(r.services), len(r.serviceMonitors))
		}
		svc, sm := r.services[0], r.serviceMonitors[0]
		for k, v := range svc.Spec.Selector {
			if dep.Spec.Template.Labels[k] != v {
				t.Errorf("the Service selects %s=%s, which the agent's pods do not carry", k, v)
			}
		}
		if len(svc.Spec.Ports) != 1 || resolvePort(mg, svc.Spec.Ports[0].TargetPort) != adminPort {
			t.Fatalf("service ports %+v do not reach the admin listener", svc.Spec.Ports)
		}
		for k, v := range sm.Spec.Selector.MatchLabels {
			if svc.Labels[k] != v {
				t.Errorf("the ServiceMonitor selects %s=%s, which the Service does not carry", k, v)
			}
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" {
			t.Fatalf("endpoints %+v do not scrape the Service's admin port at /metrics", sm.Spec.Endpoints)
		}
		// The alert rules select job="memgate".
		if job := svc.Labels[sm.Spec.JobLabel]; job != "memgate" {
			t.Fatalf("jobLabel %q gives job %q, want memgate", sm.Spec.JobLabel, job)
		}
	})
}

// effectiveUID is the uid a container runs as: its own runAsUser, else
// the pod's (nil if neither sets one: the image decides).
func effectiveUID(pod *corev1.PodSpec, c *corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if pod.SecurityContext != nil {
		return pod.SecurityContext.RunAsUser
	}
	return nil
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// resolvePort returns the container port a probe or Service port names.
func resolvePort(c *corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

// copyTree copies a directory into a temporary one and returns its path.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExampleScrapeConfigFindsTheSidecar: the scrape job for Prometheus
// without the Operator keeps the port the sidecar declares and names the
// job the alert rules select. (Debian's promtool is built without Kubernetes
// discovery, so `promtool check config` cannot load this file here.)
func TestExampleScrapeConfigFindsTheSidecar(t *testing.T) {
	var cfg struct {
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName        string `json:"job_name"`
			MetricsPath    string `json:"metrics_path"`
			RelabelConfigs []struct {
				SourceLabels []string `json:"source_labels"`
				Regex        string   `json:"regex"`
				Action       string   `json:"action"`
			} `json:"relabel_configs"`
		} `json:"scrape_configs"`
	}
	readYAML(t, "prometheus/prometheus.yml", &cfg)
	if len(cfg.RuleFiles) != 1 || "prometheus/"+cfg.RuleFiles[0] != alertRulesFile {
		t.Fatalf("rule_files %v, want %s", cfg.RuleFiles, alertRulesFile)
	}
	if len(cfg.ScrapeConfigs) != 1 || cfg.ScrapeConfigs[0].JobName != "memgate" || cfg.ScrapeConfigs[0].MetricsPath != "/metrics" {
		t.Fatalf("scrape configs %+v, want one job named memgate scraping /metrics", cfg.ScrapeConfigs)
	}
	dep := render(t, exampleOverlay).deployments[0]
	var port string
	for _, c := range dep.Spec.Template.Spec.InitContainers {
		if c.Name == sidecarName && len(c.Ports) == 1 {
			port = c.Ports[0].Name
		}
	}
	kept := false
	for _, r := range cfg.ScrapeConfigs[0].RelabelConfigs {
		if r.Action == "keep" && slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_pod_container_port_name"}) && r.Regex == port {
			kept = true
		}
	}
	if port == "" || !kept {
		t.Fatalf("the scrape job does not keep the sidecar's port %q", port)
	}
}

// TestExampleScrapeConfigPassesPromtool checks everything in the example
// configuration but its Kubernetes discovery with the real promtool:
// Debian's build leaves that discovery out, as the file's comment says.
func TestExampleScrapeConfigPassesPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool", installPrometheus)
	raw, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	const discovery = "    kubernetes_sd_configs:\n      - role: pod\n"
	if !strings.Contains(string(raw), discovery) {
		t.Fatalf("prometheus.yml no longer holds %q: update this test", discovery)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "prometheus.yml"),
		strings.Replace(string(raw), discovery, "    static_configs:\n      - targets: ['127.0.0.1:7601']\n", 1))
	rules, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "memgate-alerts.yml"), string(rules))
	if out, err := exec.Command(promtool, "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}
