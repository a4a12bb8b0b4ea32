//go:build !linux

package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// syncFS, without syncfs(2), fsyncs every file in dir and then dir itself:
// what syncfs covers of a directory Badger owns alone.
func syncFS(dir *os.File) error {
	entries, err := os.ReadDir(dir.Name())
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir.Name(), e.Name()), os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted since the listing: nothing of it to keep
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, f.Sync(), f.Close())
	}
	if runtime.GOOS != "windows" { // a directory handle cannot be flushed there
		errs = append(errs, dir.Sync())
	}
	return errors.Join(errs...)
}
