package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS writes back every dirty file and the metadata of the filesystem
// holding dir, and reports a write-back error of that filesystem since dir
// was opened (Linux 5.8 and later).
func syncFS(dir *os.File) error {
	for {
		err := unix.Syncfs(int(dir.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
