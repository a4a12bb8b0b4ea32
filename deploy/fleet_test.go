package deploy_test

import (
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	fleetOverlay   = "kubernetes/overlays/fleet"
	cnpgAPIVersion = "postgresql.cnpg.io/v1"
	// The Secret CloudNativePG generates for a Cluster's application user
	// is named <cluster>-app; its key uri holds a postgresql:// URL.
	cnpgAppSecretSuffix = "-app"
	cnpgURIKey          = "uri"
)

// cnpgCluster is the part of CloudNativePG's Cluster (postgresql.cnpg.io/v1)
// that the fleet example writes, field names as in the operator's API
// reference. It is decoded strictly, so a misspelt or unlisted field fails
// the test; the operator's own Go types would bring its whole module in for
// one test.
type cnpgCluster struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Instances int    `json:"instances"`
		ImageName string `json:"imageName"`
		Bootstrap struct {
			InitDB struct {
				Database string `json:"database"`
				Owner    string `json:"owner"`
			} `json:"initdb"`
		} `json:"bootstrap"`
		PostgreSQL struct {
			Synchronous struct {
				Method string `json:"method"`
				Number int    `json:"number"`
			} `json:"synchronous"`
		} `json:"postgresql"`
		Storage struct {
			Size resource.Quantity `json:"size"`
		} `json:"storage"`
		Resources corev1.ResourceRequirements `json:"resources"`
	} `json:"spec"`
}

func decodeCNPGCluster(y []byte) (*cnpgCluster, error) {
	var c cnpgCluster
	if err := yaml.UnmarshalStrict(y, &c); err != nil {
		return nil, fmt.Errorf("Cluster does not decode strictly as the fields the example may use: %w\n%s", err, y)
	}
	return &c, nil
}

// memgateContainer returns the memgate sidecar of a Deployment and its env
// by name.
func memgateContainer(t *testing.T, dep *appsv1.Deployment) (*corev1.Container, map[string]corev1.EnvVar) {
	t.Helper()
	for i, c := range dep.Spec.Template.Spec.InitContainers {
		if c.Name == sidecarName {
			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			return &dep.Spec.Template.Spec.InitContainers[i], env
		}
	}
	t.Fatalf("no %s init container in %s", sidecarName, dep.Name)
	return nil, nil
}

