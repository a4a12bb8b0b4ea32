// Package guard governs Markdown memory files (OpenClaw's MEMORY.md and
// memory/*.md, USER.md, CLAUDE.md, AGENTS.md) from beside the agent: it
// watches them, turns each added, changed or removed entry into a write for
// the one governor, keeps low-risk edits, undoes high-risk ones in the file
// (byte for byte, other edits kept) while a reviewer decides, and writes
// approved entries back. The file stays the agent's: memgate rewrites it
// only to undo a change it parked or refused, or to apply a decision.
//
// Each entry of a file is a record whose slot the guard remembers (state.go);
// the file's text is the entry's raw Markdown, kept in the record's metadata
// so that a rollback can put the very bytes back.
package guard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/oklog/ulid/v2"
	"golang.org/x/sys/unix"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Dialect is the actor dialect of the guard's writes.
const Dialect = "markdown"

// DefaultGlobs are the memory files of OpenClaw, Claude Code and Codex,
// relative to a guarded directory.
var DefaultGlobs = []string{"MEMORY.md", "memory/**/*.md", "USER.md", "CLAUDE.md", "AGENTS.md"}

// Options configure a Guard. Gov, KV and Dirs are required.
type Options struct {
	Gov  *memory.Governor
	KV   storeapi.KV
	Dirs []string
	// Globs select the files under each directory (default DefaultGlobs);
	// "**" matches any number of directories.
	Globs []string
	// Subject is the subject of every entry (default: the base name of its
	// directory, the workspace's name).
	Subject string
	Logger  *slog.Logger
	Metrics *Metrics
	// Debounce is how long a file must be quiet before it is judged
	// (default 50ms): tools write in bursts.
	Debounce time.Duration
	// Poll is how often decisions (approvals, rejections, rollbacks) are
	// looked for and files rescanned as a backstop to fsnotify (default
	// 500ms for decisions; files every 60 polls).
	Poll time.Duration
	// MaxFileBytes caps a guarded file (default DefaultMaxFileBytes): a
	// larger one is refused, never read past the cap.
	MaxFileBytes int64
	// MaxEntries caps the entries of a guarded file (default
	// DefaultMaxEntries): each is a write to judge.
	MaxEntries int
}

// Default caps of a guarded file.
const (
	DefaultMaxFileBytes = 1 << 20
	DefaultMaxEntries   = 2000
)

// Guard watches the files. Run it once; it ends with Run's context.
type Guard struct {
	o   Options
	log *slog.Logger
	met *Metrics

	mu     sync.Mutex        // serialises judging: one file change or decision at a time
	slots  map[string]string // slot id -> file path, for the files' entries
	files  map[string]bool   // guarded files memgate has state for
	parked map[string]bool   // files with changes waiting for review
	cursor string            // audit log position for rollbacks and restores
	// checkFrom is where the next rescan's turn of slot checks starts;
	// checksPerRescan is slotChecksPerRescan (tests take smaller turns).
	checkFrom, checksPerRescan int

	runID     string          // the run id of this guard's writes
	baselined map[string]bool // directories whose files existing at first start were adopted
	roots     map[string]int  // guarded directory -> its descriptor, opened once (fsafe.go)
	held      []heldFile      // replaced files, looked at again at the next poll

	refusedMu sync.Mutex         // refused is read by Refused, outside mu
	refused   map[string]Refusal // path -> why the guard will not read or write it
	ready     chan struct{}
}

// New returns a Guard; nothing runs until Run.
func New(o Options) (*Guard, error) {
	if o.Gov == nil || o.KV == nil || len(o.Dirs) == 0 {
		return nil, errors.New("guard: Gov, KV and at least one directory are required")
	}
	if len(o.Globs) == 0 {
		o.Globs = DefaultGlobs
	}
	for _, gl := range o.Globs {
		if _, err := path.Match(strings.ReplaceAll(gl, "**", "x"), ""); err != nil {
			return nil, fmt.Errorf("guard: glob %q: %w", gl, err)
		}
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	roots := map[string]int{}
	closeRoots := func() {
		for _, fd := range roots {
			unix.Close(fd)
		}
	}
	for i, d := range o.Dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			closeRoots()
			return nil, fmt.Errorf("guard: %s: %w", d, err)
		}
		// The operator named this directory: its path may hold symlinks.
		// It is opened once and kept; nothing below it is followed.
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeRoots()
			return nil, fmt.Errorf("guard: directory %s: %w", d, err)
		}
		if _, dup := roots[abs]; dup {
			unix.Close(fd)
		} else {
			roots[abs] = fd
		}
		o.Dirs[i] = abs
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Debounce <= 0 {
		o.Debounce = 50 * time.Millisecond
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	return &Guard{o: o, log: o.Logger.With("component", "guard"), met: o.Metrics,
		slots: map[string]string{}, files: map[string]bool{}, parked: map[string]bool{}, ready: make(chan struct{}),
		runID: "markdown-" + ulid.Make().String(), baselined: map[string]bool{}, roots: roots, refused: map[string]Refusal{},
		checksPerRescan: slotChecksPerRescan}, nil
}

