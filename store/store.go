package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Options configure a Store.
type Options struct {
	Dir string
	// NoSync relaxes durability: commits return before the write reaches the
	// disk. Acknowledged writes may then be lost on a crash.
	NoSync bool
	// GroupCommit keeps every commit durable but lets concurrent commits
	// share one fsync (see groupCommit) instead of taking one each. Update,
	// Put and PutKey still return only once durable; writes made directly
	// through DB() are then durable only after Sync. After a failed sync
	// every write fails until the store is reopened. NoSync wins over it.
	GroupCommit bool
	// InMemory keeps everything in memory (tests and benchmarks only).
	InMemory bool
	Logger   *slog.Logger
	// MemTableSize bounds one memtable; Badger's default (64 MB, five of
	// them) is sized for a database server, not a sidecar. Under 7 MiB it
	// also lowers the value threshold (thresholdFor): tests only.
	MemTableSize int64
	// BlockCacheSize bounds the block cache (Badger's default: 256 MB).
	BlockCacheSize int64
	// DiskReserve is the free space, in bytes, below which the store refuses
	// writes (memory.EINSUFFICIENTSTORAGE) so that Badger never finds the
	// disk full (diskguard.go): 0 derives it from the memtable and
	// compaction options (137 MiB with the defaults), negative turns the
	// guard off. A disk below it at Open opens the store read-only.
	DiskReserve int64
	// FreeSpace reports the bytes free on the filesystem holding dir (nil:
	// statfs). Tests inject a fake to simulate a full disk.
	FreeSpace func(dir string) (uint64, error)
}

// Store is a Badger-backed memory.Store.
type Store struct {
	db  *badger.DB
	log *slog.Logger
	// In group commit mode: the syncer of Badger's logs and the group
	// that shares its syncs; both nil otherwise.
	logs  *logSyncer
	group *groupCommit
	// feeds hear of each commit's changes to the index of active
	// records (feed.go); gate lines those commits up with aligned
	// snapshots, and guards feeds.
	feeds []storeapi.ActiveFeed
	gate  commitGate
	// guard refuses writes while the disk is nearly full (nil: off).
	guard *diskGuard
	dir   string // the database's directory; "" in memory
	// threshold is the value size from which Badger keeps a value in its
	// value log (thresholdFor).
	threshold int64
	// chainMu serialises commits that append audit events; head is the
	// audit chain's newest event (chain.go).
	chainMu sync.Mutex
	head    memory.ChainHead
}

var _ memory.Store = (*Store)(nil)

