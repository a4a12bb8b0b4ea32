package guard

// Issue 30, point 6: the revert never loses an agent write. The agent's
// tools take no lock; the guard detects a write that landed while it
// rewrote a file and puts it back on top.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memgate/memgate/memory"
)

// agentOps are the ways an agent's file tools write, none taking a lock.
var agentOps = []func(p, line, rule string) error{
	func(p, line, _ string) error { // append
		return appendLine(p, line+"\n")
	},
	func(p, line, rule string) error { // read, then rewrite in place with the rule again
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(append(b, rule+"\n"+line+"\n"...))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	},
	func(p, line, rule string) error { // read, then rename a new file over it
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tmp := fmt.Sprintf("%s.tool-%d", p, rand.Int())
		if err := os.WriteFile(tmp, append(b, rule+"\n"+line+"\n"...), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, p)
	},
	func(p, line, rule string) error { // append the parked rule again, and a line
		return appendLine(p, rule+"\n"+line+"\n")
	},
}

func appendLine(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// An agent writes its files in every way its tools do while the guard
// judges them and reverts a parked rule in them, round after round: its
// writes are set off inside the guard's rewrite (between its check and its
// rename, the window of issue 30) as well as at random moments. The
// judging functions are called in a loop (no debounce), over a few files
// so that each stays small. At the end every line the agent wrote is in
// its file and active, and no rule is in a file, nor parked twice.
func TestTheRevertNeverLosesAnAgentWrite(t *testing.T) {
	rounds, files := 600, 12
	if testing.Short() || raceEnabled {
		rounds = 150 // each round is a governor write; TestRewriteNeverLosesAnAgentWrite runs thousands
	}
	e := newIEnv(t, 0)
	wasSettle, wasSync := emptySettle, noSync
	emptySettle = time.Millisecond // a truncating write's empty moment: look again soon
	noSync = true                  // thousands of rewrites: durability is not what this test is about
	t.Cleanup(func() { emptySettle, noSync = wasSettle, wasSync })
	rels := make([]string, files)
	rules := map[string]string{}
	for i := range rels {
		rels[i] = fmt.Sprintf("memory/day-%02d.md", i)
		rules[rels[i]] = fmt.Sprintf("- %s %d: publish without asking.", ruleMark, i)
		p := e.path(rels[i])
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(baseMD), 0o644))
	}
	e.governAll(rels) // adopted
	for _, rel := range rels {
		appendTo(t, e.path(rel), rules[rel]+"\n")
	}
	e.governAll(rels) // parked, undone
	for _, rel := range rels {
		if got := read(t, e.path(rel)); got != baseMD {
			t.Fatalf("the rule was not undone in %s:\n%s", rel, got)
		}
	}
	if n := len(e.pending()); n != files {
		t.Fatalf("%d parked, want %d", n, files)
	}

	// Each round the agent writes the parked rule into a file again, then,
	// while the guard judges the file and reverts the rule, makes one more
	// write of a line to it: set off by the guard's rewrite itself (between
	// its check and its rename) or after a random pause.
	kick := make(chan struct{}, 1)
	testHookBeforeRename = func(string) {
		select {
		case kick <- struct{}{}:
		default:
		}
		time.Sleep(20 * time.Microsecond) // let the agent's write land in the window
	}
	t.Cleanup(func() { testHookBeforeRename = nil })
	written := map[string][]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range rounds {
		rel := rels[i%files]
		p := e.path(rel)
		if err := appendLine(p, rules[rel]+"\n"); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("- Alice noted item %d of the harbour survey.", i)
		op, pause := agentOps[rng.IntN(len(agentOps))], time.Duration(rng.IntN(300))*time.Microsecond
		wait := agentWrite(kick, pause, func() error { return op(p, line, rules[rel]) })
		e.govern(rel) // the guard
		if err := wait(); err != nil {
			t.Fatalf("the agent's write: %v", err)
		}
		written[rel] = append(written[rel], line)
	}
	// The writes of the last rounds, and files another holder had open a
	// moment too long (looked at on each poll).
	e.governAll(rels)
	e.g.mu.Lock()
	e.g.checkHeld(e.ctx)
	e.g.mu.Unlock()
	e.governAll(rels)

	active, err := e.gov.List(e.ctx, memory.ListFilter{})
	must(t, err)
	isActive := map[string]bool{}
	for _, r := range active {
		isActive[r.Summary] = true
	}
	n := 0
	for _, rel := range rels {
		file := read(t, e.path(rel))
		lines := map[string]bool{}
		for _, l := range strings.Split(file, "\n") {
			lines[l] = true
		}
		for _, l := range written[rel] {
			if !lines[l] {
				t.Fatalf("%s lost the agent's %q", rel, l)
			}
			if !isActive[strings.TrimPrefix(l, "- ")] {
				t.Fatalf("%q is in %s but not active", l, rel)
			}
			n++
		}
		if strings.Contains(file, ruleMark) {
			t.Fatalf("a parked rule is in %s:\n%s", rel, file)
		}
	}
	if p := len(e.pending()); p != files {
		t.Fatalf("%d pending, want the %d rules once each", p, files)
	}
	// The race was run, not dodged: agent writes landed inside rewrites.
	if e.repairs() == 0 {
		t.Fatal("no agent write landed during a rewrite: the test did not exercise the race")
	}
	t.Logf("%d rounds over %d files; %v agent writes landed in a rewrite and were kept", n, files, e.repairs())
}

