package main

import (
	"os"
	"testing"

	"github.com/memgate/memgate/bench/sidecar/sidecartest"
	"github.com/memgate/memgate/internal/pgtest"
)

// sidecarBin is cmd/sidecar, built once for the process-level tests.
var sidecarBin = sidecartest.New("memgate-bin-")

// Tests that run the sidecar on PostgreSQL share one throwaway cluster,
// stopped when they end; the built binary is removed then too.
func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	sidecarBin.Remove()
	os.Exit(code)
}