// Run judges what changed while memgate was not watching (a file seen
// for the first time is adopted as the baseline), then watches until ctx
// ends. It returns once the judging in progress is done, having released
// the directories New opened: a Guard runs once. A watch that cannot be
// set up is an error.
func (g *Guard) Run(ctx context.Context) error {
	defer g.release()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	defer w.Close()
	// Decisions taken from now on are followed in the audit log; those
	// taken before are caught by the reconciliation below.
	g.cursor = ulid.MustNew(ulid.Timestamp(time.Now().Add(-time.Second)), zeroEntropy{}).String()
	for _, dir := range g.o.Dirs {
		if err := g.watchTree(w, dir); err != nil {
			return err
		}
	}
	// The first pass judges every file (a workspace of many files takes a
	// while), then the watch takes over; events that came meanwhile are
	// queued in the watcher.
	g.mu.Lock()
	start := time.Now()
	err = g.loadFiles(ctx)
	if err == nil {
		err = g.scanAll(ctx, start)
	}
	if err == nil {
		err = g.markBaselined(ctx)
	}
	if err == nil {
		err = g.reconcileAll(ctx)
	}
	n := len(g.files)
	g.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		g.log.Error("judging guarded files at start; the periodic rescan tries again", "err", err)
	}
	g.log.Info("guarding Markdown memory", "dirs", g.o.Dirs, "globs", g.o.Globs, "files", n,
		"took", time.Since(start).Round(time.Millisecond).String())
	close(g.ready)
	g.run(ctx, w)
	return nil
}

// BaselineRun is the run id of the entries adopted as a file's baseline.
const BaselineRun = "markdown-baseline"

// RunID is the run id of the changes this guard judges (one per process):
// quarantining it undoes, in the files too, what they made active.
func (g *Guard) RunID() string { return g.runID }

// Ready is closed once the files have been judged at start.
func (g *Guard) Ready() <-chan struct{} { return g.ready }

// release closes the directories New opened and the replaced files held
// open; Run ends with it.
func (g *Guard) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for dir, fd := range g.roots {
		unix.Close(fd)
		delete(g.roots, dir)
	}
	for _, h := range g.held {
		h.f.Close()
	}
	g.held = nil
}

// watchTree watches dir and every directory below it (fsnotify is not
// recursive); directories created later are added as they appear. It
// never descends into a symlink (WalkDir does not follow them); one that
// could hold guarded files is refused, visibly.
func (g *Guard) watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: skip it
		}
		if d.Type()&fs.ModeSymlink != 0 {
			g.refuseLink(p)
			return nil
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .git and the like
			}
			if err := w.Add(p); err != nil {
				return fmt.Errorf("guard: watch %s: %w", p, err)
			}
		}
		return nil
	})
}

func (g *Guard) run(ctx context.Context, w *fsnotify.Watcher) {
	due := map[string]time.Time{} // path -> when its first unjudged event came
	var quiet <-chan time.Time
	tick := time.NewTicker(g.o.Poll)
	defer tick.Stop()
	polls := 0
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				fi, err := os.Lstat(ev.Name) // a symlink to a directory is not one to watch or scan
				if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
					g.refuseLink(ev.Name)
				}
				if err == nil && fi.IsDir() {
					if err := g.watchTree(w, ev.Name); err != nil {
						g.log.Warn("watching a new directory", "dir", ev.Name, "err", err)
					}
					// Files may have landed in it before the watch began.
					g.mu.Lock()
					g.scanDir(ctx, ev.Name, time.Now())
					g.mu.Unlock()
					continue
				}
			}
			if _, ok := g.match(ev.Name); !ok {
				continue
			}
			if _, ok := due[ev.Name]; !ok {
				due[ev.Name] = time.Now()
			}
			quiet = time.After(g.o.Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			g.log.Warn("file watch", "err", err) // an overflow: the periodic rescan catches up
		case <-quiet:
			g.mu.Lock()
			for p, since := range due {
				g.govern(ctx, p, since)
			}
			g.mu.Unlock()
			clear(due)
		case <-tick.C:
			polls++
			g.mu.Lock()
			g.checkHeld(ctx)
			g.recheckRefused(ctx, w)
			g.followDecisions(ctx)
			if polls%60 == 0 {
				g.rescan(ctx)
			}
			g.mu.Unlock()
		}
	}
}

