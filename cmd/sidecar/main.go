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
	"slices"
	"strings"
	"syscall"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp): // usage was printed: a command was missing or a flag wrong
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "memgate:", err)
		os.Exit(1)
	}
}

// envOptions makes every flag settable as MEMGATE_<NAME> (dashes become
// underscores), as DESIGN §5 fixes.
var envOptions = []ff.Option{ff.WithEnvVarPrefix("MEMGATE")}

// run parses args and runs the command they select. Help that was asked
// for (-h, --help, or "help" before the command words) goes to stdout and
// is a success; usage printed for a mistake goes to stderr with an error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	args, asked := helpArgs(args)
	root := rootCommand(stdin, stdout, stderr)
	usage := stderr
	if asked {
		usage = stdout
	}
	setUsageOutput(root, usage)
	err := root.Parse(args)
	if err == nil {
		err = root.Run(ctx)
	}
	if asked && errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// helpArgs rewrites "help [command words]" as "[command words] --help" and
// reports whether help was asked for.
func helpArgs(args []string) ([]string, bool) {
	if len(args) > 0 && args[0] == "help" {
		return append(slices.Clone(args[1:]), "--help"), true
	}
	for _, a := range args {
		switch a {
		case "--":
			return args, false
		case "-h", "-help", "--help", "--h":
			return args, true
		}
	}
	return args, false
}

// setUsageOutput sends every command's usage and flag errors to w, giving
// the commands that only group others a flag set of their own (ffcli's
// default one writes to os.Stderr and exits the process on -h).
func setUsageOutput(c *ffcli.Command, w io.Writer) {
	if c.FlagSet == nil {
		c.FlagSet = flag.NewFlagSet(strings.TrimSpace(c.Name), flag.ContinueOnError)
	}
	c.FlagSet.SetOutput(w)
	for _, sub := range c.Subcommands {
		setUsageOutput(sub, w)
	}
}

// envOnlyHelp lists the settings read from the environment only: secrets
// never go in flags, where ps and shell history would show them.
const envOnlyHelp = `
Settings read from the environment only (secrets):
  MEMGATE_ADMIN_TOKEN         admin API token (default: generated into <data-dir>/admin.token)
  MEMGATE_AGENT_KEYS          agent keys, "key[@user=u;agent=a;app=p]" separated by commas
                              (old name MEMGATE_MEM0_API_KEYS is read too); see also --agent-keys-file
  MEMGATE_JUDGE_API_KEY       key of the judge model's endpoint (--judge-url)
  MEMGATE_EXTRACTOR_API_KEY   key of the Mem0 fact extractor's endpoint (--extractor-url)
  MEMGATE_AGENT_KEY           the key "sidecar mcp" presents to the sidecar (the stdio bridge)
Prefer the environment for the Slack tokens too (MEMGATE_SLACK_BOT_TOKEN, MEMGATE_SLACK_APP_TOKEN,
MEMGATE_SLACK_SIGNING_SECRET) over their flags, and MEMGATE_STORE (or PGPASSWORD, a .pgpass file)
over --store for a database URL that carries a password.`

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
			"variable MEMGATE_<FLAG> (e.g. MEMGATE_DATA_DIR).\n" + envOnlyHelp,
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
			eventsCommand(cl),
			policyCommand(cl),
			snapshotCommand(cl),
			auditCommand(cl),
			eraseCommand(cl),
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
