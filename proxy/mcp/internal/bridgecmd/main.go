// Command bridgecmd runs the stdio bridge alone, configured from the
// environment as `sidecar mcp` is. The package's tests build it to drive the
// bridge with real MCP clients over real pipes.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	memgatemcp "github.com/memgate/memgate/proxy/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := memgatemcp.BridgeOptionsFromEnv(os.Getenv)
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := memgatemcp.Bridge(ctx, o, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "memgate mcp:", err)
		os.Exit(1)
	}
}
