//go:build !linux

package store

import "errors"

// freeSpace is not implemented off Linux: the guard then logs that it
// cannot read the free space and admits every write.
func freeSpace(string) (uint64, error) {
	return 0, errors.New("reading the free disk space is implemented on Linux only")
}
