// Command sidecar is memgate: with no arguments it serves (agent and admin
// listeners over a local data directory, with the default policy built in);
// its other subcommands operate a running sidecar over the admin API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memgate:", err)
		os.Exit(1)
	}
}

// envOptions makes every flag settable as MEMGATE_<NAME> (dashes become
// underscores), as DESIGN §5 fixes.
var envOptions = []ff.Option{ff.WithEnvVarPrefix("MEMGATE")}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := rootCommand(stdin, stdout, stderr)
	if err := root.Parse(args); err != nil {
		return err
	}
	return root.Run(ctx)
}

func rootCommand(stdin io.Reader, stdout, stderr io.Writer) *ffcli.Command {
	var rootCfg serveConfig
	rootFS := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	rootFS.SetOutput(stderr)
	rootCfg.register(rootFS)

	cl := &cliEnv{stdin: stdin, stdout: stdout, stderr: stderr}
	return &ffcli.Command{
		Name:       "sidecar",
		ShortUsage: "sidecar [serve flags] | sidecar <subcommand> [flags] [args]",
		ShortHelp:  "memgate: governed long-term memory for AI agents",
		LongHelp: "With no subcommand, sidecar serves: the agent listener (native, Mem0 and MCP APIs) and\n" +
			"the admin listener (review, explain, rollback, metrics). Every flag is also an environment\n" +
			"variable MEMGATE_<FLAG> (e.g. MEMGATE_DATA_DIR).",
		FlagSet: rootFS,
		Options: envOptions,
		Subcommands: []*ffcli.Command{
			serveCommand(stderr),
			reviewCommand(cl),
			explainCommand(cl),
			historyCommand(cl),
			rollbackCommand(cl),
			quarantineCommand(cl),
			restoreCommand(cl),
			policyCommand(cl),
			snapshotCommand(cl),
			mcpCommand(stdin, stdout, stderr),
		},
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown subcommand %q (see sidecar -h)", args[0])
			}
			return serve(ctx, rootCfg, stderr)
		},
	}
}

func serveCommand(stderr io.Writer) *ffcli.Command {
	var cfg serveConfig
	fs := flag.NewFlagSet("sidecar serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.register(fs)
	return &ffcli.Command{
		Name:       "serve",
		ShortUsage: "sidecar serve [flags]",
		ShortHelp:  "serve the agent and admin listeners (the default)",
		FlagSet:    fs,
		Options:    envOptions,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("serve takes no arguments, got %q", args)
			}
			return serve(ctx, cfg, stderr)
		},
	}
}
