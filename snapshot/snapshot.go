// Package snapshot takes and moves whole-store backups. Rollback points of
// single facts live with the records (memory, store); a snapshot is the
// operator's copy of everything, for disaster recovery or moving a sidecar.
//
// Two kinds: Save writes a store's own backup format (the Badger store's,
// which store.LoadBackup restores), and Export and Import write and read
// the store-neutral stream (portable.go) that moves a deployment between
// stores. The package reads stores only through memory.Store and the
// contract of memory/storeapi.
package snapshot

import (
	"context"
	"io"
)

// Backuper is a store that writes a full backup of itself in its own
// format (*store.Store: Badger's).
type Backuper interface {
	Backup(w io.Writer) error
}

// Save writes a consistent full backup of the open store to w.
func Save(ctx context.Context, st Backuper, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return st.Backup(w)
}