// TestFleetOverlaySharesOneStore checks the fleet example: several agent
// pods whose sidecars share one PostgreSQL, one policy and one Slack path.
func TestFleetOverlaySharesOneStore(t *testing.T) {
	r := render(t, fleetOverlay)
	if len(r.deployments) != 1 || len(r.pgClusters) != 1 {
		t.Fatalf("%d deployments and %d Clusters rendered, want the agents and their database", len(r.deployments), len(r.pgClusters))
	}
	dep, db := r.deployments[0], r.pgClusters[0]
	pod := &dep.Spec.Template.Spec
	mg, env := memgateContainer(t, dep)

	t.Run("several agents", func(t *testing.T) {
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
			t.Fatalf("replicas %v: a fleet has more than one agent", dep.Spec.Replicas)
		}
		if mg.RestartPolicy == nil || *mg.RestartPolicy != corev1.ContainerRestartPolicyAlways || mg.StartupProbe == nil || mg.ReadinessProbe == nil {
			t.Fatal("the sidecar component's native sidecar and probes are missing")
		}
	})

	t.Run("--store from the database's Secret", func(t *testing.T) {
		ref := env["MEMGATE_STORE"].ValueFrom
		if env["MEMGATE_STORE"].Value != "" || ref == nil || ref.SecretKeyRef == nil {
			t.Fatalf("MEMGATE_STORE = %+v, want it from a Secret: the URL holds the password", env["MEMGATE_STORE"])
		}
		if want := db.Metadata.Name + cnpgAppSecretSuffix; ref.SecretKeyRef.Name != want || ref.SecretKeyRef.Key != cnpgURIKey {
			t.Fatalf("MEMGATE_STORE from %s/%s, want %s/%s, the Secret CloudNativePG makes for Cluster %s",
				ref.SecretKeyRef.Name, ref.SecretKeyRef.Key, want, cnpgURIKey, db.Metadata.Name)
		}
		if ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional {
			t.Fatal("MEMGATE_STORE is optional: a pod without it would start on an empty Badger store of its own")
		}
	})

	t.Run("no volume per pod", func(t *testing.T) {
		if len(r.claims) != 0 {
			t.Fatalf("%d PersistentVolumeClaims rendered: with --store nothing durable lives in the data directory", len(r.claims))
		}
		var data *corev1.Volume
		for i, m := range mg.VolumeMounts {
			if m.MountPath == env["MEMGATE_DATA_DIR"].Value {
				for j, v := range pod.Volumes {
					if v.Name == mg.VolumeMounts[i].Name {
						data = &pod.Volumes[j]
					}
				}
			}
		}
		if data == nil || data.EmptyDir == nil || data.PersistentVolumeClaim != nil {
			t.Fatalf("the data directory's volume %+v, want an emptyDir", data)
		}
		if dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || dep.Spec.Strategy.RollingUpdate == nil ||
			dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
			t.Fatalf("strategy %+v: without a ReadWriteOnce volume the agents roll without downtime", dep.Spec.Strategy)
		}
	})

	t.Run("one policy for the fleet", func(t *testing.T) {
		var policyMap string
		for _, v := range pod.Volumes {
			for _, m := range mg.VolumeMounts {
				if m.Name == v.Name && m.MountPath == env["MEMGATE_POLICY_DIR"].Value && v.ConfigMap != nil {
					policyMap = v.ConfigMap.Name
				}
			}
		}
		if policyMap == "" {
			t.Fatal("no policy ConfigMap mounted at MEMGATE_POLICY_DIR")
		}
		example := render(t, exampleOverlay)
		if !maps.Equal(r.configMap(t, policyMap).Data, example.configMap(t, policyMap).Data) {
			t.Fatal("the fleet's policy differs from the example's default policy")
		}
	})

	t.Run("Slack over signed HTTP to any pod", func(t *testing.T) {
		if _, ok := env["MEMGATE_SLACK_APP_TOKEN"]; ok {
			t.Fatal("the sidecars open Socket Mode: a Slack app takes about ten connections, fewer than a fleet's pods")
		}
		for _, name := range []string{"MEMGATE_SLACK_BOT_TOKEN", "MEMGATE_SLACK_SIGNING_SECRET"} {
			if e := env[name]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s must come from a Secret: every pod delivers the shared outbox and verifies clicks", name)
			}
		}
		if len(r.ingresses) != 1 || len(r.services) != 1 {
			t.Fatalf("%d ingresses and %d services, want one each", len(r.ingresses), len(r.services))
		}
		ing, svc := r.ingresses[0], r.services[0]
		var paths []networkingv1.HTTPIngressPath
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP != nil {
				paths = append(paths, rule.HTTP.Paths...)
			}
		}
		if len(paths) != 1 || paths[0].Path != "/slack/interactions" || paths[0].PathType == nil || *paths[0].PathType != networkingv1.PathTypeExact {
			t.Fatalf("ingress paths %+v: route only POST /slack/interactions, not the admin API", paths)
		}
		be := paths[0].Backend.Service
		if be == nil || be.Name != svc.Name {
			t.Fatalf("the ingress sends to %+v, not the %s Service", be, svc.Name)
		}
		var target *corev1.ServicePort
		for i, p := range svc.Spec.Ports {
			if p.Name == be.Port.Name || (be.Port.Number != 0 && p.Port == be.Port.Number) {
				target = &svc.Spec.Ports[i]
			}
		}
		if target == nil || resolvePort(mg, target.TargetPort) != adminPort {
			t.Fatalf("the ingress's port %+v does not reach the admin listener", be.Port)
		}
		for k, v := range svc.Spec.Selector {
			if dep.Spec.Template.Labels[k] != v {
				t.Errorf("the Service selects %s=%s, which the agents' pods do not carry", k, v)
			}
		}
	})

	t.Run("the database", func(t *testing.T) {
		spec := db.Spec
		if db.APIVersion != cnpgAPIVersion || spec.Instances < 2 {
			t.Fatalf("Cluster %s: %d instances, want a primary and a standby at least", db.Metadata.Name, spec.Instances)
		}
		// Rule 9 across a failover: a commit memgate acknowledged must be
		// on a standby too, or promoting it loses the write.
		if spec.PostgreSQL.Synchronous.Number < 1 || spec.PostgreSQL.Synchronous.Number >= spec.Instances {
			t.Fatalf("synchronous standbys %d of %d instances: want at least one, and fewer than all",
				spec.PostgreSQL.Synchronous.Number, spec.Instances)
		}
		if spec.Bootstrap.InitDB.Database == "" || spec.Bootstrap.InitDB.Owner == "" || spec.Storage.Size.IsZero() {
			t.Fatalf("Cluster spec %+v: want a database, its owner and storage", spec)
		}
		if db.Metadata.Namespace != dep.Namespace {
			t.Fatalf("the Cluster is in %q, the agents in %q: pods read Secrets of their own namespace", db.Metadata.Namespace, dep.Namespace)
		}
	})
}
