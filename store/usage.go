package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Usage is what a store occupies on disk and what is left on the volume
// holding it.
type Usage struct {
	// Bytes allocated on disk by the database's files, by part: the LSM
	// tree's tables (.sst), the value log (.vlog), the write-ahead logs of
	// the memtables (.mem), and everything else (MANIFEST, DISCARD,
	// KEYREGISTRY, ...). Badger sizes its logs with ftruncate and writes
	// them through memory maps, so a file's length is its preallocation
	// (a fresh value log is 128 MiB long); these count the blocks the
	// filesystem allocated (on Linux; elsewhere the files' lengths).
	Tables, ValueLog, WAL, Other int64
	// VolumeFree and VolumeSize are the bytes available to unprivileged
	// users on the filesystem holding the database, and its size; valid
	// when HasVolume (Linux).
	VolumeFree, VolumeSize uint64
	HasVolume              bool
	// WriteReserve is the free space below which the store refuses writes
	// (diskguard.go); 0 when the guard is off.
	WriteReserve uint64
}

// Total is the bytes allocated by all of the database's files.
func (u Usage) Total() int64 { return u.Tables + u.ValueLog + u.WAL + u.Other }

// DiskUsage measures the database's files and the volume holding them. It
// reads the directory each time (a few dozen files), so it is meant for a
// scrape, not a hot path.
func (s *Store) DiskUsage() (Usage, error) {
	if s.dir == "" {
		return Usage{}, errors.New("store: disk usage: the store is in memory")
	}
	var u Usage
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
		return Usage{}, fmt.Errorf("store: disk usage of %s: %w", s.dir, err)
	}
	free, size, err := volumeSpace(s.dir)
	switch {
	case err == nil:
		u.VolumeFree, u.VolumeSize, u.HasVolume = free, size, true
	case !errors.Is(err, errNoStatfs):
		return Usage{}, fmt.Errorf("store: disk usage: the volume of %s: %w", s.dir, err)
	}
	return u, nil
}

// errNoStatfs: the volume's space is not read on this platform.
var errNoStatfs = errors.New("reading the free disk space is implemented on Linux only")