// slotChecksPerRescan bounds the slots a rescan compares with their files:
// a workspace of up to that many entries is checked whole every rescan,
// a larger one in turns (20,000 entries: every 20 rescans, 10 minutes at
// the default poll), so that a rescan costs about what judging the files
// does (BENCHMARKS.md, "Markdown guard").
const slotChecksPerRescan = 1000

// rescan is the backstop of the watch and of the audit log: every file
// judged again, and guarded entries made to show their slot's active
// version, which catches a decision whose event the cursor passed (one
// another instance of a fleet committed late: the horizon of the audit
// log counts this process's writes only). Called with g.mu held.
func (g *Guard) rescan(ctx context.Context) {
	if err := g.scanAll(ctx, time.Now()); err != nil {
		g.log.Warn("rescanning guarded files", "err", err)
	}
	slots := slices.Sorted(maps.Keys(g.slots))
	if len(slots) == 0 {
		return
	}
	byFile := map[string][]string{}
	start := g.checkFrom % len(slots)
	for i := range min(len(slots), g.checksPerRescan) {
		slot := slots[(start+i)%len(slots)]
		byFile[g.slots[slot]] = append(byFile[g.slots[slot]], slot)
	}
	g.checkFrom = start + g.checksPerRescan
	for p, slots := range byFile {
		if err := g.reconcileChanged(ctx, p, slots); err != nil {
			g.noteError(ctx, p, ReasonDecision, "putting guarded entries' active versions in their file", err)
		}
	}
}

// reconcileChanged reconciles the slots of file p whose active version is
// not the one the file shows: one state read for the file and one store
// read a slot, so that the backstop stays cheap for a large file.
func (g *Guard) reconcileChanged(ctx context.Context, p string, slots []string) error {
	st, err := loadState(ctx, g.o.KV, p)
	if err != nil || st == nil {
		return err
	}
	shown := map[string]string{} // slot -> the version the file shows
	for _, e := range st.Entries {
		shown[e.Slot] = e.Record
	}
	for _, slot := range slots {
		active, err := g.o.Gov.ActiveInSlot(ctx, slot)
		if memory.ErrorCode(err) == memory.ENOTFOUND {
			active, err = nil, nil
		}
		if err != nil {
			return err
		}
		want := ""
		if active != nil {
			want = active.ID
		}
		if shown[slot] == want {
			continue
		}
		if err := g.reconcile(ctx, slot); err != nil {
			return err
		}
	}
	return nil
}

// match reports whether p is a guarded file, and its path relative to its
// directory.
func (g *Guard) match(p string) (string, bool) {
	for _, dir := range g.o.Dirs {
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		rel = filepath.ToSlash(rel)
		for _, gl := range g.o.Globs {
			if globMatch(gl, rel) {
				return rel, true
			}
		}
	}
	return "", false
}

// globMatch is path.Match with "**" standing for any number of path
// segments.
func globMatch(pattern, name string) bool {
	ps, ns := strings.Split(pattern, "/"), strings.Split(name, "/")
	var m func(i, j int) bool
	m = func(i, j int) bool {
		if i == len(ps) {
			return j == len(ns)
		}
		if ps[i] == "**" {
			for k := j; k <= len(ns); k++ {
				if m(i+1, k) {
					return true
				}
			}
			return false
		}
		if j == len(ns) {
			return false
		}
		ok, err := path.Match(ps[i], ns[j])
		return err == nil && ok && m(i+1, j+1)
	}
	return m(0, 0)
}

