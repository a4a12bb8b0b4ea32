package guard

// Guarded files are opened beneath their workspace without following a
// symlink (issue 30, point 3).
//
// The workspace directory is the operator's choice: it is opened once,
// when the guard is made, following whatever symlinks its path holds, and
// kept open. Everything below it is the agent's, so every path under it is
// opened relative to that descriptor and never through a symlink: with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) where the kernel has it
// (Linux 5.6), else one component at a time, each directory opened with
// O_NOFOLLOW|O_DIRECTORY relative to its parent's descriptor. What is
// opened must then be a regular file with one link (a hard link could be a
// file from elsewhere, the admin token say) and no larger than the cap.
// A FIFO is opened non-blocking, so it cannot stall the guard.
//
// Writes happen in the directory descriptor so opened: a temporary file
// made there with O_CREAT|O_EXCL|O_NOFOLLOW, renamed over the file in that
// directory (renameat2 RENAME_EXCHANGE where the filesystem has it, which
// hands back whatever the rename displaced; see replaceBeneath).

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Refusal reasons: the reason label of memgate_guard_errors_total, and
// what Guard.Refused reports.
const (
	ReasonSymlink    = "symlink"          // a symlink at or above the file, below the workspace
	ReasonNotRegular = "not_regular"      // a FIFO, socket, device or directory under a guarded name
	ReasonHardLink   = "hard_link"        // a regular file with more than one link
	ReasonTooLarge   = "too_large"        // over Options.MaxFileBytes
	ReasonTooMany    = "too_many_entries" // over Options.MaxEntries
)

// refusal is why the guard will not read or write a path.
type refusal struct {
	reason string
	detail string
}

func (r *refusal) Error() string { return r.detail }

func refuse(reason, format string, a ...any) error {
	return &refusal{reason: reason, detail: fmt.Sprintf(format, a...)}
}

// asRefusal returns the refusal err is or wraps.
func asRefusal(err error) (*refusal, bool) {
	var r *refusal
	ok := errors.As(err, &r)
	return r, ok
}

// errNotExist marks a path that does not exist beneath the workspace (also
// when a directory on the way is a regular file).
var errNotExist = fs.ErrNotExist

// splitRel checks a slash-separated path below a workspace and returns its
// components: none may be empty, "." or "..".
func splitRel(rel string) ([]string, error) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsRune(p, 0) {
			return nil, fmt.Errorf("guard: %q is not a path below the workspace", rel)
		}
	}
	return parts, nil
}

// ignoringEINTR retries a system call interrupted by a signal.
func ignoringEINTR[T any](fn func() (T, error)) (T, error) {
	for {
		v, err := fn()
		if err != unix.EINTR {
			return v, err
		}
	}
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	return ignoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags|unix.O_CLOEXEC, mode) })
}

// useOpenat2 is cleared when the kernel lacks openat2 (and by tests, to
// run the component walk).
var useOpenat2 = true

// openBeneath opens rel below the directory dirfd without following a
// symlink anywhere on the way, the last component included. Errors: a
// refusal (ReasonSymlink) for a symlink or a path that would leave dirfd,
// an error wrapping fs.ErrNotExist when rel does not exist.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	parts, err := splitRel(rel)
	if err != nil {
		return -1, err
	}
	flags |= unix.O_NOFOLLOW
	if useOpenat2 {
		fd, err, tried := openat2Beneath(dirfd, rel, flags)
		// ENOTDIR: a symlink or a file on the way; the walk tells which.
		if tried && !errors.Is(err, unix.ENOTDIR) {
			if err != nil {
				return -1, classify(err, rel, -1, "")
			}
			return fd, nil
		}
	}
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for i, part := range parts {
		last := i == len(parts)-1
		fl := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW
		if last {
			fl = flags
		}
		fd, err := openat(cur, part, fl, 0)
		if err != nil {
			return -1, classify(err, strings.Join(parts[:i+1], "/"), cur, part)
		}
		if last {
			return fd, nil
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = fd
	}
	panic("unreachable")
}

