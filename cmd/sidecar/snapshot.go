package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/snapshot"
)

func snapshotCommand(cl *cliEnv) *ffcli.Command {
	save := adminCommand(cl, "snapshot save", "snapshot save <file>", "write a full backup of the running sidecar's store", nil,
		func(ctx context.Context, c *clientFlags, args []string) error {
			if len(args) != 1 {
				return errors.New("give the backup file to write")
			}
			return saveSnapshot(ctx, c, args[0], cl.stdout)
		})
	var dataDir string
	loadFS := flag.NewFlagSet("sidecar snapshot load", flag.ContinueOnError)
	loadFS.SetOutput(cl.stderr)
	loadFS.StringVar(&dataDir, "data-dir", "memgate-data", "data directory to restore into (must hold no database)")
	load := &ffcli.Command{
		Name: "load", ShortUsage: "sidecar snapshot load --data-dir DIR <file>",
		ShortHelp: "restore a backup into an empty data directory (with the sidecar stopped)",
		FlagSet:   loadFS, Options: envOptions,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return errors.New("give the backup file to load")
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if err := snapshot.Load(ctx, filepath.Join(dataDir, "db"), f); err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "restored %s into %s\n", args[0], dataDir)
			return nil
		},
	}
	return &ffcli.Command{
		Name: "snapshot", ShortUsage: "sidecar snapshot save|load|export|import", ShortHelp: "whole-store backups",
		LongHelp: "save and load copy the embedded Badger store in Badger's own backup format. export and import\n" +
			"write and read a store-neutral stream (JSON Lines) that moves memory, history, the review queue,\n" +
			"the audit log and the outbox between stores: Badger to PostgreSQL and back.",
		Subcommands: []*ffcli.Command{save, load, exportCommand(cl), importCommand(cl)},
		Exec:        func(context.Context, []string) error { return flag.ErrHelp },
	}
}

func saveSnapshot(ctx context.Context, c *clientFlags, path string, out io.Writer) error {
	token, source, err := c.resolveToken()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(c.admin, "/")+"/admin/v1/snapshot", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", c.admin, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		err := fmt.Errorf("snapshot: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		if resp.StatusCode == http.StatusUnauthorized {
			return tokenRefused(err, source)
		}
		return err
	}
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %d bytes to %s\n", n, path)
	return nil
}
