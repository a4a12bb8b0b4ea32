package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/peterbourgon/ff/v3/ffcli"

	memgatemcp "github.com/memgate/memgate/proxy/mcp"
)

// mcpCommand is `sidecar mcp`: MCP on stdio, forwarded to the running
// sidecar's /mcp, so it can replace server-memory in any MCP config without
// a second process opening the data directory. stdout carries MCP only.
func mcpCommand(stdin io.Reader, stdout, stderr io.Writer) *ffcli.Command {
	var o memgatemcp.BridgeOptions
	fs := flag.NewFlagSet("sidecar mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.URL, "mcp-url", memgatemcp.DefaultSidecarURL, "the running sidecar's agent listener (or its MCP endpoint)")
	fs.StringVar(&o.AgentID, "agent-id", "", "agent id recorded on the bridged writes")
	fs.StringVar(&o.RunID, "run-id", "", "run id recorded on the bridged writes (default: the MCP session)")
	fs.StringVar(&o.UserID, "user-id", "", "user id recorded on the bridged writes (and the Mem0 tools' default user)")
	o.Key = os.Getenv("MEMGATE_AGENT_KEY") // a secret: from the environment only, never a flag
	logLevel := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	return &ffcli.Command{
		Name: "mcp", ShortUsage: "sidecar mcp [flags]",
		ShortHelp: "serve MCP on stdio, bridged to the running sidecar (a drop-in for server-memory)",
		FlagSet:   fs, Options: envOptions, // MEMGATE_MCP_URL, MEMGATE_AGENT_ID, MEMGATE_RUN_ID, MEMGATE_USER_ID
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("mcp takes no arguments, got %q", args)
			}
			var lv slog.Level
			if err := lv.UnmarshalText([]byte(*logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
			return memgatemcp.Bridge(ctx, o, stdin, stdout)
		},
	}
}