// classify turns an open's errno into the guard's errors. dirfd and name,
// when given, let ENOTDIR tell a symlink (O_NOFOLLOW|O_DIRECTORY meets one
// with ENOTDIR) from a regular file on the way.
func classify(err error, rel string, dirfd int, name string) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return refuse(ReasonSymlink, "%s: a symlink (or a path out of the workspace) on the way; the guard follows none", rel)
	case errors.Is(err, unix.ENOTDIR):
		if name != "" {
			var st unix.Stat_t
			if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return refuse(ReasonSymlink, "%s is a symlink; the guard follows none", rel)
			}
		}
		return &fs.PathError{Op: "open", Path: rel, Err: errNotExist}
	case errors.Is(err, unix.ENXIO):
		// A socket opened as a file; O_NONBLOCK FIFOs open fine.
		return refuse(ReasonNotRegular, "%s is not a regular file", rel)
	}
	return &fs.PathError{Op: "open", Path: rel, Err: err}
}

// openDirBeneath opens the directory rel below dirfd ("" for dirfd itself,
// duplicated), creating missing components when create is set.
func openDirBeneath(dirfd int, rel string, create bool) (int, error) {
	if rel == "" {
		return ignoringEINTR(func() (int, error) { return unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0) })
	}
	fd, err := openBeneath(dirfd, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == nil || !create || !errors.Is(err, fs.ErrNotExist) {
		return fd, err
	}
	// One component at a time, making each that is missing.
	parts, _ := splitRel(rel)
	cur, err := openDirBeneath(dirfd, "", false)
	if err != nil {
		return -1, err
	}
	for i, part := range parts {
		if err := unix.Mkdirat(cur, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(cur)
			return -1, fmt.Errorf("guard: making %s: %w", strings.Join(parts[:i+1], "/"), err)
		}
		next, err := openat(cur, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			err = classify(err, strings.Join(parts[:i+1], "/"), cur, part)
		}
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// fileSnap is a guarded file as the guard read it. Its file stays open: a
// write that lands in it after the read (by a tool that opened the file
// before the guard replaced it) is still seen (replaceBeneath).
type fileSnap struct {
	f        *os.File // nil: the file did not exist
	data     []byte
	dev, ino uint64
	perm     uint32
	uid, gid uint32
}

func (s *fileSnap) exists() bool { return s != nil && s.f != nil }

func (s *fileSnap) close() {
	if s != nil && s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// same reports whether st is the file s was read from.
func (s *fileSnap) same(st *unix.Stat_t) bool {
	return s.exists() && uint64(st.Dev) == s.dev && uint64(st.Ino) == s.ino
}

// readOpen reads a file opened beneath the workspace: a regular file of one
// link, at most max bytes (max+1 are read at most, whatever fstat said).
// It takes fd, which it closes on error.
func readOpen(fd int, rel string, max int64) (*fileSnap, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("guard: stat %s: %w", rel, err)
	}
	if err := checkRegular(&st, rel, max); err != nil {
		unix.Close(fd)
		return nil, err
	}
	_ = unix.SetNonblock(fd, false) // a regular file: O_NONBLOCK only kept a FIFO from blocking the open
	f := os.NewFile(uintptr(fd), rel)
	data, err := preadAll(f, rel, max)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileSnap{f: f, data: data, dev: uint64(st.Dev), ino: uint64(st.Ino),
		perm: uint32(st.Mode) & 0o7777, uid: st.Uid, gid: st.Gid}, nil
}

func checkRegular(st *unix.Stat_t, rel string, max int64) error {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return refuse(ReasonNotRegular, "%s is not a regular file (%s)", rel, fileKind(uint32(st.Mode)))
	case uint64(st.Nlink) > 1:
		return refuse(ReasonHardLink, "%s has %d links; a hard link may be a file from outside the workspace", rel, st.Nlink)
	case st.Size > max:
		return refuse(ReasonTooLarge, "%s is %d bytes, over the guard's cap of %d", rel, st.Size, max)
	}
	return nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a file"
}

// preadAll reads f from its start: at most max+1 bytes, since a file may
// grow after fstat.
func preadAll(f *os.File, rel string, max int64) ([]byte, error) {
	limit := max + 1
	buf := make([]byte, 0, min(limit, 64<<10))
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = append(make([]byte, 0, min(2*int64(cap(buf)), limit)), buf...)
		}
		n, err := f.ReadAt(buf[len(buf):cap(buf)], int64(len(buf)))
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("guard: read %s: %w", rel, err)
		}
	}
	if int64(len(buf)) > max {
		return nil, refuse(ReasonTooLarge, "%s is over the guard's cap of %d bytes", rel, max)
	}
	return buf, nil
}

