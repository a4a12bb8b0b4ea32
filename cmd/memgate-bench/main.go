// Command memgate-bench measures memgate and checks its reliability
// promises with tools anyone can rerun (see BENCHMARKS.md):
//
//	memgate-bench load       drive a sidecar over HTTP and compare it with a bare durable Badger write
//	memgate-bench crash      kill -9 the sidecar under load, restart, check nothing acknowledged was lost
//	memgate-bench footprint  resident memory idle and with a million records, time to ready
//
// With -store postgres://… or -pg-cluster (a throwaway cluster the tool
// starts), load and crash run -instances sidecars on one PostgreSQL
// database (issue 17): load compares them with as many bare handlers doing
// a low-risk write's transaction, crash kills instances (and with
// -restart-db-every, PostgreSQL) under writers and reviewers that call
// every instance.
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

	"github.com/peterbourgon/ff/v3/ffcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case errors.Is(err, errFailed):
		os.Exit(1) // the report says why
	case err != nil:
		fmt.Fprintln(os.Stderr, "memgate-bench:", err)
		os.Exit(1)
	}
}

// errFailed means a check ran and found a problem, which it reported.
var errFailed = errors.New("check failed")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	rootFS := flag.NewFlagSet("memgate-bench", flag.ContinueOnError)
	rootFS.SetOutput(stderr)
	root := &ffcli.Command{
		Name:       "memgate-bench",
		ShortUsage: "memgate-bench <load|crash|footprint> [flags]",
		ShortHelp:  "benchmarks and reliability checks of memgate",
		FlagSet:    rootFS,
		Subcommands: []*ffcli.Command{
			loadCommand(stdout, stderr),
			writePathCommand(stdout, stderr),
			crashCommand(stdout, stderr),
			footprintCommand(stdout, stderr),
		},
		Exec: func(context.Context, []string) error { return flag.ErrHelp },
	}
	if err := root.Parse(args); err != nil {
		return err
	}
	return root.Run(ctx)
}
