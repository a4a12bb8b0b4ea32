package metrics

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterBuildInfo registers memgate_build_info, a gauge that is always 1
// with the binary's version, VCS revision and Go version as labels, so
// that dashboards and alerts can tell which build each sidecar runs.
func RegisterBuildInfo(reg prometheus.Registerer) error {
	version, revision, goVersion := buildLabels(debug.ReadBuildInfo())
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info",
		Help:        "The running binary's build: main module version, VCS revision (-dirty when built from modified files) and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion}})
	g.Set(1)
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("metrics: register: %w", err)
	}
	return nil
}

// buildLabels reads the labels of memgate_build_info from what the Go
// toolchain stamped into the binary. `go build` in a Git checkout stamps
// vcs.revision and vcs.modified; `go install module@version` stamps the
// version; `go run` and tests stamp neither.
func buildLabels(bi *debug.BuildInfo, ok bool) (version, revision, goVersion string) {
	version, revision, goVersion = "(devel)", "unknown", runtime.Version()
	if !ok || bi == nil {
		return version, revision, goVersion
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				revision = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && revision != "unknown" {
		revision += "-dirty"
	}
	return version, revision, goVersion
}