// Open opens (creating if needed) the database in o.Dir.
func Open(o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MemTableSize <= 0 {
		o.MemTableSize = 8 << 20
	}
	if o.BlockCacheSize <= 0 {
		o.BlockCacheSize = 8 << 20
	}
	if o.Dir == "" && !o.InMemory {
		return nil, errors.New("store: a data directory is required")
	}
	group := o.GroupCommit && !o.NoSync && !o.InMemory
	opts := badger.DefaultOptions(o.Dir).
		WithInMemory(o.InMemory).
		WithSyncWrites(!o.NoSync && !group).
		WithLogger(badgerLogger{o.Logger}).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(3).
		WithNumLevelZeroTables(3).
		WithNumLevelZeroTablesStall(8).
		WithBlockCacheSize(o.BlockCacheSize).
		WithIndexCacheSize(4 << 20).
		WithBlockSize(blockSize).
		WithValueLogFileSize(64 << 20).
		WithValueThreshold(thresholdFor(o.MemTableSize)).
		WithNumCompactors(2).
		WithCompactL0OnClose(false)
	// Before Badger touches anything: on a disk below the reserve, only a
	// read-only open is safe (diskguard.go).
	var guard *diskGuard
	if !o.InMemory && o.DiskReserve >= 0 {
		reserve := uint64(o.DiskReserve)
		if reserve == 0 {
			reserve = defaultReserve(opts)
		}
		guard = newDiskGuard(o.Dir, reserve, o.FreeSpace, o.Logger)
		if guard.full.Load() {
			guard.readOnly = guard.startedReadOnly()
			opts = opts.WithReadOnly(true)
			o.Logger.Error("store: the disk is full: opening the database read-only; writes are refused until space is freed and memgate restarts",
				"dir", o.Dir, "free", guard.freeAtOpen, "reserve", reserve)
		}
	}
	db, err := badger.Open(opts)
	if err != nil {
		if guard != nil && guard.readOnly != nil {
			return nil, guard.openReadOnlyError(o.Dir, err)
		}
		return nil, fmt.Errorf("store: open %s: %w", o.Dir, err)
	}
	s := &Store{db: db, log: o.Logger, guard: guard, threshold: opts.ValueThreshold}
	if !o.InMemory {
		s.dir = o.Dir
	}
	if group && !opts.ReadOnly {
		if s.logs, err = newLogSyncer(db, o.Dir); err != nil {
			db.Close()
			return nil, err
		}
		s.group = newGroupCommit(s.logs.sync)
	}
	if err := s.openChain(opts.ReadOnly); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// valueThreshold is the value size from which Badger keeps a value in its
// value log rather than in the tree: Badger's largest (1 MiB, what its
// LSMOnlyOptions set). Below it a value lives in the memtable's write-ahead
// log and then in the tree's tables, which Compact rewrites (compact.go);
// the value log file Badger is appending to is beyond its reach, so what
// an erasure removes must never have been there. Every value memgate keeps
// is smaller but for a Mem0 event log entry of a request body near the
// 1 MiB bound and the guard's state of a Markdown file near its own 1 MiB
// bound (SECURITY.md says so).
//
// The cost: a transaction's values count in full against Badger's bound on
// a transaction (15% of a memtable, 1.2 MiB with the 8 MiB default) where
// a value-log pointer counted 14 bytes; the largest governed write fits
// with room to spare (TestTheLargestWritesFitOneTransaction), and bulk
// writes split a batch Badger finds too big. Badger refuses a threshold
// above that bound, so a memtable under 7 MiB (tests that want small
// ones) lowers the threshold to it (thresholdFor).
const valueThreshold = 1 << 20

// thresholdFor is the value threshold Open sets for memtables of the
// given size: valueThreshold, or less when Badger's bound on a
// transaction (15% of a memtable) is less.
func thresholdFor(memTableSize int64) int64 {
	return min(valueThreshold, 15*memTableSize/100)
}

// blockSize is the size of a table's blocks before compression: 16 KB,
// not Badger's 4 KB. A table's index holds an entry per block, and Badger
// reads every table's index through its memory map when it opens the table,
// so those pages stay resident: with a million records, 4 KB blocks kept
// 41 MB of block offsets mapped (49 MB of index in all), 16 KB blocks keep
// 10 MB (18 MB). A read of a record still maps the same 64 KB of the file
// around it (the kernel's fault-around), and the block cache still holds 8
// MB. Tables already on disk keep the block size they were written with
// until compaction rewrites them.
const blockSize = 16 << 10

// Sync makes everything committed so far durable, including writes made
// directly through DB(). Update, Put and PutKey are durable on their own.
func (s *Store) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.group == nil {
		return nil // Badger syncs each commit itself, or nothing is synced
	}
	return s.durable()
}

