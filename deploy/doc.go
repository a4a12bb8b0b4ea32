// Package deploy holds what it takes to run memgate in production: the
// container image definition (Dockerfile), Kubernetes manifests that add the
// sidecar to an agent's Deployment (kubernetes/), Prometheus alert rules and
// their unit tests (prometheus/), and a Grafana dashboard (grafana/). It has
// no code of its own; its tests validate those files with the real tools:
// kustomize and the Kubernetes API types, promtool, and a Prometheus server
// scraping a running sidecar.
package deploy
