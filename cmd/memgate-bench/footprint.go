package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/cmd/memgate-bench/footprint"
)

func footprintCommand(stdout, stderr io.Writer) *ffcli.Command {
	fs := newFlagSet("footprint", stderr)
	var (
		bin      = fs.String("sidecar", "", "the sidecar binary to measure")
		dataDir  = fs.String("data-dir", "", "data directory to load (default: a temporary one, removed after)")
		records  = fs.Int("records", 1_000_000, "active records to load before the second start (0: only the empty start)")
		subjects = fs.Int("subjects", 1000, "subjects the records spread over")
		settle   = fs.Duration("settle", 2*time.Second, "idle time before reading the resident memory")
		jsonOut  = fs.Bool("json", false, "print the report as JSON")
	)
	return &ffcli.Command{
		Name:       "footprint",
		ShortUsage: "memgate-bench footprint -sidecar BIN [flags]",
		ShortHelp:  "resident memory idle and with many records, and time from start to ready",
		FlagSet:    fs,
		Exec: noArgs("footprint", func(ctx context.Context) error {
			if *bin == "" {
				return errors.New("-sidecar is required")
			}
			if *records == 0 {
				*records = -1 // the library's "none"
			}
			rep, err := footprint.Measure(ctx, footprint.Config{Binary: *bin, DataDir: *dataDir, Records: *records,
				Subjects: *subjects, Settle: *settle, Progress: stderr})
			if err != nil {
				return err
			}
			return show(stdout, *jsonOut, rep, rep.Print)
		}),
	}
}
