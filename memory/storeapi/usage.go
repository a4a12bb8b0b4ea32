package storeapi

// Usage is what a store kept on local disk (the Badger store) occupies
// and what is left on the volume holding it; a store reports it through a
// DiskUsage() (Usage, error) method, which the disk metrics read.
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
	// (the Badger store's disk guard); 0 when the guard is off.
	WriteReserve uint64
}

// Total is the bytes allocated by all of the database's files.
func (u Usage) Total() int64 { return u.Tables + u.ValueLog + u.WAL + u.Other }
