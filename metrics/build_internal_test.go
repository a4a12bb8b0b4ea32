package metrics

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestBuildLabels(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name                     string
		bi                       *debug.BuildInfo
		ok                       bool
		version, revision, goVer string
	}{
		{"no build info", nil, false, "(devel)", "unknown", runtime.Version()},
		{"go run: nothing stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true,
			"(devel)", "unknown", "go1.26.8"},
		{"go build in a clean checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("9cc9315f00", "false")}, true, "(devel)", "9cc9315f00", "go1.26.8"},
		{"go build with local changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("9cc9315f00", "true")}, true, "(devel)", "9cc9315f00-dirty", "go1.26.8"},
		{"go install module@version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.1"}}, true,
			"v0.4.1", "unknown", "go1.26.8"},
		{"modified but no revision", &debug.BuildInfo{Main: debug.Module{}, Settings: vcs("", "true")}, true,
			"(devel)", "unknown", runtime.Version()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, r, g := buildLabels(tc.bi, tc.ok)
			if v != tc.version || r != tc.revision || g != tc.goVer {
				t.Errorf("buildLabels = %q, %q, %q; want %q, %q, %q", v, r, g, tc.version, tc.revision, tc.goVer)
			}
		})
	}
}
