package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/memgate/memgate/memory/storeapi"
)

// DiskUsage measures the database's files and the volume holding them
// (storeapi.Usage). It reads the directory each time (a few dozen files),
// so it is meant for a scrape, not a hot path.
func (s *Store) DiskUsage() (storeapi.Usage, error) {
	if s.dir == "" {
		return storeapi.Usage{}, errors.New("store: disk usage: the store is in memory")
	}
	var u storeapi.Usage
	if s.guard != nil {
		u.WriteReserve = s.guard.reserve
	}
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != s.dir {
				return nil // compaction deleted it while we walked
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		n := allocated(info)
		switch filepath.Ext(path) {
		case ".sst":
			u.Tables += n
		case ".vlog":
			u.ValueLog += n
		case ".mem":
			u.WAL += n
		default:
			u.Other += n
		}
		return nil
	})
	if err != nil {
		return storeapi.Usage{}, fmt.Errorf("store: disk usage of %s: %w", s.dir, err)
	}
	free, size, err := volumeSpace(s.dir)
	switch {
	case err == nil:
		u.VolumeFree, u.VolumeSize, u.HasVolume = free, size, true
	case !errors.Is(err, errNoStatfs):
		return storeapi.Usage{}, fmt.Errorf("store: disk usage: the volume of %s: %w", s.dir, err)
	}
	return u, nil
}

// errNoStatfs: the volume's space is not read on this platform.
var errNoStatfs = errors.New("reading the free disk space is implemented on Linux only")
