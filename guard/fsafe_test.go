package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fsTree is a workspace beside a directory outside it, holding what an
// agent could plant: symlinks in and out, a FIFO, a socket, a hard link, a
// sparse file over the cap, a directory under a file's name.
type fsTree struct {
	ws, outside string
	root        int // the workspace, opened as the guard opens it
}

const testCap = 1 << 20

func newTree(t *testing.T) *fsTree {
	t.Helper()
	base := t.TempDir()
	tr := &fsTree{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{tr.ws, tr.outside, filepath.Join(tr.ws, "memory"), filepath.Join(tr.ws, "dir.md"),
		filepath.Join(tr.outside, "memory")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	files := map[string]string{
		"ws/MEMORY.md":              "- in the workspace\n",
		"ws/memory/day.md":          "- a daily note\n",
		"ws/file":                   "a file where a directory is expected\n",
		"outside/admin.token":       "s3cr3t-admin-token\n",
		"outside/memory/day.md":     "- a file outside\n",
		"outside/hard-source.token": "hard-linked secret\n",
	}
	for rel, content := range files {
		must(t, os.WriteFile(filepath.Join(base, rel), []byte(content), 0o644))
	}
	must(t, os.Symlink(filepath.Join(tr.ws, "MEMORY.md"), filepath.Join(tr.ws, "inside-link.md")))
	must(t, os.Symlink(filepath.Join(tr.outside, "admin.token"), filepath.Join(tr.ws, "USER.md")))
	must(t, os.Symlink("../outside/admin.token", filepath.Join(tr.ws, "relative-link.md")))
	must(t, os.Symlink(filepath.Join(tr.outside, "memory"), filepath.Join(tr.ws, "linked-memory")))
	must(t, os.Symlink("memory", filepath.Join(tr.ws, "inside-dir-link")))
	must(t, unix.Mkfifo(filepath.Join(tr.ws, "fifo.md"), 0o644))
	must(t, os.Link(filepath.Join(tr.outside, "hard-source.token"), filepath.Join(tr.ws, "hard.md")))
	big, err := os.Create(filepath.Join(tr.ws, "big.md"))
	must(t, err)
	must(t, big.Truncate(256<<20)) // sparse: 256 MB that must never be read
	big.Close()
	// A socket, where the path is short enough for one.
	if sock := filepath.Join(tr.ws, "sock.md"); len(sock) < 100 {
		ln, err := net.Listen("unix", sock)
		must(t, err)
		t.Cleanup(func() { ln.Close() })
	}
	tr.root, err = unix.Open(tr.ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(tr.root) })
	return tr
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// bothWalks runs f with openat2 and with the component walk.
func bothWalks(t *testing.T, f func(t *testing.T)) {
	for _, mode := range []struct {
		name    string
		openat2 bool
	}{{"openat2", true}, {"walk", false}} {
		t.Run(mode.name, func(t *testing.T) {
			was := useOpenat2
			useOpenat2 = mode.openat2
			t.Cleanup(func() { useOpenat2 = was })
			f(t)
		})
	}
}

func TestReadBeneathRefusesAllButRegularFilesInside(t *testing.T) {
	tr := newTree(t)
	cases := []struct {
		rel     string
		content string // read
		reason  string // refused
		missing bool
		invalid bool
	}{
		{rel: "MEMORY.md", content: "- in the workspace\n"},
		{rel: "memory/day.md", content: "- a daily note\n"},
		{rel: "USER.md", reason: ReasonSymlink},                // to the admin token outside
		{rel: "relative-link.md", reason: ReasonSymlink},       // ../outside/admin.token
		{rel: "inside-link.md", reason: ReasonSymlink},         // to a file inside: still a symlink
		{rel: "linked-memory/day.md", reason: ReasonSymlink},   // a directory symlink to outside
		{rel: "inside-dir-link/day.md", reason: ReasonSymlink}, // a directory symlink inside
		{rel: "fifo.md", reason: ReasonNotRegular},             // must not block
		{rel: "dir.md", reason: ReasonNotRegular},
		{rel: "hard.md", reason: ReasonHardLink},
		{rel: "big.md", reason: ReasonTooLarge}, // refused from fstat, not read
		{rel: "missing.md", missing: true},
		{rel: "memory/missing.md", missing: true},
		{rel: "file/x.md", missing: true}, // a file where a directory would be
		{rel: "../outside/admin.token", invalid: true},
		{rel: "memory/../../outside/admin.token", invalid: true},
		{rel: "/etc/passwd", invalid: true},
	}
	if _, err := os.Lstat(filepath.Join(tr.ws, "sock.md")); err == nil {
		cases = append(cases, struct {
			rel, content, reason string
			missing, invalid     bool
		}{rel: "sock.md", reason: ReasonNotRegular})
	}
	bothWalks(t, func(t *testing.T) {
		for _, tc := range cases {
			t.Run(strings.ReplaceAll(tc.rel, "/", "|"), func(t *testing.T) {
				done := make(chan struct{})
				var snap *fileSnap
				var err error
				go func() {
					defer close(done)
					snap, err = readBeneath(tr.root, tc.rel, testCap)
				}()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("readBeneath blocked")
				}
				defer snap.close()
				r, refused := asRefusal(err)
				switch {
				case tc.reason != "":
					if !refused || r.reason != tc.reason {
						t.Fatalf("got %v (snapshot %+v), want a %s refusal", err, snap, tc.reason)
					}
				case tc.missing:
					if err != nil || snap.exists() {
						t.Fatalf("got %+v %v, want a missing file", snap, err)
					}
				case tc.invalid:
					if err == nil || refused {
						t.Fatalf("got %+v %v, want an invalid path", snap, err)
					}
				default:
					if err != nil || string(snap.data) != tc.content {
						t.Fatalf("got %+v %v, want %q", snap, err, tc.content)
					}
				}
			})
		}
	})
}

// A file that grows past the cap after fstat is still read only to cap+1.
func TestPreadAllStopsAtTheCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(p, []byte(strings.Repeat("x", 100)), 0o644))
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	for _, tc := range []struct {
		max    int64
		refuse bool
	}{{100, false}, {99, true}, {1000, false}} {
		data, err := preadAll(f, "f", tc.max)
		if r, ok := asRefusal(err); tc.refuse != ok || ok && r.reason != ReasonTooLarge || !tc.refuse && len(data) != 100 {
			t.Fatalf("cap %d: %d bytes, %v", tc.max, len(data), err)
		}
	}
}

