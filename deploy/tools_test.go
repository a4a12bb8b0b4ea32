package deploy_test

import (
	"os"
	"os/exec"
	"testing"
)

// requireTool returns the path of a program a test drives. When it is
// missing the test fails in CI (CI is set), where .ci/run installs it, and
// is skipped elsewhere; both say how to install it.
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " is not installed; run: " + install
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

const installPrometheus = "apt-get update && apt-get install -y prometheus (Debian's package ships promtool and the server)"
