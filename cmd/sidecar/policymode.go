package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// policyModeCommand shows or switches the policy mode of a running
// sidecar (PUT /admin/v1/policy/mode): no restart, and not persisted (a
// restart starts in --policy-mode).
func policyModeCommand(cl *cliEnv) *ffcli.Command {
	return adminCommand(cl, "policy mode", "policy mode [enforce|shadow] [--json]",
		"show the policy mode, or switch it at once: shadow applies what policy would park or reject (never a secret) and lists it in `review list --shadow`", nil,
		func(ctx context.Context, c *clientFlags, args []string) error {
			var raw json.RawMessage
			var err error
			switch len(args) {
			case 0:
				err = c.call(ctx, "GET", "/admin/v1/policy/mode", nil, &raw)
			case 1:
				m, perr := memory.ParsePolicyMode(args[0])
				if perr != nil || args[0] == "" {
					return fmt.Errorf("want enforce or shadow, got %q", args[0])
				}
				err = c.call(ctx, "PUT", "/admin/v1/policy/mode", proxy.PolicyModeRequest{Mode: m}, &raw)
			default:
				return fmt.Errorf("want at most one mode (enforce or shadow), got %d arguments", len(args))
			}
			if err != nil {
				return err
			}
			return showAs(c, cl.stdout, raw, func(w io.Writer, got proxy.PolicyModeRequest) error {
				_, err := fmt.Fprintf(w, "policy mode: %s\n", got.Mode)
				return err
			})
		})
}
