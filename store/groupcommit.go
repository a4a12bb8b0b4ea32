package store

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// groupCommit makes commits durable in groups. With Badger's SyncWrites
// every transaction waits for an fsync of its own, taken one after the
// other by Badger's single writer goroutine, so concurrent writers queue
// behind each other's fsyncs and throughput stays at one commit per fsync.
// In group commit mode Badger commits without syncing and each committer
// then waits for a sync that started after its commit returned: one fsync
// makes every commit before it durable, so concurrent writers share it.
//
// A commit is visible to readers before it is durable (before its writer
// hears back). A transaction that reads it commits after it, into the same
// log, so the sync that acknowledges the reader covers the write it read.
//
// A failed sync fails every wait from then on, not only the waiters whose
// sync it was: a commit written before the failed sync may have had its
// pages written back (and lost) by it although its own waiter is waiting
// for a later sync, and after a failed fsync the kernel may have marked
// those pages clean, so a later sync would succeed without them. What is
// on disk is known again only after a reopen replays the logs.
type groupCommit struct {
	flush func() error

	mu                sync.Mutex
	cond              *sync.Cond
	started, finished uint64 // sync generations
	err               error  // the first failed sync's; sticky
}

func newGroupCommit(flush func() error) *groupCommit {
	g := &groupCommit{flush: flush}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// wait returns once a sync that started after the call has finished: what
// the caller committed before calling is then durable. One caller runs the
// sync; the others wait for it.
func (g *groupCommit) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	need := g.started + 1 // a sync running now may have started before our commit
	for g.finished < need && g.err == nil {
		if g.started > g.finished {
			g.cond.Wait()
			continue
		}
		g.started++
		gen := g.started
		g.mu.Unlock()
		err := g.flush()
		g.mu.Lock()
		g.finished = gen
		if err != nil && g.err == nil {
			g.err = err
		}
		g.cond.Broadcast()
	}
	return g.err
}

// logSyncer makes what Badger committed without SyncWrites durable, through
// Badger's public API and the operating system's, knowing nothing of the
// files Badger keeps in its directory.
//
// DB.Sync syncs the memtable's write-ahead log that Badger is writing now
// and the value log file it is writing now. That is every commit made since
// those files were created; a commit made before lives in a log Badger has
// since rotated, which DB.Sync does not sync:
//
//   - a full memtable goes to be flushed and a new one, with a new log,
//     takes its place. Without SyncWrites nothing syncs the old log; the
//     memtable's table is synced when the flush writes it, but until then a
//     power loss loses the old log's unsynced tail, and a reopen replays
//     the log. A commit can return before a later commit rotates the
//     memtable and have its sync start after that: DB.Sync then syncs the
//     new log only.
//   - a full value log file is synced when Badger closes it for writing
//     (it truncates it, and truncating syncs first) before the new file
//     becomes the one DB.Sync syncs, so a rotation of the value log loses
//     nothing; the argument below covers it anyway.
//
// A rotation creates a file in the directory: the new log. So after DB.Sync
// the syncer lists the directory, and when a name appeared since the last
// sync's listing it syncs the whole filesystem (syncfs), which covers the
// rotated logs whatever their names, and the new files' directory entries,
// which Badger syncs in neither mode. If a commit's log was rotated before
// the sync that acknowledges it read the current log, the new log was
// created after the commit and before that sync's listing: either that
// listing is the first to show it, and this sync is full, or an earlier
// sync's listing showed it first, was full, and started its syncfs after
// the rotation and so after the commit (if that syncfs failed, every wait
// fails, see groupCommit). Badger never reuses a file's name, so a new log
// is a name no listing showed before. Table files appear with flushes and
// compactions too, which costs an extra syncfs now and then, not a miss; a
// file that goes away needs nothing.
//
// The first sync is full: the logs an unclean shutdown left may be
// replayed from dirty pages nothing has synced yet.
//
// This is the guarantee SyncWrites gives, where Badger syncs each commit's
// log before the commit returns, and a little more (the directory). A
// syncfs also flushes other files' dirty data on the same filesystem,
// which a rotation then waits for; DB.Sync, the common case, does not.
// DB.Sync syncs the value log even when nothing reached it, a second cache
// flush per sync: no public call syncs the memtable's log alone.
type logSyncer struct {
	db  *badger.DB
	dir *os.File // open for the store's life: syncfs reports write-back errors since it was opened
	// full syncs the filesystem holding dir (a field so tests can count).
	full  func() error
	names []string // the directory's entries at the last sync; nil before the first and after a failed one
}

func newLogSyncer(db *badger.DB, dir string) (*logSyncer, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("group commit: %w", err)
	}
	s := &logSyncer{db: db, dir: d}
	s.full = func() error { return syncFS(s.dir) }
	return s, nil
}

// sync makes everything committed before it durable. Only one runs at a
// time (groupCommit sees to it).
func (s *logSyncer) sync() error {
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("group commit: sync: %w", err)
	}
	names, err := s.list()
	if err != nil {
		return fmt.Errorf("group commit: list %s: %w", s.dir.Name(), err)
	}
	slices.Sort(names)
	appeared := s.names == nil || slices.ContainsFunc(names, func(n string) bool {
		_, found := slices.BinarySearch(s.names, n)
		return !found
	})
	s.names = nil // until this sync succeeds, the next one is full
	if appeared {
		if err := s.full(); err != nil {
			return fmt.Errorf("group commit: sync %s: %w", s.dir.Name(), err)
		}
	}
	s.names = names
	return nil
}

// list reads the directory's names from the start, through the handle
// kept open.
func (s *logSyncer) list() ([]string, error) {
	if _, err := s.dir.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return s.dir.Readdirnames(-1)
}

func (s *logSyncer) close() error { return s.dir.Close() }
