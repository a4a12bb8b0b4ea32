package deploy_test

import (
	"testing"

	"github.com/memgate/memgate/bench/sidecar/sidecartest"
)

// sidecarBin is cmd/sidecar, built once for the tests that run it the way
// the rendered manifests do, and removed when they end.
var sidecarBin = sidecartest.New("memgate-deploy-test")

func TestMain(m *testing.M) { sidecarBin.Main(m) }
