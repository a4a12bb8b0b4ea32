package store

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
)

// A full disk must be an error, not a crash. Badger writes its write-ahead
// log (NNNNN.mem), its value log and every table it flushes or compacts
// through memory maps of files it sized with ftruncate, which leaves them
// sparse: the filesystem allocates a block only when a page is first
// written, and when it has none left the write raises SIGBUS, which Go
// cannot recover. So the store refuses writes before the filesystem is
// full: it keeps a reserve of free space larger than what Badger may still
// write after the last write memgate admitted.
//
// The reserve (defaultReserve, with the options Open sets):
//
//	flushes     MemTableSize × (NumMemtables + 2)              40 MiB
//	L0 → base   MemTableSize × NumLevelZeroTablesStall
//	            + BaseLevelSize                                74 MiB
//	level       BaseTableSize × (LevelSizeMultiplier + 1)      22 MiB
//	DISCARD     1 MiB                                           1 MiB
//	                                                   total  137 MiB
//
// Flushes: every memtable not yet in a table becomes one of at most its
// size: the one being written (flushed at the latest by Close), the
// NumMemtables queued for the flusher and the one it is flushing. L0 →
// base: a compaction writes its output before it deletes its input; the
// largest rewrites the level-0 tables (at most NumLevelZeroTablesStall,
// where Badger stops taking writes) and the base level they overlap
// (BaseLevelSize). Level: the second compactor may meanwhile rewrite one
// table of a level and the LevelSizeMultiplier tables it overlaps one
// level down. DISCARD: Badger's discard statistics, a sparse 1 MiB map.
// Value-log and write-ahead-log bytes are not in the reserve: each
// transaction is admitted only if what it writes fits above it (admit).
// Options.DiskReserve overrides the figure.
//
// Free space is what statfs reports available to unprivileged users (a
// root process could go further, into the filesystem's own reserve). It
// is read at most every diskCheckInterval, or once diskCheckBytes were
// admitted since the last reading; between readings the guard subtracts
// the bytes it admitted. Refused writes resume when free space is back
// above the reserve plus an eighth of it (hysteresis), without a restart.
//
// The reserve protects Badger from memgate's own writes. Another process
// that fills the filesystem past it can still starve a flush Badger
// already owes, and an operator who sees /readyz report a full disk should
// free space rather than wait.
//
// At Open, a disk already below the reserve opens Badger read-only:
// a read-write open creates a write-ahead log and a value log, replays and
// flushes what an unclean shutdown left behind and may start compactions,
// all through memory maps. The store then stays read-only until a
// restart: Badger cannot switch a read-only database to read-write, and
// reopening it in place would swap the *badger.DB that DB() hands to other
// packages and that the search index's snapshots belong to, under readers
// that hold it; a restart quiesces them all. Badger cannot open read-only a
// database whose write-ahead logs an unclean shutdown left to replay (only
// a read-write open truncates them): Open then fails with a message saying
// so, instead of crashing.

// Options of the guard.
const (
	diskCheckInterval = 200 * time.Millisecond
	diskCheckBytes    = 1 << 20
	discardFileSize   = 1 << 20
	// Bytes a Badger log spends on an entry beyond its key and value (header
	// of at most 22 bytes, the key's 8-byte version, a 4-byte checksum),
	// rounded up, and on the entry ending each transaction.
	entryOverhead = 64
	txnOverhead   = 64
)

// defaultReserve is the free space below which writes are refused, for
// Badger options o (see the comment above).
func defaultReserve(o badger.Options) uint64 {
	flushes := o.MemTableSize * int64(o.NumMemtables+2)
	l0 := o.MemTableSize*int64(o.NumLevelZeroTablesStall) + o.BaseLevelSize
	level := o.BaseTableSize * int64(o.LevelSizeMultiplier+1)
	return uint64(flushes + l0 + level + discardFileSize)
}

// entryBytes estimates what writing key k with a value of n bytes adds to
// Badger's logs when values of threshold bytes or more go to the value log
// (Store.threshold): the write-ahead log then holds the key again with a
// pointer.
func entryBytes(k []byte, n int, threshold int64) int64 {
	b := int64(len(k) + n + entryOverhead)
	if int64(n) >= threshold {
		b += int64(len(k) + entryOverhead)
	}
	return b
}

// diskGuard refuses writes while the filesystem holding the database has
// less free space than its reserve. A nil guard admits everything.
type diskGuard struct {
	dir        string
	free       func(string) (uint64, error)
	reserve    uint64 // below it, writes are refused
	resume     uint64 // refused writes resume from it
	log        *slog.Logger
	readOnly   *memory.Error // the store was opened read-only: every write is refused with it
	start      time.Time
	freeAtOpen uint64

	mu       sync.Mutex    // one reading at a time
	avail    atomic.Uint64 // bytes free at the last reading
	since    atomic.Int64  // bytes admitted and written since the last reading
	inflight atomic.Int64  // bytes admitted, not yet written
	readAt   atomic.Int64  // time of the last reading, since start
	full     atomic.Bool   // writes are refused
	failing  atomic.Bool   // the last reading failed (logged once)
}

// newDiskGuard returns the guard of a store in dir, or nil when the guard
// is off (negative reserve). It takes a first reading; when the free
// space cannot be read it logs it and admits writes until it can.
func newDiskGuard(dir string, reserve uint64, free func(string) (uint64, error), log *slog.Logger) *diskGuard {
	if free == nil {
		free = freeSpace
	}
	g := &diskGuard{dir: dir, free: free, reserve: reserve, resume: reserve + max(reserve/8, 1), log: log, start: time.Now()}
	g.avail.Store(math.MaxUint64 / 2)
	g.refresh(true)
	g.freeAtOpen = g.avail.Load()
	return g
}

