package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/snapshot"
	"github.com/memgate/memgate/store"
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
			if err := store.LoadBackup(ctx, filepath.Join(dataDir, "db"), f); err != nil {
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
	body, err := c.download(ctx, "/admin/v1/snapshot", "snapshot")
	if err != nil {
		return err
	}
	defer body.Close()
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, body)
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

// `sidecar snapshot export|import`: the store-neutral snapshot, to move a
// deployment between the embedded Badger store and PostgreSQL.

// snapshotStore is a store a snapshot is exported from or imported into.
type snapshotStore interface {
	memory.Store
	storeapi.KV
	Close() error
}

// storeFlags choose the store as serve does: --store when set, else the
// Badger store under --data-dir.
type storeFlags struct{ dataDir, storeURL string }

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", "memgate-data", "data directory of the embedded Badger store (the sidecar using it must be stopped)")
	fs.StringVar(&f.storeURL, "store", "", "a postgres:// URL instead of the Badger store under --data-dir")
}

// where names the store for messages, without a password.
func (f *storeFlags) where() string {
	if f.storeURL != "" {
		return redactedURL(f.storeURL)
	}
	return "the Badger store in " + f.dataDir
}

// openSnapshotStore opens the store a snapshot command works on: the
// database at storeURL when one is given, else the Badger store under
// dataDir (which must not be in use: Badger locks its directory).
func openSnapshotStore(ctx context.Context, dataDir, storeURL string) (snapshotStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if storeURL != "" {
		if !isPostgresURL(storeURL) {
			return nil, fmt.Errorf("--store %s: want a postgres:// or postgresql:// URL, or no --store for the Badger store under --data-dir", redactedURL(storeURL))
		}
		st, err := pgstore.Open(ctx, pgstore.Options{URL: storeURL, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, fmt.Errorf("--store %s: %w", redactedURL(storeURL), err)
		}
		return st, nil
	}
	dir := filepath.Join(dataDir, "db")
	st, err := store.Open(store.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("%w (a running sidecar holds its store: stop it first)", err)
	}
	return st, nil
}

// hasDatabase reports whether dataDir holds a Badger database.
func hasDatabase(dataDir string) (bool, error) {
	entries, err := os.ReadDir(filepath.Join(dataDir, "db"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return len(entries) > 0, err
}

// storeCommand is a snapshot subcommand working on the store its flags
// choose.
func storeCommand(cl *cliEnv, name, usage, short, long string, exec func(ctx context.Context, f *storeFlags, args []string) error) *ffcli.Command {
	var f storeFlags
	fs := flag.NewFlagSet("sidecar snapshot "+name, flag.ContinueOnError)
	fs.SetOutput(cl.stderr)
	f.register(fs)
	return &ffcli.Command{
		Name: name, ShortUsage: usage, ShortHelp: short, LongHelp: long,
		FlagSet: fs, Options: envOptions,
		Exec: func(ctx context.Context, args []string) error { return exec(ctx, &f, args) },
	}
}

func exportCommand(cl *cliEnv) *ffcli.Command {
	return storeCommand(cl, "export", "sidecar snapshot export [--data-dir DIR | --store URL] <file | ->",
		"write everything a store holds as a store-neutral snapshot (- for stdout)",
		"Reads one consistent view of the store. Embeddings are not exported: they are recomputed\n"+
			"from the records. The Mem0 event log (statuses of past Mem0 add calls) is not exported either.",
		func(ctx context.Context, f *storeFlags, args []string) error {
			if len(args) != 1 {
				return errors.New("give the file to write, or - for stdout")
			}
			if f.storeURL == "" {
				if ok, err := hasDatabase(f.dataDir); err != nil {
					return err
				} else if !ok {
					return fmt.Errorf("no database in %s to export", f.dataDir)
				}
			}
			st, err := openSnapshotStore(ctx, f.dataDir, f.storeURL)
			if err != nil {
				return err
			}
			defer st.Close()
			report := cl.stdout
			n, err := writeFileAtomically(args[0], cl.stdout, func(w io.Writer) (snapshot.Counts, error) {
				return snapshot.Export(ctx, st, w)
			})
			if args[0] == "-" {
				report = cl.stderr // stdout holds the snapshot
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(report, "exported %s from %s\n", n, f.where())
			return nil
		})
}

// writeFileAtomically writes through write to path, or to stdout for "-":
// a file appears whole or not at all.
func writeFileAtomically(path string, stdout io.Writer, write func(io.Writer) (snapshot.Counts, error)) (snapshot.Counts, error) {
	if path == "-" {
		return write(stdout)
	}
	tmp := path + ".partial"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600) // it holds the memory: not world-readable
	if err != nil {
		return snapshot.Counts{}, err
	}
	n, err := write(out)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return snapshot.Counts{}, err
	}
	return n, nil
}

func importCommand(cl *cliEnv) *ffcli.Command {
	return storeCommand(cl, "import", "sidecar snapshot import [--data-dir DIR | --store URL] <file | ->",
		"load a store-neutral snapshot into an empty store (- for stdin)",
		"The store must be empty: a data directory without a database, or a database memgate has\n"+
			"not written to. Ids, statuses, versions, history and the audit log's order are kept.\n"+
			"A Badger import is built aside and moved into place once complete.",
		func(ctx context.Context, f *storeFlags, args []string) error {
			if len(args) != 1 {
				return errors.New("give the snapshot to import, or - for stdin")
			}
			var in io.Reader = cl.stdin
			if args[0] != "-" {
				file, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer file.Close()
				in = file // seekable: checked whole before anything is written
			}
			var n snapshot.Counts
			var err error
			if f.storeURL != "" {
				n, err = importInto(ctx, f.dataDir, f.storeURL, in)
			} else {
				n, err = importIntoDataDir(ctx, f.dataDir, in)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "imported %s into %s\n", n, f.where())
			return nil
		})
}

func importInto(ctx context.Context, dataDir, storeURL string, in io.Reader) (snapshot.Counts, error) {
	st, err := openSnapshotStore(ctx, dataDir, storeURL)
	if err != nil {
		return snapshot.Counts{}, err
	}
	n, err := snapshot.Import(ctx, st, st, in)
	if errors.Is(err, snapshot.ErrPartialImport) && storeURL != "" {
		err = fmt.Errorf("%w: drop and recreate the database, then import again", err)
	}
	// A database filled at once has no statistics until autovacuum comes:
	// its scans would be planned as if its tables were empty.
	if a, ok := st.(interface{ Analyze(context.Context) error }); ok && err == nil {
		err = a.Analyze(ctx)
	}
	return n, errors.Join(err, st.Close())
}

// importIntoDataDir builds the Badger store in a directory beside its
// place and renames it into place once the import checked out, so a failed
// or interrupted import leaves no database a sidecar would start on.
func importIntoDataDir(ctx context.Context, dataDir string, in io.Reader) (snapshot.Counts, error) {
	if ok, err := hasDatabase(dataDir); err != nil {
		return snapshot.Counts{}, err
	} else if ok {
		return snapshot.Counts{}, fmt.Errorf("%s already holds a database: import into an empty data directory", dataDir)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return snapshot.Counts{}, err
	}
	staging, err := os.MkdirTemp(dataDir, ".import-")
	if err != nil {
		return snapshot.Counts{}, err
	}
	defer os.RemoveAll(staging)
	n, err := importInto(ctx, staging, "", in)
	if errors.Is(err, snapshot.ErrPartialImport) {
		// The staged database goes with staging.
		return snapshot.Counts{}, fmt.Errorf("%w; it was: %s holds no database", err, dataDir)
	} else if err != nil {
		return snapshot.Counts{}, err
	}
	if err := os.Rename(filepath.Join(staging, "db"), filepath.Join(dataDir, "db")); err != nil {
		return snapshot.Counts{}, fmt.Errorf("move the imported database into place: %w", err)
	}
	// The rename is durable once the directory holding it is synced.
	dir, err := os.Open(dataDir)
	if err == nil {
		err = errors.Join(dir.Sync(), dir.Close())
	}
	if err != nil {
		return snapshot.Counts{}, fmt.Errorf("sync %s: %w", dataDir, err)
	}
	return n, nil
}
