//go:build !linux

package store

// freeSpace is not implemented off Linux: the guard then logs that it
// cannot read the free space and admits every write.
func freeSpace(string) (uint64, error) { return 0, errNoStatfs }

// volumeSpace is not implemented off Linux: DiskUsage then reports no
// volume.
func volumeSpace(string) (free, size uint64, err error) { return 0, 0, errNoStatfs }