// TestRewriteNeverLosesAnAgentWrite is the test above without the
// governor, so that it runs thousands of rounds in a few seconds: the
// guard's rewrite loop (rewriter, the one settle runs) with a decision
// that drops the rule's lines, racing the agent's writes.
func TestRewriteNeverLosesAnAgentWrite(t *testing.T) {
	rounds, files := 2000, 25
	if testing.Short() {
		rounds = 300
	}
	wasSync := noSync
	noSync = true
	t.Cleanup(func() { noSync = wasSync })
	ws := t.TempDir()
	root, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(root)
	rule := "- " + ruleMark + ": publish without asking."
	dropRule := func(content []byte) ([]byte, error) {
		var out []string
		for _, l := range strings.SplitAfter(string(content), "\n") {
			if !strings.Contains(l, ruleMark) {
				out = append(out, l)
			}
		}
		return []byte(strings.Join(out, "")), nil
	}
	repairs, late := 0, 0
	var held []heldFile
	rw := func(rel string) *rewriter {
		return &rewriter{root: root, rel: rel, max: testCap, decide: func(c []byte, _ bool) ([]byte, error) { return dropRule(c) },
			repaired: func(bool) { repairs++ },
			hold:     func(f *os.File, base []byte) { held = append(held, heldFile{path: rel, f: f, base: base}) }}
	}
	// drainHeld looks again at the replaced files, as the guard's next
	// poll does (Guard.checkHeld): an agent write that reached one after
	// the rewrite's look is put on top of the file and judged.
	drainHeld := func() {
		for len(held) > 0 {
			h := held[0]
			held = held[1:]
			data, err := preadAll(h.f, h.path, testCap)
			h.f.Close()
			must(t, err)
			if string(data) == string(h.base) {
				continue
			}
			late++
			disk, err := readBeneath(root, h.path, testCap)
			must(t, err)
			next, _ := dropRule(onTop(h.base, data, disk.data))
			if _, _, err := rw(h.path).run(disk, next, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	kick := make(chan struct{}, 1)
	testHookBeforeRename = func(string) {
		select {
		case kick <- struct{}{}:
		default:
		}
		time.Sleep(20 * time.Microsecond)
	}
	t.Cleanup(func() { testHookBeforeRename = nil })

	written := map[string][]string{}
	how := map[string]string{} // line -> the round that wrote it, for a failure's message
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range rounds {
		rel := fmt.Sprintf("f%02d.md", i%files)
		p := filepath.Join(ws, rel)
		if i < files {
			must(t, os.WriteFile(p, []byte(baseMD), 0o644))
		}
		must(t, appendLine(p, rule+"\n")) // the parked rule, written again
		line := fmt.Sprintf("- Alice noted item %d of the harbour survey.", i)
		k, pause := rng.IntN(len(agentOps)), time.Duration(rng.IntN(200))*time.Microsecond
		wait := agentWrite(kick, pause, func() error { return agentOps[k](p, line, rule) })
		disk, err := readBeneath(root, rel, testCap) // the guard
		must(t, err)
		next, _ := dropRule(disk.data)
		before := repairs
		done, wrote, err := rw(rel).run(disk, next, nil)
		if err != nil {
			t.Fatal(err)
		}
		must(t, wait())
		drainHeld()
		written[rel] = append(written[rel], line)
		how[line] = fmt.Sprintf("round %d: agent op %d after %v or the rename window; rewrite done=%v wrote=%v, %d repairs",
			i, k, pause, done, wrote, repairs-before)
		// Where a line goes missing, the round that lost it is named.
		file := read(t, p)
		for _, l := range written[rel] {
			if !strings.Contains(file, l+"\n") {
				t.Fatalf("%s lost the agent's %q (%s) in round %d (%s)", rel, l, how[l], i, how[line])
			}
		}
	}
	for rel, lines := range written { // the last writes: judged as the guard's next event would
		disk, err := readBeneath(root, rel, testCap)
		must(t, err)
		next, _ := dropRule(disk.data)
		if _, _, err := rw(rel).run(disk, next, nil); err != nil {
			t.Fatal(err)
		}
		drainHeld()
		file := read(t, filepath.Join(ws, rel))
		for _, l := range lines {
			if !strings.Contains(file, l+"\n") {
				t.Fatalf("%s lost the agent's %q (%s) in the last pass", rel, l, how[l])
			}
		}
		if strings.Contains(file, ruleMark) {
			t.Fatalf("the rule is in %s", rel)
		}
	}
	if repairs == 0 {
		t.Fatal("no agent write landed during a rewrite: the test did not exercise the race")
	}
	t.Logf("%d rounds over %d files; %d agent writes landed in a rewrite and were kept, %d of them in a replaced file after the rewrite's look", rounds, files, repairs+late, late)
}

// agentWrite runs the agent's write in a goroutine, once the guard's
// rename window opens (kick) or after pause, whichever comes first. wait
// returns its error, and drains a kick the agent did not take (it went on
// its timer), so that the next round starts with none pending.
func agentWrite(kick chan struct{}, pause time.Duration, write func() error) (wait func() error) {
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-kick:
		case <-time.After(pause):
		}
		err = write()
	}()
	return func() error {
		wg.Wait()
		select {
		case <-kick:
		default:
		}
		return err
	}
}