func TestLstatBeneath(t *testing.T) {
	tr := newTree(t)
	bothWalks(t, func(t *testing.T) {
		for _, tc := range []struct {
			rel    string
			isLink bool
			reason string
			gone   bool
		}{
			{rel: "MEMORY.md"},
			{rel: "USER.md", isLink: true},
			{rel: "linked-memory", isLink: true},
			{rel: "linked-memory/day.md", reason: ReasonSymlink},
			{rel: "missing.md", gone: true},
		} {
			st, err := lstatBeneath(tr.root, tc.rel)
			r, refused := asRefusal(err)
			switch {
			case tc.reason != "":
				if !refused || r.reason != tc.reason {
					t.Fatalf("%s: %v, want a %s refusal", tc.rel, err, tc.reason)
				}
			case tc.gone:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("%s: %v, want not exist", tc.rel, err)
				}
			default:
				if err != nil || (st.Mode&unix.S_IFMT == unix.S_IFLNK) != tc.isLink {
					t.Fatalf("%s: %+v %v", tc.rel, st, err)
				}
			}
		}
	})
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

// noTemps checks the guard left no temporary file in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range ents {
		if isOwnTemp(e.Name()) {
			t.Fatalf("left %s behind", e.Name())
		}
	}
}

func TestReplaceBeneath(t *testing.T) {
	const base, next = "- one\n- rule\n", "- one\n"
	type outcome struct {
		raced     bool
		displaced string
		file      string // what the path holds after
	}
	// inBackground runs an agent write that may wait on the guard's lease,
	// giving it a moment to begin; the test waits for it before checking.
	var bg sync.WaitGroup
	inBackground := func(f func()) {
		bg.Add(1)
		go func() { defer bg.Done(); f() }()
		time.Sleep(20 * time.Millisecond)
	}
	cases := []struct {
		name   string
		before func(t *testing.T, p string) // after the read, before the check
		hook   func(t *testing.T, p string) // between the check and the rename
		leases outcome                      // with write leases (Linux)
		none   *outcome                     // without; nil: as with
	}{
		{name: "nobody else writes", leases: outcome{file: next}},
		{name: "an in-place write after the read", before: func(t *testing.T, p string) {
			must(t, os.WriteFile(p, []byte(base+"- two\n"), 0o644))
		}, leases: outcome{raced: true, file: base + "- two\n"}},
		{name: "a rename over the file after the read", before: func(t *testing.T, p string) {
			renameOver(t, p, base+"- three\n")
		}, leases: outcome{raced: true, file: base + "- three\n"}},
		{name: "a removal after the read", before: func(t *testing.T, p string) {
			must(t, os.Remove(p))
		}, leases: outcome{raced: true}},
		{name: "an append in the window", hook: func(t *testing.T, p string) {
			inBackground(func() { appendTo(t, p, "- four\n") })
		}, // the append waits on the lease; the rename is undone and it lands at the path
			leases: outcome{raced: true, file: base + "- four\n"},
			// without leases it lands in the file the rename took off the path
			none: &outcome{displaced: base + "- four\n", file: next}},
		{name: "a rename over the file in the window", hook: func(t *testing.T, p string) {
			renameOver(t, p, base+"- five\n")
		}, // handed back by the exchange, which is undone (leases or not)
			leases: outcome{raced: true, file: base + "- five\n"}},
		{name: "a descriptor opened in the window, written after the rename", hook: func(t *testing.T, p string) {
			inBackground(func() {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(50 * time.Millisecond)
				_, _ = f.WriteString("- six\n")
				f.Close()
			})
		}, leases: outcome{raced: true, file: base + "- six\n"},
			// Without leases a write that late is not seen: the limit
			// SECURITY.md names.
			none: &outcome{file: next}},
	}
	for _, leases := range []bool{true, false} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("leases=%v/%s", leases, tc.name), func(t *testing.T) {
				was := useLeases
				useLeases = leases
				t.Cleanup(func() { useLeases = was })
				want := tc.leases
				if !leases && tc.none != nil {
					want = *tc.none
				}
				tr := newTree(t)
				p := filepath.Join(tr.ws, "memory", "day.md")
				must(t, os.WriteFile(p, []byte(base), 0o640))
				must(t, os.Chmod(p, 0o640))
				old, err := readBeneath(tr.root, "memory/day.md", testCap)
				must(t, err)
				defer old.close()
				if tc.before != nil {
					tc.before(t, p)
				}
				if tc.hook != nil {
					testHookBeforeRename = func(string) { tc.hook(t, p) }
					t.Cleanup(func() { testHookBeforeRename = nil })
				}
				res, err := replaceBeneath(tr.root, "memory/day.md", old, []byte(next), testCap)
				bg.Wait()
				must(t, err)
				defer res.now.close()
				if res.held != nil {
					res.held.Close()
				}
				got := outcome{raced: res.raced, displaced: string(res.displaced)}
				if b, err := os.ReadFile(p); err == nil {
					got.file = string(b)
				}
				if got != want {
					t.Fatalf("got %+v, want %+v", got, want)
				}
				if !want.raced {
					if string(res.now.data) != want.file {
						t.Fatalf("the snapshot of the path holds %q, the path %q", res.now.data, want.file)
					}
					fi, err := os.Stat(p)
					must(t, err)
					if fi.Mode().Perm() != 0o640 {
						t.Fatalf("mode %v, want the agent's 0640", fi.Mode().Perm())
					}
				}
				noTemps(t, filepath.Dir(p))
			})
		}
	}
}

