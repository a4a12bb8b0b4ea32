package guard

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errNoRenameat2 says the kernel or filesystem has no renameat2 flags.
var errNoRenameat2 = errors.New("renameat2 flags not supported")

// openat2Beneath opens rel below dirfd with openat2, resolving no symlink
// and nothing outside dirfd. tried is false when the kernel has no openat2
// (before Linux 5.6, or a seccomp filter that refuses it): then the caller
// walks the path itself.
func openat2Beneath(dirfd int, rel string, flags int) (fd int, err error, tried bool) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err = ignoringEINTR(func() (int, error) { return unix.Openat2(dirfd, rel, how) })
	switch {
	case errors.Is(err, unix.ENOSYS):
		useOpenat2 = false
		return -1, nil, false
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EAGAIN):
		// A seccomp filter's answer, or a resolution the kernel wants
		// retried: the walk decides.
		return -1, nil, false
	}
	return fd, err, true
}

func renameat2(dfd int, from, to string, flag uint) error {
	err := unix.Renameat2(dfd, from, dfd, to, flag)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoRenameat2
	}
	return err
}

// renameExchange swaps two names of a directory atomically.
func renameExchange(dfd int, a, b string) error { return renameat2(dfd, a, b, unix.RENAME_EXCHANGE) }

// renameNoReplace renames, failing with EEXIST if to exists.
func renameNoReplace(dfd int, from, to string) error {
	return renameat2(dfd, from, to, unix.RENAME_NOREPLACE)
}

// heldElsewhere reports whether an open file description other than f's
// refers to f's file: the kernel grants a write lease only when none does.
// known is false where leases cannot tell (leases disabled, a file of
// another owner without CAP_LEASE, a filesystem without them).
func heldElsewhere(f *os.File) (held, known bool) {
	fd := f.Fd()
	_, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_WRLCK)
	switch {
	case err == nil:
		_, _ = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
		return false, true
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EBUSY):
		return true, true
	}
	return false, false
}

// takeLease takes a write lease on f: granted only while no other open
// file description refers to its file; an open of it then waits until the
// lease is released. busy: another holds it open.
func takeLease(f *os.File) (ok, busy bool) {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK)
	if err == nil {
		return true, false
	}
	return false, errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EBUSY)
}

// leaseBroken reports whether someone began opening f's file since its
// lease was taken (the kernel then asks the holder to give it up).
func leaseBroken(f *os.File) bool {
	t, err := unix.FcntlInt(f.Fd(), unix.F_GETLEASE, 0)
	return err != nil || t != unix.F_WRLCK
}

func releaseLease(f *os.File) {
	if f != nil {
		_, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
	}
}
