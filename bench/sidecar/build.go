package sidecar

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// MainPackage is the import path of the sidecar binary.
const MainPackage = "github.com/memgate/memgate/cmd/sidecar"

// Build compiles the sidecar into dir (run inside the memgate module) and
// returns the binary's path. It builds as deploy/Dockerfile does (static,
// trimmed paths, no symbol table), so the benchmarks and process tests run
// the binary the image ships, and the container test
// (deploy/container_test.go) finds the build in Go's cache.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "sidecar")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, MainPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", MainPackage, err, out)
	}
	return bin, nil
}