// readBeneath reads rel below the directory dirfd (see readOpen). A file
// that does not exist is a snapshot without a file.
func readBeneath(dirfd int, rel string, max int64) (*fileSnap, error) {
	fd, err := openBeneath(dirfd, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if errors.Is(err, fs.ErrNotExist) {
		return &fileSnap{}, nil
	} else if err != nil {
		return nil, err
	}
	return readOpen(fd, rel, max)
}

// lstatBeneath stats rel below dirfd without following it. Errors: a
// refusal for a symlink on the way, fs.ErrNotExist.
func lstatBeneath(dirfd int, rel string) (*unix.Stat_t, error) {
	dir, name := splitDir(rel)
	dfd, err := openDirBeneath(dirfd, dir, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, classify(err, rel, -1, "")
	}
	return &st, nil
}

// removeBeneath removes the regular file rel below dirfd.
func removeBeneath(dirfd int, rel string) error {
	dir, name := splitDir(rel)
	dfd, err := openDirBeneath(dirfd, dir, false)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return unix.Unlinkat(dfd, name, 0)
}

// splitDir splits a slash-separated path into its directory ("" for none)
// and last component.
func splitDir(rel string) (dir, name string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

// tempPrefix and tempSuffix frame the guard's temporary files.
const tempPrefix, tempSuffix = ".memgate-", ".tmp"

func tempName(name string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return tempPrefix + name + "-" + hex.EncodeToString(b[:]) + tempSuffix
}

// replaceResult is what replaceBeneath found.
type replaceResult struct {
	// now is the file at the path after the call: the guard's (written), or
	// the agent's (raced).
	now *fileSnap
	// raced: the agent wrote after old was read and before the guard's
	// file went in, so nothing was written; now is the agent's file.
	raced bool
	// gaveBack: raced, found in the very instant of the rename, which was
	// undone.
	gaveBack bool
	// displaced is a write of the agent's that the rename took off the
	// path: made on top of old.data, in old's file or as a file renamed
	// over the path an instant before the guard's. nil: none.
	displaced []byte
	// held is old's file, replaced: a write may yet land in it, from a
	// process that still had it open after the wait or whose open had
	// found it at the path before the rename and reached it only after
	// the guard's look (no lease sees an open before it reaches the file).
	// heldBase is what the guard read of it last. The caller owns it, and
	// looks at it again later (Guard.checkHeld, at the next poll).
	held     *os.File
	heldBase []byte
}

// useLeases is cleared by tests, to run what happens where leases cannot
// be had.
var useLeases = true

// noSync skips fsync of the guard's rewrites: for tests that rewrite
// thousands of times, as store.Options.NoSync is for the store.
var noSync bool

func syncFile(fd int) error {
	if noSync {
		return nil
	}
	_, err := ignoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fsync(fd) })
	return err
}

// testHookBeforeRename, when set, runs between replaceBeneath's check and
// its rename: the window an agent's write can fall in.
var testHookBeforeRename func(rel string)

// heldWait bounds the wait for other holders of a replaced file to close
// it (see replaceBeneath).
var heldWait = 250 * time.Millisecond

