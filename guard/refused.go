package guard

// Paths the guard refuses, made visible (issue 30, points 3 and 5), and
// the small helpers that locate a path beneath its workspace.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/memgate/memgate/memory"
)

// Refusal is a guarded path the guard will not read or write, and why.
// Whatever memgate accepted of it before stays, in the store and in the
// file, until the path is a regular file within the caps again.
type Refusal struct {
	Path   string    `json:"path"`
	Reason string    `json:"reason"` // ReasonSymlink, ReasonNotRegular, ...
	Detail string    `json:"detail"`
	Since  time.Time `json:"since"`
}

// Refused lists the paths refused now, by path. Safe to call from any
// goroutine (the readiness check does).
func (g *Guard) Refused() []Refusal {
	g.refusedMu.Lock()
	defer g.refusedMu.Unlock()
	out := make([]Refusal, 0, len(g.refused))
	for _, r := range g.refused {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Refusal) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Degraded describes the refused paths for a readiness check: nil when
// there are none.
func (g *Guard) Degraded() error {
	rs := g.Refused()
	if len(rs) == 0 {
		return nil
	}
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s (%s)", escapeText(r.Path), r.Reason))
	}
	return fmt.Errorf("markdown guard degraded: %d guarded path(s) refused, their accepted content left as it is: %s",
		len(rs), strings.Join(parts, ", "))
}

// refuse records that p is refused. A new refusal (or a new reason) is
// counted and logged once, not at every look.
func (g *Guard) refuse(p string, r *refusal) {
	g.refusedMu.Lock()
	prev, had := g.refused[p]
	if !had || prev.Reason != r.reason {
		g.refused[p] = Refusal{Path: p, Reason: r.reason, Detail: r.detail, Since: time.Now()}
	}
	n := len(g.refused)
	g.refusedMu.Unlock()
	if had && prev.Reason == r.reason {
		return
	}
	g.met.setRefused(n)
	g.met.onError(r.reason)
	g.log.Warn("refusing a guarded path: not read, not written; what memgate accepted of it stays",
		"path", escapeText(p), "reason", r.reason, "detail", r.detail)
}

// unrefuse forgets a refusal of p, if any.
func (g *Guard) unrefuse(p string) {
	g.refusedMu.Lock()
	_, had := g.refused[p]
	delete(g.refused, p)
	n := len(g.refused)
	g.refusedMu.Unlock()
	if had {
		g.met.setRefused(n)
		g.log.Info("a refused guarded path is readable again", "path", escapeText(p))
	}
}

// refuseLink refuses a symlink met while walking a workspace when it is
// a guarded name or could hold guarded files: the guard follows none.
func (g *Guard) refuseLink(p string) {
	if _, ok := g.match(p); ok || g.couldHold(p) {
		g.refuse(p, &refusal{reason: ReasonSymlink, detail: g.rel(p) + " is a symlink; the guard follows none"})
	}
}

// recheckRefused looks at each refused path again: a file is judged (and
// stays refused, quietly, or is read again), a directory symlink that is
// gone is forgotten and, if a directory stands there now, watched and
// scanned.
func (g *Guard) recheckRefused(ctx context.Context, w *fsnotify.Watcher) {
	for _, r := range g.Refused() {
		if _, ok := g.match(r.Path); ok {
			g.govern(ctx, r.Path, time.Now())
			continue
		}
		root, rel, ok := g.locate(r.Path)
		if !ok {
			g.unrefuse(r.Path)
			continue
		}
		st, err := lstatBeneath(root, rel)
		if _, still := asRefusal(err); still || err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			continue
		}
		g.unrefuse(r.Path)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && w != nil {
			if err := g.watchTree(w, r.Path); err != nil {
				g.log.Warn("watching a directory", "dir", escapeText(r.Path), "err", err)
			}
			g.scanDir(ctx, r.Path, time.Now())
		}
	}
}

