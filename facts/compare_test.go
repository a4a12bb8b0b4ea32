package facts

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// group is one line of testdata/labelled.txt.
type group struct {
	line               int
	kind, memory, text string
	aside              bool
}

func readGroups(t *testing.T) []group {
	t.Helper()
	return readGroupsFile(t, "testdata/labelled.txt", 3)
}

// readGroupsFile reads a file of groups, of which the last of every n
// (the nth, 2nth …) is in the aside part.
func readGroupsFile(t *testing.T, path string, n int) []group {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []group
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "|")
		if len(parts) != 3 {
			t.Fatalf("%s:%d: want kind | memory | text, got %q", path, ln, line)
		}
		g := group{line: ln, kind: strings.TrimSpace(parts[0]), memory: strings.TrimSpace(parts[1]),
			text: strings.TrimSpace(parts[2]), aside: len(out)%n == n-1}
		switch g.kind {
		case "exact", "normalised", "paraphrase", "update", "distinct":
		default:
			t.Fatalf("%s:%d: unknown kind %q", path, ln, g.kind)
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// variants are normalised repeats of a text: what a client's recall and
// re-capture, or another writer, makes of it.
func variants(s string) []string {
	fullWidth := strings.Map(func(r rune) rune {
		if r > ' ' && r < 0x7f {
			return r + 0xFEE0
		}
		return r
	}, s)
	return []string{strings.ToUpper(s), strings.ToLower(s), "  " + strings.ReplaceAll(s, " ", "   ") + "\n",
		strings.TrimRight(s, ".。"), s + "!", fullWidth, strings.ReplaceAll(s, "a", "\u0430"), // Cyrillic а
		strings.ReplaceAll(s, "e", "e\u200b")}
}

// tally counts one part of the labelled set.
type tally struct {
	repeats, repeatsNoop       int // exact and normalised repeats; those found to be repeats
	handle, handled            int // paraphrases and updates; those found as what they are
	updatesLost                int // updates taken for repeats (a new value dropped)
	distinct, merged, possible int // distinct facts; those merged (repeat or update); those named possible
}

func (c *tally) add(g group, got Relation) {
	switch g.kind {
	case "exact", "normalised":
		c.repeats++
		if got == Repeat {
			c.repeatsNoop++
		}
	case "paraphrase":
		c.handle++
		if got == Repeat {
			c.handled++
		}
	case "update":
		c.handle++
		switch got {
		case Update:
			c.handled++
		case Repeat:
			c.updatesLost++
		}
	case "distinct":
		c.distinct++
		switch got {
		case Repeat, Update:
			c.merged++
		case Possible:
			c.possible++
		}
	}
}

// compare counts how Compare reads the group and, with show, logs a
// group read otherwise than its label says (a possible conflict is a
// right answer for distinct facts).
func (c *tally) compare(t *testing.T, g group, show bool) {
	t.Helper()
	got, why := Compare(g.text, g.memory)
	c.add(g, got)
	want := map[string]Relation{"exact": Repeat, "normalised": Repeat, "paraphrase": Repeat, "update": Update, "distinct": Distinct}[g.kind]
	if show && got != want && !(g.kind == "distinct" && got == Possible) {
		t.Logf("line %d (%s, aside %v): %q after %q: got %v (%s)", g.line, g.kind, g.aside, g.text, g.memory, got, why)
	}
}

func pct(n, d int) float64 {
	if d == 0 {
		return 100
	}
	return 100 * float64(n) / float64(d)
}

// logTable prints the figures of the tuned and the aside part.
func logTable(t *testing.T, parts [2]tally) {
	t.Helper()
	t.Logf("%-6s %8s %14s %10s %14s %10s %9s %9s", "part", "repeats", "repeat no-op", "para+upd", "handled", "upd lost", "distinct", "merged")
	for i, name := range []string{"tuned", "aside"} {
		c := parts[i]
		t.Logf("%-6s %8d %13.1f%% %10d %13.1f%% %10d %9d %8.1f%% (possible %d)", name, c.repeats, pct(c.repeatsNoop, c.repeats),
			c.handle, pct(c.handled, c.handle), c.updatesLost, c.distinct, pct(c.merged, c.distinct), c.possible)
	}
}

// TestLabelledSet measures Compare on the labelled set and prints the
// figures of each part (go test -v -run TestLabelledSet ./facts/). The
// targets (DESIGN §7) hold on the aside part, which Compare was never
// tuned on: repeats 100% no-op, paraphrases and updates ≥ 80% handled,
// distinct facts merged ≤ 1%, and no update ever taken for a repeat.
func TestLabelledSet(t *testing.T) {
	groups := readGroups(t)
	if len(groups) < 150 {
		t.Fatalf("%d groups; the set needs at least 150", len(groups))
	}
	var parts [2]tally // tuned on, aside
	for _, g := range groups {
		p := &parts[0]
		if g.aside {
			p = &parts[1]
		}
		p.compare(t, g, true)
		for _, v := range variants(g.memory) {
			got, _ := Compare(v, g.memory)
			p.add(group{kind: "normalised"}, got)
			if got != Repeat {
				t.Errorf("line %d: %q is a normalised repeat of %q, got %v", g.line, v, g.memory, got)
			}
		}
	}
	logTable(t, parts)
	aside := parts[1]
	if aside.repeatsNoop != aside.repeats {
		t.Errorf("aside: %d of %d repeats are no-ops; want all", aside.repeatsNoop, aside.repeats)
	}
	if p := pct(aside.handled, aside.handle); p < 80 {
		t.Errorf("aside: %.1f%% of paraphrases and updates handled; want at least 80%%", p)
	}
	// The target is at most 1% of distinct facts merged. On the aside
	// part one group of 49 was merged (2.0%) until a value's head became
	// its last word (2026-12-04); none is now, and none may be.
	if aside.merged > 0 {
		t.Errorf("aside: %d distinct facts merged (%.1f%%); none was when the head became the last word", aside.merged, pct(aside.merged, aside.distinct))
	}
	if p := pct(parts[0].merged, parts[0].distinct); p > 1 {
		t.Errorf("tuned: %.1f%% of distinct facts merged; want at most 1%%", p)
	}
	for i, c := range parts {
		if c.updatesLost > 0 {
			t.Errorf("part %d: %d updates taken for repeats (a new value would be dropped)", i, c.updatesLost)
		}
	}
}

// TestBlindSet measures Compare on testdata/blind.txt, 400 groups written
// by someone who read neither Compare nor the labelled set (its header
// says how). Every second group is aside: Compare may be tuned on the
// others, never on those. Both parts are printed; the aside part is held
// to its figures when the set was added (blindHeld), so that a change can
// only improve them.
func TestBlindSet(t *testing.T) {
	var parts [2]tally
	for _, g := range readGroupsFile(t, "testdata/blind.txt", 2) {
		p := &parts[0]
		if g.aside {
			p = &parts[1]
		}
		p.compare(t, g, !g.aside) // the aside half's lines are not read
	}
	logTable(t, parts)
	aside := parts[1]
	if aside.repeatsNoop != aside.repeats || aside.updatesLost > 0 {
		t.Errorf("aside: %d of %d repeats no-ops, %d updates lost; want all, none", aside.repeatsNoop, aside.repeats, aside.updatesLost)
	}
	if aside.handled < blindHeld.handled || aside.merged > blindHeld.merged {
		t.Errorf("aside got worse: %d paraphrases and updates handled (was %d), %d distinct facts merged (was %d)",
			aside.handled, blindHeld.handled, aside.merged, blindHeld.merged)
	}
}

// blindHeld are the aside part's figures of testdata/blind.txt when the
// set was added (2026-12-04): raise handled, lower merged as Compare
// improves; never the other way.
// (Change verbs as relations, a number changed in the same words, and a
// value's head as its last word took it from 19 handled and 4 merged.)
var blindHeld = struct{ handled, merged int }{handled: 30, merged: 1}

// TestNumbersChanged: the same words with another number are a new value
// only where the writer says it changed and the number is the value, not
// what names the thing.
func TestNumbersChanged(t *testing.T) {
	for _, tc := range []struct {
		memory, text string
		want         Relation
	}{
		{"The user wakes up at 6 am.", "The user now wakes up at 7:30 am.", Update},
		{"用户每天早上七点起床。", "用户现在每天早上六点起床。", Update},
		{"Bob jogs 5 km.", "Bob now jogs 8 km.", Update},
		{"I keep plant number 0 on the windowsill.", "I keep plant number 1 on the windowsill.", Possible}, // two plants
		{"The user wakes up at 6 am.", "The user wakes up at 7:30 am.", Possible},                          // no word says it changed
		{"Room 101 is booked.", "Room 102 is now booked.", Possible},
		{"The meeting on March 3 is at 10.", "The meeting on March 5 is now at 10.", Possible},
	} {
		if got, why := Compare(tc.text, tc.memory); got != tc.want {
			t.Errorf("%q after %q: %v (%s), want %v", tc.text, tc.memory, got, why, tc.want)
		}
	}
}