// replaceBeneath makes rel below dirfd hold next instead of old, the file
// as the guard read it, without losing a write of the agent's (which takes
// no lock). The new content goes in a temporary file beside it that is
// renamed over the path, so a reader never sees half of it.
//
// An agent write can land at any moment. One before the rename is seen by
// a last check (the path no longer holds old's file and bytes): nothing is
// written and the caller judges the agent's file (raced). Around the
// rename itself, on Linux, the guard holds a write lease on old's file:
// the kernel grants it only while no other process has the file open, and
// makes a process that opens it meanwhile wait; the rename is
// renameat2(RENAME_EXCHANGE), which hands back whatever it displaced. If
// someone began opening old's file, or renamed a file of its own over the
// path, in that instant, the exchange is undone and the agent's file
// stands (raced). So the path never holds the guard's file while an agent
// write sits in a file off the path, which a tool reading the path next
// would miss. Where leases or RENAME_EXCHANGE are missing, the guard
// renames and then looks at old's file (once no other process holds it,
// or after heldWait) and at what the rename displaced: an agent write
// found there is returned as displaced, for the caller to put on top of
// the guard's file and judge.
func replaceBeneath(dirfd int, rel string, old *fileSnap, next []byte, max int64) (*replaceResult, error) {
	dir, name := splitDir(rel)
	if _, err := splitRel(rel); err != nil {
		return nil, err
	}
	dfd, err := openDirBeneath(dirfd, dir, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)

	// Has the agent written since old was read?
	if cur, changed, err := changedSince(dfd, rel, name, old, max); err != nil || changed {
		return &replaceResult{now: cur, raced: true}, err
	}

	tmp := tempName(name)
	tfd, err := openat(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("guard: temporary file for %s: %w", rel, err)
	}
	tf := os.NewFile(uintptr(tfd), tmp)
	placed := false
	defer func() {
		if !placed {
			_ = unix.Unlinkat(dfd, tmp, 0)
			tf.Close()
		}
	}()
	perm, uid, gid := uint32(0o644), -1, -1
	if old.exists() {
		perm, uid, gid = old.perm, int(old.uid), int(old.gid)
	}
	if _, err := tf.Write(next); err != nil {
		return nil, fmt.Errorf("guard: write %s: %w", rel, err)
	}
	if err := unix.Fchmod(tfd, perm); err != nil {
		return nil, fmt.Errorf("guard: chmod %s: %w", rel, err)
	}
	if uid >= 0 && os.Geteuid() == 0 {
		_ = unix.Fchown(tfd, uid, gid) // keep the agent's ownership when memgate runs as root
	}
	if err := syncFile(tfd); err != nil {
		return nil, fmt.Errorf("guard: sync %s: %w", rel, err)
	}
	ours := func() (*fileSnap, error) {
		var st unix.Stat_t
		if err := unix.Fstat(tfd, &st); err != nil {
			return nil, fmt.Errorf("guard: stat %s: %w", rel, err)
		}
		return &fileSnap{f: tf, data: next, dev: uint64(st.Dev), ino: uint64(st.Ino), perm: perm, uid: st.Uid, gid: st.Gid}, nil
	}
	// raced hands the path back to the agent: what it wrote stands.
	raced := func() (*replaceResult, error) {
		cur, _, err := changedSince(dfd, rel, name, &fileSnap{}, max)
		return &replaceResult{now: cur, raced: true}, err
	}

	if !old.exists() {
		if testHookBeforeRename != nil {
			testHookBeforeRename(rel)
		}
		err := renameNoReplace(dfd, tmp, name)
		if errors.Is(err, unix.EEXIST) {
			return raced() // the agent made it meanwhile
		} else if errors.Is(err, errNoRenameat2) {
			err = unix.Renameat(dfd, tmp, dfd, name) // checked above; a file made since then is replaced
		}
		if err != nil {
			return nil, fmt.Errorf("guard: rename over %s: %w", rel, err)
		}
		placed = true
		_ = syncFile(dfd)
		now, err := ours()
		return &replaceResult{now: now}, err
	}

	// Leases on old's file and on ours: an open of either waits until they
	// are released, and shows as a lease being broken.
	leased := acquireLease(old.f, heldWait)
	leasedNew := false
	release := func() {
		if leasedNew {
			releaseLease(tf)
			leasedNew = false
		}
		if leased {
			releaseLease(old.f)
			leased = false
		}
	}
	defer release()
	if leased {
		// Nobody has old's file open now, and an open of it waits: a last
		// look (without opening it, which would break the lease) and the
		// rename are safe from writes to it.
		if !stillOld(dfd, rel, name, old, max) {
			release()
			return raced()
		}
		leasedNew, _ = takeLease(tf)
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(rel)
	}
	exchanged := true
	err = renameExchange(dfd, tmp, name)
	if errors.Is(err, errNoRenameat2) {
		exchanged = false
		err = unix.Renameat(dfd, tmp, dfd, name)
	} else if errors.Is(err, unix.ENOENT) {
		release()
		return raced() // removed since the check: the agent's removal stands
	}
	if err != nil {
		return nil, fmt.Errorf("guard: rename over %s: %w", rel, err)
	}
	placed = true
	defer func() { _ = syncFile(dfd) }() // the renames themselves durable
	now, err := ours()
	if err != nil {
		return nil, err
	}
	res := &replaceResult{now: now}
	if exchanged {
		// tmp now names what the path held an instant ago.
		var xs unix.Stat_t
		other := unix.Fstatat(dfd, tmp, &xs, unix.AT_SYMLINK_NOFOLLOW) == nil && !old.same(&xs)
		// Someone began opening old's file in that instant and waits on it
		// (not on ours: an open interrupted by a signal starts again, from
		// the path, and then waits on ours).
		waitsOnOld := leased && leaseBroken(old.f) && !(leasedNew && leaseBroken(tf))
		if other || waitsOnOld {
			// The agent renamed a file of its own over the path, or is
			// opening old's file: give the path back to the agent's file.
			if err := renameExchange(dfd, tmp, name); err == nil {
				_ = unix.Unlinkat(dfd, tmp, 0) // ours, at the path for that instant only
				release()
				res, err := raced()
				res.gaveBack = true
				// An open that found ours at the path in that instant
				// (after the look at its lease) writes to it once the
				// lease is released: it is looked at again, as a replaced
				// file is.
				res.held, res.heldBase = tf, next
				return res, err
			}
			if other {
				// Cannot swap back: the agent's file is put on top instead.
				defer unix.Unlinkat(dfd, tmp, 0)
				fd, err := openat(dfd, tmp, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
				if err != nil {
					return res, fmt.Errorf("guard: reading back %s: %w", rel, err)
				}
				snap, err := readOpen(fd, rel, max)
				if err != nil {
					return res, err
				}
				snap.close()
				res.displaced = snap.data
				return res, nil
			}
		}
		defer unix.Unlinkat(dfd, tmp, 0) // old's file, looked at below
	}
	release()
	// A write through a descriptor opened on old's file before the rename
	// lands in it (without a lease, or in the instant between a lookup and
	// its open): wait for its other holders, then look.
	waitHeld(old.f, heldWait)
	data, err := preadAll(old.f, rel, max)
	if err != nil {
		return res, err
	}
	if !bytes.Equal(data, old.data) {
		res.displaced = data
	}
	// Handed back held even when nobody holds it now: an open that looked
	// the path up before the rename may reach old's file only after this
	// look, and its write is found at the next.
	res.held, res.heldBase, old.f = old.f, data, nil
	return res, nil
}

// stillOld reports whether name in dfd is old's file with old's bytes,
// without opening it.
func stillOld(dfd int, rel, name string, old *fileSnap, max int64) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || !old.same(&st) {
		return false
	}
	data, err := preadAll(old.f, rel, max)
	return err == nil && bytes.Equal(data, old.data)
}

