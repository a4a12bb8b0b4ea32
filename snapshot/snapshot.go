// Package snapshot takes and loads whole-store backups. Rollback points of
// single facts live with the records (memory, store); a snapshot is the
// operator's copy of everything, for disaster recovery or moving a sidecar.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/memgate/memgate/store"
)

// Save writes a consistent full backup of the open store to w.
func Save(ctx context.Context, st *store.Store, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return st.Backup(w)
}

// Load restores a backup into a data directory that holds no database yet;
// it refuses to merge into existing data.
func Load(ctx context.Context, dbDir string, r io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if entries, err := os.ReadDir(dbDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("snapshot: %s already holds a database; load into an empty data directory", dbDir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dbDir), 0o700); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	st, err := store.Open(store.Options{Dir: dbDir})
	if err != nil {
		return err
	}
	if err := st.DB().Load(r, 256); err != nil {
		st.Close()
		return fmt.Errorf("snapshot: load: %w", err)
	}
	return st.Close()
}
