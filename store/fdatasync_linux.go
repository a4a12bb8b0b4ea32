package store

import (
	"os"
	"syscall"
)

// fdatasync flushes a file's data and the metadata needed to read it back,
// not its timestamps: what Badger's msync of its logs does, without a
// journal commit for the modification time.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
