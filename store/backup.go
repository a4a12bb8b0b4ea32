package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Backups in Badger's own format: Backup writes one from an open store,
// LoadBackup restores one into an empty data directory. They move a
// Badger store whole; the store-neutral stream that moves a deployment
// between stores is package snapshot's Export and Import.

// Backup writes a full backup of the database to w (Badger's backup format).
func (s *Store) Backup(w io.Writer) error {
	if _, err := s.db.Backup(w, 0); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// LoadBackup restores a backup Backup wrote into dir, a data directory
// that holds no database yet; it refuses to merge into existing data.
func LoadBackup(ctx context.Context, dir string, r io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("snapshot: %s already holds a database; load into an empty data directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	st, err := Open(Options{Dir: dir})
	if err != nil {
		return err
	}
	if err := st.DB().Load(r, 256); err != nil {
		st.Close()
		return fmt.Errorf("snapshot: load: %w", err)
	}
	return st.Close()
}
