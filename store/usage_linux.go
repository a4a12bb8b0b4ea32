package store

import (
	"io/fs"
	"syscall"
)

// allocated is the bytes the filesystem allocated to a file: st_blocks
// counts 512-byte units whatever the filesystem's block size (stat(2)).
// A sparse file's holes take none.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
