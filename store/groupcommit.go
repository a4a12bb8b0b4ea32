package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
type groupCommit struct {
	flush func() error

	mu                sync.Mutex
	cond              *sync.Cond
	started, finished uint64 // sync generations
	failed            uint64 // the last generation whose sync failed
	err               error
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
	for g.finished < need {
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
		if err != nil {
			g.failed, g.err = gen, err
		}
		g.cond.Broadcast()
	}
	if g.failed >= need {
		// A later sync may have succeeded, but after a failed fsync the
		// kernel may have dropped the dirty pages: the commit is not safe.
		return g.err
	}
	return nil
}

// logSyncer fsyncs Badger's logs when Badger itself does not (SyncWrites
// off): the memtable's write-ahead log (NNNNN.mem), which every commit
// writes, and the value log (NNNNNN.vlog), which only values of
// valueThreshold bytes or more reach. It follows rotations: a log Badger
// rotated since the last sync (the memtable went to be flushed, the value
// log filled up) is synced too, as Badger syncs rotated logs only in
// SyncWrites mode. A sync of a clean file still costs a disk cache flush,
// so the value log is synced only when something may have reached it.
type logSyncer struct {
	dir       string
	mem, vlog logFile
	vlogDirty atomic.Bool
}

type logFile struct {
	ext   string // ".mem" or ".vlog"
	width int    // digits of the file id in the name
	fid   int    // newest file known (-1: none yet)
	f     *os.File
}

func newLogSyncer(dir string) (*logSyncer, error) {
	s := &logSyncer{dir: dir, mem: logFile{ext: ".mem", width: 5, fid: -1}, vlog: logFile{ext: ".vlog", width: 6, fid: -1}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("group commit: %w", err)
	}
	for _, e := range entries {
		for _, lf := range []*logFile{&s.mem, &s.vlog} {
			name, ok := strings.CutSuffix(e.Name(), lf.ext)
			if !ok {
				continue
			}
			if fid, err := strconv.Atoi(name); err == nil && fid > lf.fid {
				lf.fid = fid
			}
		}
	}
	for _, lf := range []*logFile{&s.mem, &s.vlog} {
		if lf.fid >= 0 {
			if lf.f, err = os.Open(lf.path(dir, lf.fid)); err != nil {
				s.close()
				return nil, fmt.Errorf("group commit: %w", err)
			}
		}
	}
	return s, nil
}

func (lf *logFile) path(dir string, fid int) string {
	return filepath.Join(dir, fmt.Sprintf("%0*d%s", lf.width, fid, lf.ext))
}

// markVlog notes that a value may have gone to the value log.
func (s *logSyncer) markVlog() { s.vlogDirty.Store(true) }

// sync makes everything committed before it durable. Only one runs at a
// time (groupCommit sees to it).
func (s *logSyncer) sync() error {
	vlog := s.vlogDirty.Swap(false) // before syncing: a later mark is for the next sync
	if err := s.syncLog(&s.mem); err != nil {
		return err
	}
	if vlog {
		if err := s.syncLog(&s.vlog); err != nil {
			s.vlogDirty.Store(true)
			return err
		}
	}
	return nil
}

// syncLog fsyncs the newest known file of a log, then any newer ones a
// rotation created, keeping the newest open. A rotated file may already be
// deleted (flushed to a table): syncing the open handle is still right.
func (s *logSyncer) syncLog(lf *logFile) error {
	if lf.f != nil {
		if err := fdatasync(lf.f); err != nil {
			return fmt.Errorf("group commit: sync %s: %w", lf.f.Name(), err)
		}
	}
	rotated := false
	for {
		next, err := os.Open(lf.path(s.dir, lf.fid+1))
		if errors.Is(err, os.ErrNotExist) {
			break
		} else if err != nil {
			return fmt.Errorf("group commit: %w", err)
		}
		if err := fdatasync(next); err != nil {
			next.Close()
			return fmt.Errorf("group commit: sync %s: %w", next.Name(), err)
		}
		if lf.f != nil {
			lf.f.Close()
		}
		lf.f, lf.fid, rotated = next, lf.fid+1, true
	}
	if rotated {
		return syncDir(s.dir) // the new file's directory entry
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("group commit: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("group commit: sync %s: %w", dir, err)
	}
	return nil
}

func (s *logSyncer) close() error {
	var errs []error
	for _, lf := range []*logFile{&s.mem, &s.vlog} {
		if lf.f != nil {
			errs = append(errs, lf.f.Close())
			lf.f = nil
		}
	}
	return errors.Join(errs...)
}
