package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/metrics"
	"github.com/memgate/memgate/policy"
)

// openPolicy starts the policy engine: the operator's directory (reloaded on
// change), an OPA bundle server, or the default policy built into the binary.
func openPolicy(ctx context.Context, cfg serveConfig, log *slog.Logger, met *metrics.Metrics) (*policyHandle, error) {
	opts := policy.Options{Dir: cfg.policyDir, Logger: log, OnReload: met.PolicyLoaded}
	describe := "default"
	switch {
	case cfg.policyDir != "":
		describe = cfg.policyDir
	case cfg.policyBundle != "":
		describe = cfg.policyBundle
		opts.Bundle = policy.BundleOptions{URL: cfg.policyBundle, PollInterval: cfg.policyBundlePoll,
			KeyAlgorithm: cfg.policyBundleKeyAlg}
		if cfg.policyBundleKey != "" {
			key, err := os.ReadFile(cfg.policyBundleKey)
			if err != nil {
				return nil, fmt.Errorf("--policy-bundle-key: %w", err)
			}
			opts.Bundle.PublicKey = string(key)
		}
	}
	engine := policy.New(opts)
	if err := engine.Open(ctx); err != nil {
		return nil, err
	}
	log.Info("policy loaded", "source", describe, "revision", engine.Revision())
	return &policyHandle{
		classifier: engine,
		describe:   describe,
		close: func() {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := engine.Close(c); err != nil {
				log.Warn("closing the policy engine", "err", err)
			}
		},
	}, nil
}

// replayPolicy compiles a policy sent to the admin API and evaluates it over
// every recorded write of the audit log. It reads the log a page at a time
// and loads the pending writes the recorded inputs reference by id.
func replayPolicy(gov *memory.Governor) func(ctx context.Context, files map[string]string) (any, error) {
	return func(ctx context.Context, files map[string]string) (any, error) {
		compiled, err := policy.Compile(ctx, policy.FileSet(files))
		if err != nil {
			return nil, memory.Errorf(memory.EINVALID, "the policy does not load: %v", err)
		}
		rp := policy.NewReplayer(compiled, policy.WithRecords(gov.Get))
		for after := ""; ; {
			page, err := gov.EventsPage(ctx, after, replayPageEvents, 0)
			if err != nil {
				return nil, err
			}
			for _, ev := range page.Events {
				if err := rp.Add(ctx, ev); err != nil {
					return nil, err
				}
			}
			if page.Next == "" {
				return rp.Report(), nil
			}
			after = page.Next
		}
	}
}

// replayPageEvents is how many audit events a replay reads at a time (a
// page is also bounded in bytes); a variable for tests.
var replayPageEvents = 1000

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
		Name: "policy", ShortUsage: "sidecar policy replay --policy-dir DIR | mode [enforce|shadow]", ShortHelp: "try a policy before switching to it; enforce or shadow it",
		Subcommands: []*ffcli.Command{replay, policyModeCommand(cl)},
		Exec:        func(context.Context, []string) error { return flag.ErrHelp },
	}
}

func printReplay(w io.Writer, raw json.RawMessage) error {
	var rep policy.ReplayReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return err
	}
	fmt.Fprintf(w, "Policy %s over %d recorded writes: %d same, %d changed, %d errors\n",
		clip(rep.Revision, 12), rep.Evaluated, rep.Same, rep.Changed, rep.Errors)
	if rep.PendingMissing > 0 {
		fmt.Fprintf(w, "  %d references to pending writes could not be resolved; those writes were replayed without them\n", rep.PendingMissing)
	}
	pairs := make([]string, 0, len(rep.Transitions))
	for k := range rep.Transitions {
		pairs = append(pairs, k)
	}
	sort.Strings(pairs)
	for _, k := range pairs {
		fmt.Fprintf(w, "  %-16s %d\n", k, rep.Transitions[k])
	}
	if len(rep.Changes) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RECORD\tSLOT\tTHEN\tNEW\tRULES\tSUMMARY")
		for _, c := range rep.Changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.RecordID, c.SubjectID+"/"+c.FactType, c.Old.Action, c.New.Action,
				strings.Join(c.New.Rules, ","), clip(c.Summary, 50))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "error on %s: %s\n", f.RecordID, f.Error)
	}
	return nil
}
