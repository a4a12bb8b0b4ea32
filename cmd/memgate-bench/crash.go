package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/bench/crash"
)

func crashCommand(stdout, stderr io.Writer) *ffcli.Command {
	fs := flag.NewFlagSet("memgate-bench crash", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		bin       = fs.String("sidecar", "", "the sidecar binary to run and kill (go build -o /tmp/sidecar ./cmd/sidecar)")
		dataDir   = fs.String("data-dir", "", "its data directory (default: a temporary one, removed after)")
		cycles    = fs.Int("cycles", 10, "kill/restart cycles")
		writers   = fs.Int("writers", 4, "concurrent writers")
		reviewers = fs.Int("reviewers", 2, "concurrent reviewers (approve, reject, roll back)")
		minUp     = fs.Duration("min-uptime", 500*time.Millisecond, "earliest kill after the sidecar is ready")
		maxUp     = fs.Duration("max-uptime", 3*time.Second, "latest kill after the sidecar is ready")
		slots     = fs.Int("slots", 8, "shared slots of each kind the writers contend on")
		seed      = fs.Uint64("seed", 0, "random seed (0: from the clock; the report prints it)")
		ackLog    = fs.String("ack-log", "", "write every acknowledged item to this file as JSON lines")
		jsonOut   = fs.Bool("json", false, "print the report as JSON")
	)
	return &ffcli.Command{
		Name:       "crash",
		ShortUsage: "memgate-bench crash -sidecar BIN [flags]",
		ShortHelp:  "kill -9 the sidecar under load, restart, verify nothing acknowledged was lost",
		LongHelp: "Runs the sidecar under concurrent writers and reviewers that log every acknowledged write\n" +
			"and decision, kills it with SIGKILL at a random moment, restarts it and verifies that every\n" +
			"acknowledged item is present in the state its acknowledgement promised and that no slot has\n" +
			"two active records. Prints cycles run and items lost; exits 1 if anything was lost.",
		FlagSet: fs,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("crash takes no arguments, got %q", args)
			}
			if *bin == "" {
				return errors.New("-sidecar is required")
			}
			cfg := crash.Config{Binary: *bin, DataDir: *dataDir, Cycles: *cycles, Writers: *writers, Reviewers: *reviewers,
				MinUptime: *minUp, MaxUptime: *maxUp, Slots: *slots, Seed: *seed, Progress: stderr}
			if *ackLog != "" {
				f, err := os.Create(*ackLog)
				if err != nil {
					return err
				}
				defer f.Close()
				cfg.AckLog = f
			}
			rep, err := crash.Run(ctx, cfg)
			if *jsonOut {
				if jerr := json.NewEncoder(stdout).Encode(rep); jerr != nil {
					return jerr
				}
			} else {
				rep.Print(stdout)
			}
			if err != nil {
				return err
			}
			if !rep.OK() {
				return errFailed
			}
			return nil
		},
	}
}
