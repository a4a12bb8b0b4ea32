package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Compact makes what was overwritten or deleted leave the disk, for an
// erasure: Badger keeps old versions in its logs and tables until it
// compacts them, which it does when it sees fit. Through Badger's public
// API only:
//
//   - the memtables are flushed to a table and their write-ahead logs
//     removed: DropPrefix of a prefix of memgate's own does that (Badger
//     has no other public flush while open), after a key is written under
//     it, since DropPrefix does nothing for a prefix without keys;
//   - Flatten compacts every table into the last level, dropping the
//     versions no reader can see (every old version, with no transaction
//     open from before the erasure) and the deleted keys;
//   - value-log GC rewrites every value log file it can until none is
//     left to rewrite.
//
// What it cannot reach: the value log file Badger is appending to, which
// GC never rewrites, and which holds the values of 1 MiB or more
// (valueThreshold) written since the store was opened. Records, events,
// rollback points and notifications never are (their fields are bounded:
// TestTheLargestWritesFitOneTransaction); a Mem0 event log entry of a
// request body within a few KiB of the 1 MiB bound, or the guard's state
// of a guarded file near its 1 MiB cap, can be. SECURITY.md says so.
// Writes wait while the memtables are flushed.
func (s *Store) Compact(ctx context.Context) error {
	if err := s.setDurable(ctx, compactFlushKey, []byte{1}); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := s.db.DropPrefix(compactFlushPrefix); err != nil {
		return fmt.Errorf("store: compact: flush the memtables: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.db.Flatten(2); err != nil {
		return fmt.Errorf("store: compact: flatten: %w", err)
	}
	for ctx.Err() == nil {
		err := s.db.RunValueLogGC(0.01)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		} else if err != nil {
			return fmt.Errorf("store: compact: value log GC: %w", err)
		}
	}
	return ctx.Err()
}

var (
	compactFlushPrefix = []byte("memgate-compact/")
	compactFlushKey    = []byte("memgate-compact/flush")
)
