package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/policy"
)

// openPolicy loads the operator's policy directory, or the default policy
// built into the binary.
func openPolicy(ctx context.Context, cfg serveConfig, log *slog.Logger, met *metrics.Metrics) (*policyHandle, error) {
	files := policy.DefaultFiles()
	describe := "default"
	if cfg.policyDir != "" {
		var err error
		if files, err = policy.ReadDir(cfg.policyDir); err != nil {
			return nil, fmt.Errorf("--policy-dir: %w", err)
		}
		describe = cfg.policyDir
	}
	compiled, err := policy.Compile(ctx, files)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", describe, err)
	}
	met.PolicyLoaded(compiled.Revision(), nil)
	log.Info("policy loaded", "source", describe, "revision", compiled.Revision())
	return &policyHandle{classifier: compiled, describe: describe + "@" + compiled.Revision(), close: func() {}}, nil
}

func policyCommand(cl *cliEnv) *ffcli.Command {
	var dir string
	replay := adminCommand(cl, "policy replay", "policy replay --policy-dir DIR [--json]",
		"evaluate a new policy over the recorded writes and report where it would decide differently",
		func(fs *flag.FlagSet) { fs.StringVar(&dir, "policy-dir", "", "directory of the policy to try") },
		func(ctx context.Context, c *clientFlags, args []string) error {
			if dir == "" || len(args) > 0 {
				return fmt.Errorf("give --policy-dir")
			}
			files, err := policy.ReadDir(dir)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.call(ctx, "POST", "/admin/v1/policy/replay", map[string]any{"files": files}, &raw); err != nil {
				return err
			}
			return c.show(cl.stdout, raw, func(w io.Writer) error { return printReplay(w, raw) })
		})
	return &ffcli.Command{
		Name: "policy", ShortUsage: "sidecar policy replay --policy-dir DIR", ShortHelp: "try a policy before switching to it",
		Subcommands: []*ffcli.Command{replay},
		Exec:        func(context.Context, []string) error { return flag.ErrHelp },
	}
}

func printReplay(w io.Writer, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