// A write never leaves the workspace: through a directory symlink it is
// refused, and the file outside keeps its bytes.
func TestReplaceBeneathRefusesSymlinks(t *testing.T) {
	tr := newTree(t)
	bothWalks(t, func(t *testing.T) {
		for _, rel := range []string{"linked-memory/day.md", "linked-memory/new.md", "USER.md", "inside-link.md"} {
			_, err := replaceBeneath(tr.root, rel, &fileSnap{}, []byte("- written by the guard\n"), testCap)
			if r, ok := asRefusal(err); !ok || r.reason != ReasonSymlink {
				t.Fatalf("%s: %v, want a symlink refusal", rel, err)
			}
		}
		if got := read(t, filepath.Join(tr.outside, "memory", "day.md")); got != "- a file outside\n" {
			t.Fatalf("the file outside reads %q", got)
		}
		if got := read(t, filepath.Join(tr.outside, "admin.token")); got != "s3cr3t-admin-token\n" {
			t.Fatalf("the token reads %q", got)
		}
		if _, err := os.Lstat(filepath.Join(tr.outside, "memory", "new.md")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a file was made outside: %v", err)
		}
		noTemps(t, filepath.Join(tr.outside, "memory"))
	})
}

// A file that does not exist is created, with the directories on its way.
func TestReplaceBeneathCreates(t *testing.T) {
	tr := newTree(t)
	res, err := replaceBeneath(tr.root, "memory/2026/12/new.md", &fileSnap{}, []byte("- new\n"), testCap)
	must(t, err)
	res.now.close()
	if got := read(t, filepath.Join(tr.ws, "memory", "2026", "12", "new.md")); got != "- new\n" || res.raced {
		t.Fatalf("%q raced=%v", got, res.raced)
	}
	// One the agent made meanwhile is not replaced.
	testHookBeforeRename = func(string) { must(t, os.WriteFile(filepath.Join(tr.ws, "late.md"), []byte("- agent\n"), 0o644)) }
	defer func() { testHookBeforeRename = nil }()
	res, err = replaceBeneath(tr.root, "late.md", &fileSnap{}, []byte("- guard\n"), testCap)
	must(t, err)
	res.now.close()
	if got := read(t, filepath.Join(tr.ws, "late.md")); got != "- agent\n" || !res.raced {
		t.Fatalf("%q raced=%v, want the agent's file kept", got, res.raced)
	}
	noTemps(t, tr.ws)
}

func renameOver(t *testing.T, p, content string) {
	t.Helper()
	tmp := p + ".tool-tmp"
	must(t, os.WriteFile(tmp, []byte(content), 0o644))
	must(t, os.Rename(tmp, p))
}

func appendTo(t *testing.T, p, line string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString(line)
	f.Close()
	must(t, err)
}
