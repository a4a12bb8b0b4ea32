package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
)

// fakeDisk is an injected free-space source: a disk as full as a test says.
type fakeDisk struct {
	free  atomic.Uint64
	calls atomic.Int64
}

func newFakeDisk(free uint64) *fakeDisk {
	d := &fakeDisk{}
	d.free.Store(free)
	return d
}

func (d *fakeDisk) FreeSpace(string) (uint64, error) {
	d.calls.Add(1)
	return d.free.Load(), nil
}

const testReserve = 64 << 20

var (
	plenty = uint64(10 << 30)
	full   = uint64(testReserve - 1<<20)
)

func openGuarded(t *testing.T, o Options) *Store {
	t.Helper()
	st, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func wantStorageError(t *testing.T, err error, what string) {
	t.Helper()
	if memory.ErrorCode(err) != memory.EINSUFFICIENTSTORAGE {
		t.Fatalf("%s: want an %s error, got %v", what, memory.EINSUFFICIENTSTORAGE, err)
	}
}

func fact(i int) memory.Candidate {
	return memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "alice", FactType: fmt.Sprintf("f.%d", i),
		Summary: fmt.Sprintf("fact %d", i)}
}

// TestDefaultDiskReserve: with the options Open sets, the reserve is the
// figure diskguard.go explains, and Options.DiskReserve overrides it.
func TestDefaultDiskReserve(t *testing.T) {
	disk := newFakeDisk(plenty)
	st := openGuarded(t, Options{Dir: t.TempDir(), FreeSpace: disk.FreeSpace})
	defer st.Close()
	if got, want := st.guard.reserve, uint64(137<<20); got != want {
		t.Fatalf("default reserve %s, want %s", mib(got), mib(want))
	}
	if got, want := st.guard.resume, uint64(137<<20)+137<<20/8; got != want {
		t.Fatalf("writes resume at %s, want %s", mib(got), mib(want))
	}
	st2 := openGuarded(t, Options{Dir: t.TempDir(), FreeSpace: disk.FreeSpace, DiskReserve: 5 << 20})
	defer st2.Close()
	if st2.guard.reserve != 5<<20 {
		t.Fatalf("DiskReserve 5 MiB gave a reserve of %s", mib(st2.guard.reserve))
	}
	st3 := openGuarded(t, Options{Dir: t.TempDir(), FreeSpace: newFakeDisk(0).FreeSpace, DiskReserve: -1})
	defer st3.Close()
	if st3.guard != nil || st3.Writable() != nil {
		t.Fatal("a negative DiskReserve should turn the guard off")
	}
	if err := st3.Put(context.Background(), "t", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

// TestFullDiskRefusesWritesKeepsReadsAndRecovers: while the disk is below
// the reserve, every write path (governed writes, Put, PutKey) answers
// EINSUFFICIENTSTORAGE and writes nothing, reads work, Writable says why;
// when space returns past the hysteresis, writes succeed again without a
// restart, and every acknowledged write survives one.
func TestFullDiskRefusesWritesKeepsReadsAndRecovers(t *testing.T) {
	for _, mode := range []struct {
		name string
		o    Options
	}{{"sync", Options{}}, {"group commit", Options{GroupCommit: true}}, {"no sync", Options{NoSync: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			disk := newFakeDisk(plenty)
			o := mode.o
			o.Dir, o.FreeSpace, o.DiskReserve = t.TempDir(), disk.FreeSpace, testReserve
			st := openGuarded(t, o)
			gov := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
			var acked []string
			for i := range 5 {
				res, err := gov.Submit(ctx, fact(i))
				if err != nil {
					t.Fatal(err)
				}
				acked = append(acked, res.Record.ID)
			}
			if err := st.Put(ctx, "ns", "before", []byte("kept")); err != nil {
				t.Fatal(err)
			}
			if err := st.Writable(); err != nil {
				t.Fatalf("Writable with space: %v", err)
			}

			disk.free.Store(full)
			err := st.Writable()
			wantStorageError(t, err, "Writable on a full disk")
			if !strings.Contains(err.Error(), "disk is full") {
				t.Fatalf("Writable does not say why: %v", err)
			}
			_, err = gov.Submit(ctx, fact(100))
			wantStorageError(t, err, "governed write")
			wantStorageError(t, st.Put(ctx, "ns", "during", []byte("x")), "Put")
			wantStorageError(t, st.PutKey(ctx, []byte("ext/during"), []byte("x")), "PutKey")
			err = st.Update(ctx, func(tx memory.Tx) error { return tx.PutNotice(&memory.Notice{ID: "n1"}) })
			wantStorageError(t, err, "Update")
			// An Update that writes nothing is a read: it still works.
			if err := st.Update(ctx, func(tx memory.Tx) error { _, err := tx.Record(acked[0]); return err }); err != nil {
				t.Fatalf("a read-only Update on a full disk: %v", err)
			}
			// Reads work.
			for _, id := range acked {
				if r, err := gov.Get(ctx, id); err != nil || r.Status != memory.StatusActive {
					t.Fatalf("read %s on a full disk: %+v, %v", id, r, err)
				}
			}
			if recs, err := gov.List(ctx, memory.ListFilter{SubjectID: "alice"}); err != nil || len(recs) != len(acked) {
				t.Fatalf("list on a full disk: %d records, %v", len(recs), err)
			}
			if v, err := st.Get(ctx, "ns", "before"); err != nil || string(v) != "kept" {
				t.Fatalf("kv read on a full disk: %q, %v", v, err)
			}

			// Above the reserve but below the hysteresis: still refused.
			disk.free.Store(testReserve + 1<<20)
			wantStorageError(t, st.Writable(), "Writable inside the hysteresis")
			wantStorageError(t, st.Put(ctx, "ns", "during", []byte("x")), "Put inside the hysteresis")

			disk.free.Store(plenty)
			if err := st.Writable(); err != nil {
				t.Fatalf("Writable once space returned: %v", err)
			}
			for i := 5; i < 8; i++ {
				res, err := gov.Submit(ctx, fact(i))
				if err != nil {
					t.Fatalf("write once space returned: %v", err)
				}
				acked = append(acked, res.Record.ID)
			}
			if err := st.Put(ctx, "ns", "after", []byte("written")); err != nil {
				t.Fatal(err)
			}

			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st = openGuarded(t, o)
			defer st.Close()
			gov = memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
			recs, err := gov.List(ctx, memory.ListFilter{SubjectID: "alice"})
			if err != nil || len(recs) != len(acked) {
				t.Fatalf("after a restart: %d records (want %d), %v", len(recs), len(acked), err)
			}
			for _, id := range acked {
				if _, err := gov.Get(ctx, id); err != nil {
					t.Fatalf("acknowledged write %s lost: %v", id, err)
				}
			}
			for _, k := range []string{"during"} {
				if _, err := st.Get(ctx, "ns", k); !errors.Is(err, ErrNotFound) {
					t.Fatalf("a refused Put was written: %v", err)
				}
			}
			if err := st.View(ctx, func(tx memory.ReadTx) error {
				n := 0
				err := tx.ScanNotices(func(*memory.Notice) bool { n++; return true })
				if n != 0 {
					return fmt.Errorf("a refused Update wrote %d notices", n)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDiskFullRecoversWithoutAProbe: with nobody calling Writable, a
// refused writer reads the free space again once the last reading is
// older than diskCheckInterval, and gets in when space returned.
func TestDiskFullRecoversWithoutAProbe(t *testing.T) {
	ctx := context.Background()
	disk := newFakeDisk(plenty)
	st := openGuarded(t, Options{Dir: t.TempDir(), FreeSpace: disk.FreeSpace, DiskReserve: testReserve})
	defer st.Close()
	disk.free.Store(full)
	time.Sleep(diskCheckInterval + 50*time.Millisecond)
	wantStorageError(t, st.Put(ctx, "ns", "k", []byte("v")), "Put once the disk filled")
	disk.free.Store(plenty)
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := st.Put(ctx, "ns", "k", []byte("v"))
		if err == nil {
			break
		}
		wantStorageError(t, err, "Put while space returns")
		if time.Now().After(deadline) {
			t.Fatal("writes did not resume after space returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDiskGuardAdmitsWhatFitsAboveTheReserve: a write that would cross
// the reserve is refused while smaller ones pass, and one such refusal
// does not close the store to writes that fit. Between readings the guard
// counts what it admitted: it reads the free space again before the count
// eats the margin, and no write crosses the reserve.
func TestDiskGuardAdmitsWhatFitsAboveTheReserve(t *testing.T) {
	ctx := context.Background()
	const margin = 512 << 10
	var written atomic.Int64 // what the test's writes took from the disk
	var calls atomic.Int64
	free := func(string) (uint64, error) {
		calls.Add(1)
		return uint64(testReserve + margin - written.Load()), nil
	}
	st := openGuarded(t, Options{Dir: t.TempDir(), FreeSpace: free, DiskReserve: testReserve})
	defer st.Close()
	// Larger than the margin, and than diskCheckBytes: unusual enough not
	// to close the store to the others.
	wantStorageError(t, st.PutKey(ctx, []byte("ext/big"), make([]byte, diskCheckBytes+1)), "a write larger than the margin")
	if err := st.PutKey(ctx, []byte("ext/small"), make([]byte, 16<<10)); err != nil {
		t.Fatalf("a write that fits: %v", err)
	}
	written.Add(16 << 10)
	if err := st.Writable(); err != nil {
		t.Fatalf("one refused large write closed the store: %v", err)
	}
	before := calls.Load()
	const value = 100 << 10
	for i := 0; ; i++ {
		err := st.PutKey(ctx, fmt.Appendf(nil, "ext/%d", i), make([]byte, value))
		if err != nil {
			wantStorageError(t, err, "filling the margin")
			break
		}
		if written.Add(value) > margin {
			t.Fatalf("the guard admitted %d bytes above a margin of %d", written.Load(), margin)
		}
	}
	if calls.Load() == before {
		t.Fatal("the guard refused a write without reading the free space again")
	}
	if written.Load() < margin-2*value {
		t.Fatalf("the guard refused with %d bytes of the %d margin left", margin-written.Load(), margin)
	}
}

// TestDiskGuardReadsFreeSpaceCheaply: the free space is read about every
// diskCheckInterval or diskCheckBytes, not on every write.
func TestDiskGuardReadsFreeSpaceCheaply(t *testing.T) {
	ctx := context.Background()
	disk := newFakeDisk(plenty)
	st := openGuarded(t, Options{Dir: t.TempDir(), FreeSpace: disk.FreeSpace, DiskReserve: testReserve, NoSync: true})
	defer st.Close()
	before := disk.calls.Load()
	start := time.Now()
	const writes = 2000
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range writes / 4 {
				if err := st.Put(ctx, "ns", fmt.Sprintf("%d-%d", w, i), []byte("value")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	calls := disk.calls.Load() - before
	limit := 2 + 2*int64(elapsed/diskCheckInterval) + writes*200/diskCheckBytes
	if calls > limit {
		t.Fatalf("%d writes in %v read the free space %d times (limit %d)", writes, elapsed, calls, limit)
	}
	t.Logf("%d writes in %v: %d readings of the free space", writes, elapsed, calls)
}

// TestOpenOnFullDiskIsReadOnly: a store opened below its reserve opens
// Badger read-only: reads of what is there work, writes answer
// EINSUFFICIENTSTORAGE saying a restart is needed, even once space
// returned; a restart with space writes again.
func TestOpenOnFullDiskIsReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	disk := newFakeDisk(plenty)
	o := Options{Dir: dir, FreeSpace: disk.FreeSpace, DiskReserve: testReserve, GroupCommit: true}
	st := openGuarded(t, o)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
	var ids []string
	for i := range 20 {
		res, err := gov.Submit(ctx, fact(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Record.ID)
	}
	if err := st.Put(ctx, "ns", "k", bytes.Repeat([]byte("v"), 2*valueThreshold)); err != nil { // in the value log
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	disk.free.Store(full)
	st = openGuarded(t, o)
	err := st.Writable()
	wantStorageError(t, err, "Writable of a store opened on a full disk")
	if !strings.Contains(err.Error(), "started read-only") || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("Writable should say the store started read-only and needs a restart: %v", err)
	}
	gov = memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
	for _, id := range ids {
		if r, err := gov.Get(ctx, id); err != nil || r.Status != memory.StatusActive {
			t.Fatalf("read %s from a read-only store: %+v, %v", id, r, err)
		}
	}
	if recs, err := gov.List(ctx, memory.ListFilter{SubjectID: "alice"}); err != nil || len(recs) != len(ids) {
		t.Fatalf("list from a read-only store: %d, %v", len(recs), err)
	}
	if v, err := st.Get(ctx, "ns", "k"); err != nil || len(v) != 2*valueThreshold {
		t.Fatalf("value-log read from a read-only store: %d bytes, %v", len(v), err)
	}
	_, err = gov.Submit(ctx, fact(100))
	wantStorageError(t, err, "governed write to a read-only store")
	wantStorageError(t, st.Put(ctx, "ns", "k2", []byte("x")), "Put to a read-only store")
	wantStorageError(t, st.PutKey(ctx, []byte("ext/k"), []byte("x")), "PutKey to a read-only store")
	// Space returning does not make a read-only store writable.
	disk.free.Store(plenty)
	err = st.Update(ctx, func(tx memory.Tx) error { return tx.PutNotice(&memory.Notice{ID: "n1"}) })
	wantStorageError(t, err, "Update to a read-only store once space returned")
	if err := st.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openGuarded(t, o)
	defer st.Close()
	if err := st.Writable(); err != nil {
		t.Fatalf("after a restart with space: %v", err)
	}
	gov = memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
	if _, err := gov.Submit(ctx, fact(100)); err != nil {
		t.Fatal(err)
	}
	if recs, err := gov.List(ctx, memory.ListFilter{SubjectID: "alice"}); err != nil || len(recs) != len(ids)+1 {
		t.Fatalf("after the restart: %d records, %v", len(recs), err)
	}
}

// TestOpenOnFullDiskAfterUncleanShutdown: Badger cannot open read-only a
// database whose write-ahead log an unclean shutdown left to replay; on a
// full disk Open then fails with a message saying what to do, and opens
// read-write, with every write, once there is space.
func TestOpenOnFullDiskAfterUncleanShutdown(t *testing.T) {
	ctx := context.Background()
	disk := newFakeDisk(plenty)
	st := openGuarded(t, Options{Dir: t.TempDir(), FreeSpace: disk.FreeSpace, DiskReserve: testReserve})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
	var ids []string
	for i := range 10 {
		res, err := gov.Submit(ctx, fact(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Record.ID)
	}
	// What a crash leaves: the files as they are while the store is open.
	crashed := t.TempDir()
	copyDir(t, st.guard.dir, crashed)
	st.Close()

	disk.free.Store(full)
	_, err := Open(Options{Dir: crashed, FreeSpace: disk.FreeSpace, DiskReserve: testReserve})
	if err == nil || !strings.Contains(err.Error(), "unclean shutdown") ||
		!strings.Contains(err.Error(), "free space and restart") {
		t.Fatalf("open of a crashed database on a full disk: %v", err)
	}
	_, err = Open(Options{Dir: filepath.Join(t.TempDir(), "new"), FreeSpace: disk.FreeSpace, DiskReserve: testReserve})
	if err == nil || !strings.Contains(err.Error(), "the disk is full") {
		t.Fatalf("open of a new database on a full disk: %v", err)
	}

	disk.free.Store(plenty)
	st = openGuarded(t, Options{Dir: crashed, FreeSpace: disk.FreeSpace, DiskReserve: testReserve})
	defer st.Close()
	gov = memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
	for _, id := range ids {
		if _, err := gov.Get(ctx, id); err != nil {
			t.Fatalf("acknowledged write %s lost in the crash: %v", id, err)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "LOCK" || e.IsDir() {
			continue
		}
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// mountSmallFS mounts a tmpfs of size bytes, or skips the test where
// mounting is not permitted.
func mountSmallFS(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root; the injected free-space tests cover the guard")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mounting a small tmpfs is not permitted here (%v: %s); the injected free-space tests cover the guard", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file of zeros at path until the filesystem has about
// leave bytes free (by statfs).
func fill(t *testing.T, path string, leave uint64) {
	t.Helper()
	free, err := freeSpace(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if free <= leave {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for left := int64(free - leave); left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), left)]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRealFullFilesystemIsAnErrorNotACrash fills a small tmpfs holding a
// store, with the default reserve, through governed writes and large
// values: writes are refused before Badger can meet a full disk (which
// would kill this test binary with SIGBUS), reads work, space freed lets
// writes in again, a clean close on the nearly full disk works, and a
// restart on it opens read-only with every acknowledged write readable.
func TestRealFullFilesystemIsAnErrorNotACrash(t *testing.T) {
	mnt := mountSmallFS(t, 80<<20)
	ctx := context.Background()
	dir := filepath.Join(mnt, "db")
	o := Options{Dir: dir, MemTableSize: 1 << 20, GroupCommit: true}
	st := openGuarded(t, o)
	t.Cleanup(func() { st.Close() }) // before the unmount; Close twice is harmless
	reserve := st.guard.reserve
	t.Logf("reserve with 1 MiB memtables: %s", mib(reserve))
	filler := filepath.Join(mnt, "filler")
	fill(t, filler, reserve+6<<20)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})

	var acked []string
	var keys [][]byte
	writeUntilRefused := func() {
		t.Helper()
		for i := 0; ; i++ {
			if i > 100000 {
				t.Fatal("the small filesystem never filled")
			}
			if i%2 == 0 {
				c := fact(len(acked) + 1000)
				c.Summary = rand.Text() + strings.Repeat(" "+rand.Text(), 50) // ~1.3 KB that does not compress
				res, err := gov.Submit(ctx, c)
				if err != nil {
					wantStorageError(t, err, "governed write on a filling disk")
					return
				}
				acked = append(acked, res.Record.ID)
			} else {
				k := fmt.Appendf(nil, "ext/%d", len(keys))
				v := make([]byte, 8<<10)
				rand.Read(v)
				v[0] = byte(len(keys))
				if err := st.PutKey(ctx, k, v); err != nil {
					wantStorageError(t, err, "PutKey on a filling disk")
					return
				}
				keys = append(keys, k)
			}
		}
	}
	checkReads := func(st *Store) {
		t.Helper()
		gov := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
		for _, id := range acked {
			if _, err := gov.Get(ctx, id); err != nil {
				t.Fatalf("acknowledged write %s: %v", id, err)
			}
		}
		if err := st.DB().View(func(txn *badger.Txn) error {
			for i, k := range keys {
				item, err := txn.Get(k)
				if err != nil {
					return fmt.Errorf("acknowledged key %s: %w", k, err)
				}
				v, err := item.ValueCopy(nil)
				if err != nil || len(v) != 8<<10 || v[0] != byte(i) {
					return fmt.Errorf("acknowledged key %s: %d bytes, %v", k, len(v), err)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	writeUntilRefused()
	free, _ := freeSpace(dir)
	t.Logf("refused after %d records and %d values, %s free", len(acked), len(keys), mib(free))
	wantStorageError(t, st.Writable(), "Writable on the full filesystem")
	checkReads(st)

	// Space returns: writes resume without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := st.Writable(); err != nil {
		t.Fatalf("Writable once the filler was removed: %v", err)
	}
	if _, err := gov.Submit(ctx, fact(1)); err != nil {
		t.Fatalf("write once space returned: %v", err)
	}

	// Fill it again, close cleanly on the nearly full disk and restart.
	fill(t, filler, reserve+2<<20)
	writeUntilRefused()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The close flushed memtables into tables and deleted their logs: top
	// the filler up so the restart finds the disk below the reserve.
	fill(t, filler, reserve-1<<20)
	st = openGuarded(t, o)
	err := st.Writable()
	wantStorageError(t, err, "Writable after a restart on the full filesystem")
	if !strings.Contains(err.Error(), "started read-only") {
		t.Fatalf("restart on a full filesystem: %v", err)
	}
	checkReads(st)
	wantStorageError(t, st.PutKey(ctx, []byte("ext/more"), []byte("x")), "PutKey after a restart on a full disk")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	st = openGuarded(t, o)
	defer st.Close()
	if err := st.Writable(); err != nil {
		t.Fatalf("restart once space returned: %v", err)
	}
	checkReads(st)
	if err := st.PutKey(ctx, []byte("ext/more"), []byte("x")); err != nil {
		t.Fatal(err)
	}
}