// durable waits until what the caller committed is on disk.
func (s *Store) durable() error {
	if s.group == nil {
		return nil
	}
	if err := s.group.wait(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Close flushes and closes the database.
func (s *Store) Close() error {
	err := s.db.Close() // flushes and syncs everything
	if s.logs != nil {
		err = errors.Join(err, s.logs.close())
	}
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Writable reports why writes are refused, or nil when they are admitted:
// the disk is nearly full (they resume by themselves once space returns),
// or the store was opened read-only on a full disk (they need space and a
// restart). It reads the free space afresh; /readyz can call it. Reads
// work either way.
func (s *Store) Writable() error { return s.guard.writable() }

// DB exposes the Badger handle for reads and backups (snapshot, the Mem0
// event log). Write through Update, Put or PutKey instead: in group commit
// mode a write made directly through DB() is durable only after Sync.
func (s *Store) DB() *badger.DB { return s.db }

// maxAttempts bounds retries of a conflicting transaction. The governor
// serializes writers of one slot, so conflicts are rare and short-lived.
const maxAttempts = 64

// Update runs fn in a read-write transaction, retrying it when Badger
// reports a conflict with a concurrent transaction, and returns once the
// transaction is durable.
func (s *Store) Update(ctx context.Context, fn func(memory.Tx) error) error {
	if err := s.update(ctx, fn); err != nil {
		return err
	}
	return s.durable()
}

// UpdateThenSync is Update returning as soon as the transaction has
// committed, with sync, which returns once it is durable (memory.
// SyncDeferrer). In group commit mode sync waits for a shared fsync; with
// SyncWrites the commit itself was synced, and sync returns at once.
func (s *Store) UpdateThenSync(ctx context.Context, fn func(memory.Tx) error) (sync func() error, err error) {
	if err := s.update(ctx, fn); err != nil {
		return nil, err
	}
	return s.durable, nil
}

var _ memory.SyncDeferrer = (*Store)(nil)

// update runs fn in a transaction and commits it, retrying on conflicts.
func (s *Store) update(ctx context.Context, fn func(memory.Tx) error) error {
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store: update: %w", err)
		}
		txn := s.db.NewTransaction(true)
		t := &tx{txn: txn, db: s.db, threshold: s.threshold}
		err := fn(t)
		if err == nil {
			// Admitted by the disk guard, or refused before Badger writes.
			if err = s.guard.admit(t.bytes); err == nil {
				err = s.commit(t)
				s.guard.done(t.bytes)
			}
		}
		txn.Discard()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, badger.ErrConflict) && attempt < maxAttempts:
			time.Sleep(time.Duration(rand.IntN(50*attempt)) * time.Microsecond)
			continue
		case errors.Is(err, badger.ErrBlockedWrites):
			// Compact is flushing the memtables (an erasure): wait for it.
			if werr := waitUnblocked(ctx, attempt); werr != nil {
				return fmt.Errorf("store: update: %w", err)
			}
			continue
		case errors.Is(err, badger.ErrTxnTooBig):
			return fmt.Errorf("store: %w: %w", memory.ErrTxnTooBig, err)
		case errors.Is(err, badger.ErrReadOnlyTxn) && s.guard != nil && s.guard.readOnly != nil:
			return s.guard.readOnly // opened read-only: Badger refused the first set
		}
		var de *memory.Error
		if errors.As(err, &de) {
			return err // a domain answer, not a storage failure
		}
		return fmt.Errorf("store: update: %w", err)
	}
}

// View runs fn in a read-only snapshot.
func (s *Store) View(ctx context.Context, fn func(memory.ReadTx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: view: %w", err)
	}
	return s.db.View(func(txn *badger.Txn) error {
		return fn(&tx{txn: txn, db: s.db, readOnly: true})
	})
}

// blockedWait bounds how long a write waits for Compact's memtable flush,
// which blocks Badger's writes, before it fails.
const blockedWait = 30 * time.Second

// waitUnblocked sleeps before the next attempt of a write Badger refused
// with ErrBlockedWrites; an error when the wait is over.
func waitUnblocked(ctx context.Context, attempt int) error {
	if time.Duration(attempt)*2*time.Millisecond > blockedWait {
		return errors.New("writes stayed blocked")
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Millisecond):
		return nil
	}
}

type badgerLogger struct{ l *slog.Logger }

// Badger is chatty at info level (compactions, flushes): those go to debug.
func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Infof(f string, a ...any) {
	b.l.Debug(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Debugf(f string, a ...any) {}