// existingDir is dir or its nearest existing parent, for statfs before
// Badger created dir.
func existingDir(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

func (g *diskGuard) clock() int64 { return int64(time.Since(g.start)) }

// stale reports whether the last reading is older than diskCheckInterval.
func (g *diskGuard) stale() bool { return g.clock()-g.readAt.Load() >= int64(diskCheckInterval) }

// owed is what was admitted since the last reading, written or not.
func (g *diskGuard) owed() uint64 { return uint64(max(g.since.Load(), 0) + max(g.inflight.Load(), 0)) }

// refresh reads the free space, unless wait is false and another caller
// is reading it, and updates the state: writes are refused below the
// reserve and resume above g.resume.
func (g *diskGuard) refresh(wait bool) {
	if wait {
		g.mu.Lock()
	} else if !g.mu.TryLock() {
		return
	}
	defer g.mu.Unlock()
	// Bytes written before this load are in the reading; those written
	// after it may be too, and stay counted (a conservative error).
	written := g.since.Load()
	free, err := g.free(g.dir)
	g.readAt.Store(g.clock())
	if err != nil {
		if !g.failing.Swap(true) {
			g.log.Warn("store: cannot read the free disk space; writes are admitted until it can be read", "dir", g.dir, "err", err)
		}
		return
	}
	if g.failing.Swap(false) {
		g.log.Info("store: free disk space readable again", "dir", g.dir)
	}
	g.avail.Store(free)
	g.since.Add(-written)
	owed := g.owed()
	switch full := g.full.Load(); {
	case full && free >= g.resume+owed:
		g.full.Store(false)
		g.log.Info("store: disk space returned, accepting writes again", "dir", g.dir, "free", free, "reserve", g.reserve)
	case !full && free < g.reserve+owed:
		g.setFull()
	}
}

// setFull starts refusing writes; call it holding g.mu.
func (g *diskGuard) setFull() {
	if !g.full.Swap(true) {
		g.log.Error("store: the disk is nearly full, refusing writes until space returns (reads still work)",
			"dir", g.dir, "free", g.avail.Load(), "reserve", g.reserve, "resume", g.resume)
	}
}

// admit reserves n bytes of free space for a write, or refuses it with an
// EINSUFFICIENTSTORAGE error. A caller that was admitted calls done(n)
// once the write is over, written or not.
func (g *diskGuard) admit(n int64) error {
	if g == nil || n <= 0 {
		return nil
	}
	if g.readOnly != nil {
		return g.readOnly
	}
	if g.stale() || g.since.Load() >= diskCheckBytes {
		g.refresh(g.full.Load()) // a refused writer waits for the reading that may let it in
	}
	for fresh := false; ; {
		if g.full.Load() {
			return g.refusal()
		}
		in := g.inflight.Load()
		if g.avail.Load() < g.reserve+g.owed()+uint64(n) {
			if fresh {
				// Too little above the reserve for a write of common size:
				// the disk is full, for every writer, until space returns
				// past the hysteresis. An unusually large write refused
				// alone leaves the door open to smaller ones.
				if n <= diskCheckBytes {
					g.mu.Lock()
					g.setFull()
					g.mu.Unlock()
				}
				return g.refusal()
			}
			// The estimate may lag behind freed space: read it before refusing.
			g.refresh(true)
			fresh = true
			continue
		}
		if g.inflight.CompareAndSwap(in, in+n) {
			return nil
		}
	}
}

// done ends a write admit let in: its bytes are written, or never will be
// (counted anyway, until the next reading).
func (g *diskGuard) done(n int64) {
	if g == nil || n <= 0 || g.readOnly != nil {
		return
	}
	g.since.Add(n)
	g.inflight.Add(-n)
}

// refusal is the error of a write refused for want of space.
func (g *diskGuard) refusal() error {
	return memory.Errorf(memory.EINSUFFICIENTSTORAGE,
		"the disk is full: %s free, memgate keeps %s free so that its database cannot crash; writes resume once %s are free (reads still work)",
		mib(g.avail.Load()), mib(g.reserve), mib(g.resume))
}

// writable reports why writes are refused, after a fresh reading.
func (g *diskGuard) writable() error {
	if g == nil {
		return nil
	}
	if g.readOnly != nil {
		return g.readOnly
	}
	g.refresh(true)
	if g.full.Load() {
		return g.refusal()
	}
	return nil
}

// startedReadOnly is the error of every write to a store Open opened
// read-only on a full disk.
func (g *diskGuard) startedReadOnly() *memory.Error {
	return memory.Errorf(memory.EINSUFFICIENTSTORAGE,
		"started read-only: the disk was full (%s free, memgate needs %s); free space and restart memgate to write again (reads still work)",
		mib(g.freeAtOpen), mib(g.reserve))
}

// openReadOnlyError explains why a read-only open on a full disk failed.
func (g *diskGuard) openReadOnlyError(dir string, err error) error {
	why := "opening it read-only failed"
	// Badger wraps ErrTruncateNeeded into a message: errors.Is cannot see it.
	if errors.Is(err, badger.ErrTruncateNeeded) || strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error()) {
		why = "the database has write-ahead logs of an unclean shutdown, which only a read-write open can replay, and a read-write open on a full disk could crash"
	}
	return fmt.Errorf("store: open %s: the disk is full (%s free, memgate needs %s) and %s: free space and restart: %w",
		dir, mib(g.freeAtOpen), mib(g.reserve), why, err)
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