func (g *Guard) scanAll(ctx context.Context, now time.Time) error {
	for _, dir := range g.o.Dirs {
		g.scanDir(ctx, dir, now)
	}
	// Files memgate knows that are gone are judged too (every entry
	// removed); so are those a symlink now stands in for (refused).
	for p := range g.files {
		root, rel, ok := g.locate(p)
		if !ok {
			continue // under a directory no longer guarded
		}
		_, err := lstatBeneath(root, rel)
		if _, refused := asRefusal(err); refused || errors.Is(err, fs.ErrNotExist) {
			g.govern(ctx, p, now)
		}
	}
	return ctx.Err()
}

func (g *Guard) scanDir(ctx context.Context, dir string, now time.Time) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil {
			return nil
		}
		if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			g.refuseLink(p) // not followed: refused if it could hold guarded files
			return nil
		}
		if isOwnTemp(d.Name()) && d.Type().IsRegular() {
			// Left by a rewrite a crash cut short: the file it was for is
			// as the rename left it (before or after).
			if root, rel, ok := g.locate(p); ok {
				_ = removeBeneath(root, rel)
			}
			return nil
		}
		if _, ok := g.match(p); ok && !d.IsDir() {
			g.govern(ctx, p, now) // a FIFO or socket under a guarded name is refused there, visibly
		}
		return nil
	})
}

// subject is the subject of a file's entries.
func (g *Guard) subject(p string) string {
	if g.o.Subject != "" {
		return g.o.Subject
	}
	if dir := g.dirOf(p); dir != "" {
		return filepath.Base(dir)
	}
	return "workspace"
}

// rel names a file for its records, logs and reviewers: its path below
// its directory, control characters escaped (a name may hold any byte but
// NUL and "/", and the governor refuses control characters in ids).
func (g *Guard) rel(p string) string {
	if r, ok := g.match(p); ok {
		return escapeText(r)
	}
	return escapeText(filepath.Base(p))
}

// zeroEntropy makes the smallest ULID of a millisecond: a cursor before
// every event of that time.
type zeroEntropy struct{}

func (zeroEntropy) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// loadFiles learns the files memgate has state for, and their slots.
func (g *Guard) loadFiles(ctx context.Context) error {
	for _, dir := range g.o.Dirs {
		_, err := g.o.KV.Get(ctx, kvNamespace, "dir/"+stateKey(dir))
		if err == nil {
			g.baselined[dir] = true
		} else if !errors.Is(err, storeapi.ErrNotFound) {
			return err
		}
	}
	paths, err := loadIndex(ctx, g.o.KV)
	if err != nil {
		return err
	}
	for _, p := range paths {
		st, err := loadState(ctx, g.o.KV, p)
		if err != nil {
			return err
		}
		if st != nil {
			g.addSlots(st)
		}
	}
	return nil
}

// markBaselined records that each directory's files have been adopted:
// from now on a file that appears there is judged, entry by entry, not
// adopted. Directories guarded before are known from the store.
func (g *Guard) markBaselined(ctx context.Context) error {
	for _, dir := range g.o.Dirs {
		if g.baselined[dir] {
			continue
		}
		if err := g.o.KV.Put(ctx, kvNamespace, "dir/"+stateKey(dir), []byte(dir)); err != nil {
			return err
		}
		g.baselined[dir] = true
	}
	return nil
}

// dirOf is the guarded directory a file is under.
func (g *Guard) dirOf(p string) string {
	for _, dir := range g.o.Dirs {
		if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
			return dir
		}
	}
	return ""
}

// remember adds a file to the index of files with state.
func (g *Guard) remember(ctx context.Context, p string) error {
	if g.files[p] {
		return nil
	}
	g.files[p] = true
	paths := make([]string, 0, len(g.files))
	for f := range g.files {
		paths = append(paths, f)
	}
	slices.Sort(paths)
	return saveIndex(ctx, g.o.KV, paths)
}

// addSlots indexes the entries of a state by slot.
func (g *Guard) addSlots(st *fileState) {
	for _, e := range st.Entries {
		if e.Slot != "" {
			g.slots[e.Slot] = st.Path
		}
	}
	for _, p := range st.Parked {
		if p.Slot != "" {
			g.slots[p.Slot] = st.Path
		}
	}
	g.files[st.Path] = true
	if len(st.Parked) > 0 {
		g.parked[st.Path] = true
	}
}

// headingText names a heading path for a reviewer.
func headingText(h []string) string {
	if len(h) == 0 {
		return "(top of the file)"
	}
	return strings.Join(h, " > ")
}

// isOwnTemp reports whether a file name is one of the guard's temporary
// files (rewrite).
func isOwnTemp(name string) bool {
	return strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix)
}