// acquireLease takes a write lease on f, waiting up to d for other holders
// to close it. false: no lease (held open past d, or leases cannot be had).
func acquireLease(f *os.File, d time.Duration) bool {
	if !useLeases {
		return false
	}
	var ok bool
	retryFor(d, func() bool {
		var busy bool
		ok, busy = takeLease(f)
		return ok || !busy
	})
	return ok
}

// retryFor calls try, with pauses growing from 50µs to 1ms, until it
// reports done or d has passed; it reports whether try was done.
func retryFor(d time.Duration, try func() bool) bool {
	deadline := time.Now().Add(d)
	pause := 50 * time.Microsecond
	for {
		if try() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// changedSince reports whether name in dfd is no longer old: another file,
// other bytes, created or removed. cur is what is there then.
func changedSince(dfd int, rel, name string, old *fileSnap, max int64) (cur *fileSnap, changed bool, err error) {
	fd, err := openat(dfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return &fileSnap{}, old.exists(), nil
	} else if err != nil {
		return nil, true, classify(err, rel, dfd, name)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, true, fmt.Errorf("guard: stat %s: %w", rel, err)
	}
	if old.same(&st) {
		data, err := preadAll(old.f, rel, max)
		if err == nil && bytes.Equal(data, old.data) {
			unix.Close(fd)
			return nil, false, nil
		}
	}
	cur, err = readOpen(fd, rel, max)
	return cur, true, err
}

// waitHeld waits up to d until no other open file description refers to
// f's file. Where that cannot be told (no leases), it returns at once.
// Whether one still does is not its caller's question: the file is looked
// at again at the next poll either way (Guard.checkHeld).
func waitHeld(f *os.File, d time.Duration) {
	if !useLeases {
		return
	}
	retryFor(d, func() bool {
		held, known := heldElsewhere(f)
		return !known || !held
	})
}
