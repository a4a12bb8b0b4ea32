package sidecar

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// MainPackage is the import path of the sidecar binary.
const MainPackage = "github.com/memgate/memgate/cmd/sidecar"

// Build compiles the sidecar into dir (run inside the memgate module) and
// returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "sidecar")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, MainPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", MainPackage, err, out)
	}
	return bin, nil
}