// locate returns the descriptor of the guarded directory p is under and
// p's slash-separated path below it.
func (g *Guard) locate(p string) (root int, rel string, ok bool) {
	dir := g.dirOf(p)
	if dir == "" {
		return -1, "", false
	}
	fd, ok := g.roots[dir]
	if !ok {
		return -1, "", false
	}
	r, err := filepath.Rel(dir, p)
	if err != nil || r == "." || strings.HasPrefix(r, "..") {
		return -1, "", false
	}
	return fd, filepath.ToSlash(r), true
}

// couldHold reports whether a guarded file could lie below the directory
// path p (memory/ for memory/**/*.md).
func (g *Guard) couldHold(p string) bool {
	for _, dir := range g.o.Dirs {
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, gl := range g.o.Globs {
			if globPrefix(gl, filepath.ToSlash(rel)) {
				return true
			}
		}
	}
	return false
}

// globPrefix reports whether some path below dir could match pattern.
func globPrefix(pattern, dir string) bool {
	ps, ns := strings.Split(pattern, "/"), strings.Split(dir, "/")
	var m func(i, j int) bool
	m = func(i, j int) bool {
		if j == len(ns) {
			return i < len(ps) // pattern left for what lies below
		}
		if i == len(ps) {
			return false
		}
		if ps[i] == "**" {
			return m(i+1, j) || m(i, j+1)
		}
		ok, err := path.Match(ps[i], ns[j])
		return err == nil && ok && m(i+1, j+1)
	}
	return m(0, 0)
}

// escapeText escapes control characters and invalid UTF-8 in a name or a
// heading, so that it can be an id, a log value and text for a reviewer.
func escapeText(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// agentID is the actor id of a file's entries: "markdown:" and its name,
// or, for a name too long for an id, a prefix of it and a hash of the rest.
func agentID(name string) string {
	id := "markdown:" + name
	if len(id) <= memory.MaxIDLen {
		return id
	}
	sum := sha256.Sum256([]byte(name))
	tail := "~" + hex.EncodeToString(sum[:8])
	cut := memory.MaxIDLen - len(tail)
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + tail
}

// heldFile is a file the guard replaced: a write another process makes
// to it later (through a descriptor it held, or an open that found the
// file at the path before the rename) lands there, and is put back.
type heldFile struct {
	path  string
	f     *os.File
	base  []byte // what the guard read of it
	until time.Time
}

// heldFor bounds how long a replaced file is watched.
const heldFor = time.Minute

func (g *Guard) hold(p string, f *os.File, base []byte) {
	g.held = append(g.held, heldFile{path: p, f: f, base: base, until: time.Now().Add(heldFor)})
}

// checkHeld looks again at the replaced files: once no other process
// holds one (or its time is up), a write that landed in it is put on top
// of the file at its path and judged.
func (g *Guard) checkHeld(ctx context.Context) {
	keep := g.held[:0]
	for _, h := range g.held {
		if busy, known := heldElsewhere(h.f); busy && known && time.Now().Before(h.until) {
			keep = append(keep, h)
			continue
		}
		root, rel, ok := g.locate(h.path)
		data, err := preadAll(h.f, rel, g.o.MaxFileBytes)
		h.f.Close()
		if !ok || err != nil || string(data) == string(h.base) {
			continue
		}
		if err := g.putBack(ctx, h.path, root, rel, h.base, data); err != nil {
			g.noteError(ctx, h.path, ReasonJudge, "putting back an agent write made to a file the guard had replaced", err)
		}
	}
	clear(g.held[len(keep):])
	g.held = keep
}

// noteError counts and logs a failure about p, or records its refusal.
func (g *Guard) noteError(ctx context.Context, p, reason, msg string, err error) {
	if r, ok := asRefusal(err); ok {
		g.refuse(p, r)
		return
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return // stopping: judged again at the next start
	}
	g.met.onError(reason)
	g.log.Error(msg, "file", escapeText(p), "err", err)
}
