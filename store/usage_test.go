package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// fileLengths sums the lengths of dir's files with extension ext: what a
// size read from the file's length (or Badger's own Size) reports.
func fileLengths(t *testing.T, dir, ext string) int64 {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestDiskUsageCountsAllocatedBlocks: Badger preallocates its value log (a
// 128 MiB file with Open's options) and writes it through a memory map, so
// the file's length says nothing about use. DiskUsage counts what the
// filesystem allocated: far below the length right after Open, and growing
// by at least what was written to it.
func TestDiskUsageCountsAllocatedBlocks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("allocated blocks are read on Linux only")
	}
	dir := t.TempDir()
	st := openGuarded(t, Options{Dir: dir})
	t.Cleanup(func() { st.Close() })
	before, err := st.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	vlogLength := fileLengths(t, dir, ".vlog")
	if vlogLength < 64<<20 {
		t.Fatalf("the value log is %d bytes long; the test expects Badger to preallocate it", vlogLength)
	}
	if before.ValueLog*16 > vlogLength {
		t.Errorf("a fresh value log occupies %d bytes of its %d: want far less than its length", before.ValueLog, vlogLength)
	}
	if before.Total() <= 0 || before.Total() != before.Tables+before.ValueLog+before.WAL+before.Other {
		t.Errorf("total %d of %+v", before.Total(), before)
	}

	// 4 MiB of values of 1 MiB, each at the value threshold: they go to the
	// value log, and their keys to the write-ahead log.
	const n, size = 4, valueThreshold
	for i := range n {
		v := make([]byte, size)
		rand.Read(v) // incompressible
		if err := st.Put(context.Background(), "usage", fmt.Sprintf("k%03d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	after, err := st.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("value log: %d bytes long, %d allocated after Open, %d after %d bytes of values", vlogLength, before.ValueLog, after.ValueLog, n*size)
	if grown := after.ValueLog - before.ValueLog; grown < n*size {
		t.Errorf("the value log grew by %d bytes after %d bytes of values were written to it", grown, n*size)
	}
	if after.WAL == 0 {
		t.Errorf("the write-ahead log occupies %d bytes after %d writes", after.WAL, n)
	}
	if after.ValueLog > vlogLength {
		t.Errorf("value log %d bytes allocated, more than its length %d", after.ValueLog, vlogLength)
	}
}

// TestDiskUsageReportsTheVolume: the volume's size and free space are the
// filesystem's, and the reserve is the guard's.
func TestDiskUsageReportsTheVolume(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("statfs is read on Linux only")
	}
	for _, tc := range []struct {
		name    string
		reserve int64
		want    uint64
	}{
		{"derived reserve", 0, 137 << 20},
		{"set reserve", 5 << 20, 5 << 20},
		{"guard off", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := openGuarded(t, Options{Dir: dir, DiskReserve: tc.reserve})
			t.Cleanup(func() { st.Close() })
			u, err := st.DiskUsage()
			if err != nil {
				t.Fatal(err)
			}
			free, size, err := volumeSpace(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !u.HasVolume || u.VolumeSize != size || u.VolumeFree == 0 || u.VolumeFree > u.VolumeSize {
				t.Errorf("volume free %d of %d (known: %v); statfs says %d of %d", u.VolumeFree, u.VolumeSize, u.HasVolume, free, size)
			}
			if u.WriteReserve != tc.want {
				t.Errorf("write reserve %d, want %d", u.WriteReserve, tc.want)
			}
		})
	}
}

func TestDiskUsageOfAnInMemoryStoreIsAnError(t *testing.T) {
	st, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.DiskUsage(); err == nil {
		t.Fatal("DiskUsage of an in-memory store: no error")
	}
}
