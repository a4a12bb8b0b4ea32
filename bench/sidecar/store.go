package sidecar

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
)

// storeFlag matches the --store flag in the binary's usage.
var storeFlag = regexp.MustCompile(`(?m)^\s+-{1,2}store\b`)

// CheckStoreFlag reports, before any run starts, whether the binary serves
// on a shared store (sidecar --store URL, issue 17). A binary built before
// that flag would exit at once on every start with "flag provided but not
// defined", which the fleet modes would report per process and per cycle.
func CheckStoreFlag(ctx context.Context, bin string) error {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--help")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s --help: %w\n%s", bin, err, out.Bytes())
	}
	if !storeFlag.Match(out.Bytes()) {
		return fmt.Errorf("%s has no --store flag: this sidecar serves only its embedded Badger store; "+
			"build one with the PostgreSQL store (issue 17) to run a fleet on one database", bin)
	}
	return nil
}
