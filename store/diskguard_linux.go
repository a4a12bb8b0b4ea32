package store

import "golang.org/x/sys/unix"

// freeSpace returns the bytes available to unprivileged users on the
// filesystem holding dir (or its nearest existing parent).
func freeSpace(dir string) (uint64, error) {
	free, _, err := volumeSpace(dir)
	return free, err
}

// volumeSpace returns the bytes available to unprivileged users on the
// filesystem holding dir (or its nearest existing parent), and its size.
func volumeSpace(dir string) (free, size uint64, err error) {
	var st unix.Statfs_t
	for {
		err := unix.Statfs(existingDir(dir), &st)
		if err == unix.EINTR {
			continue
		} else if err != nil {
			return 0, 0, err
		}
		break
	}
	bsize := uint64(st.Frsize)
	if bsize == 0 {
		bsize = uint64(st.Bsize)
	}
	return st.Bavail * bsize, st.Blocks * bsize, nil
}
