package facts

import "testing"

// What the tables of package facts_test (the matcher with an embedder and
// with a model) need of the labelled set's harness.

// LabelledGroup is one group of testdata/labelled.txt.
type LabelledGroup struct {
	Line               int
	Kind, Memory, Text string
	Aside              bool
}

// LabelledGroups reads the labelled set.
func LabelledGroups(t *testing.T) []LabelledGroup {
	t.Helper()
	var out []LabelledGroup
	for _, g := range readGroups(t) {
		out = append(out, LabelledGroup{Line: g.line, Kind: g.kind, Memory: g.memory, Text: g.text, Aside: g.aside})
	}
	return out
}

// Variants returns normalised repeats of s.
func Variants(s string) []string { return variants(s) }

// Table tallies the tuned and the aside part as TestLabelledSet does.
type Table struct{ parts [2]tally }

// Add counts what a write of g was read as.
func (tb *Table) Add(g LabelledGroup, got Relation) {
	p := &tb.parts[0]
	if g.Aside {
		p = &tb.parts[1]
	}
	p.add(group{kind: g.Kind}, got)
}

// Log prints the table.
func (tb *Table) Log(t *testing.T) {
	t.Helper()
	logTable(t, tb.parts)
}

// Part is the figures of one part.
type Part struct {
	Repeats, RepeatsNoop, Handle, Handled, UpdatesLost, Distinct, Merged, Possible int
}

// Aside returns the figures of the aside part; Tuned those of the other.
func (tb *Table) Aside() Part { return tb.parts[1].part() }
func (tb *Table) Tuned() Part { return tb.parts[0].part() }

func (c tally) part() Part {
	return Part{c.repeats, c.repeatsNoop, c.handle, c.handled, c.updatesLost, c.distinct, c.merged, c.possible}
}
