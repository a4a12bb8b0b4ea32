package markdown

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Diff.

// ChangeKind is what happened to an entry between two versions of a file.
type ChangeKind int

const (
	Added ChangeKind = iota + 1
	Changed
	Removed
)

// Change is one entry added, changed or removed between two versions of
// a file.
type Change struct {
	Kind ChangeKind
	Old  *Entry // Changed, Removed: the entry in the old content
	New  *Entry // Added, Changed: the entry in the new content
}

// Plan is what Diff found between two versions of a file: its changes, in
// new-file order, and where each sat in both versions, which Undo needs to
// put the old bytes back exactly. A Plan built by hand (Plan{Changes: …},
// as when a file is adopted and every entry is Added) has no old file to
// go by: Undo then places by its rules alone.
type Plan struct {
	Changes []Change
	hints   []*hint // hints[i] is Changes[i]'s; nil or short: none
}

// hint returns the hint of change i, nil when there is none.
func (p Plan) hint(i int) *hint {
	if i < len(p.hints) {
		return p.hints[i]
	}
	return nil
}

// Select returns the plan of the changes keep accepts, with their hints:
// what to undo of what Diff found.
func (p Plan) Select(keep func(i int, c Change) bool) Plan {
	var out Plan
	for i, c := range p.Changes {
		if keep(i, c) {
			out.Changes = append(out.Changes, c)
			out.hints = append(out.hints, p.hint(i))
		}
	}
	return out
}

// diffed is a change with its hint, as Diff builds them.
type diffed struct {
	Change
	hint *hint
}

// hint is where a change sits, as Diff saw both versions.
type hint struct {
	region, outer *span // the inner and the outer region it lies in
	// Changed, between two inner regions: those two. Where they hold no
	// change, their blank lines go back with the entry's old text.
	around [2]*span
	// Removed: the new-file counterparts of the nearest old neighbours in
	// the entry's section that are still in the file, and of the entries
	// right before and after it (nil if gone).
	after, before    *Entry
	prevNew, nextNew *Entry
	order            int // the entry's index in the old file: keeps neighbours in order
	run              int // the index of the first entry of its run
}

// region is the stretch of a file between two entries that are in both
// versions (outer regions: kept as they were; inner ones: also paired as
// Changed): when all changes in it are undone and the versions differ
// there only by entries and blank lines, Undo puts the region's old bytes
// back as they were, blank lines included.
type span struct {
	old      string   // the region in the old content ("" with oldOK false: not known)
	oldOK    bool     // the old content is known and only changes lie in the region
	oldLines []string // the region's old lines outside entries that are not blank
	from, to *Entry   // the new entries bounding it (nil: the content's start or end)
	// Bounded by a Changed pair (else by a kept entry or an end).
	fromChanged, toChanged bool
	changes                int
	news                   int // changes with a New entry
}

// Diff compares the entries of an old and a new version of one file.
//
// An entry whose Text is in both versions is not a change, also when it
// moved or is under another heading (duplicates are matched in order).
// First the longest order-keeping match of (Text, heading path) is found;
// its entries stay. Then entries with the same Text elsewhere are matched
// as moved. Between two kept entries, the removed and added entries of the
// same heading path are paired as Changed ("the same entry edited"): by
// position when both sides have as many and the file kept at least one
// entry (otherwise the file was rewritten and position means nothing),
// else by word similarity (Jaccard index of their Summary's words, Chinese
// and Japanese counted by character, at least 0.5), keeping their order.
// The rest are Added or Removed. Changes come in new-file order, a removed
// entry where it was (before what was added in its place).
func Diff(old, new []Entry) Plan { return DiffRelated(old, new, nil) }

// DiffRelated is Diff where entries that related reports to state one fact
// also pair as Changed when their words differ too much for the word
// similarity ("deploy region: us-east-1" edited to "deploy region is now
// us-west-2"): an edited value is an update of its entry's slot, not a
// removal and an addition. related gets the old and the new entry's
// Summary; nil relates nothing.
func DiffRelated(old, new []Entry, related func(oldSummary, newSummary string) bool) Plan {
	om, nm := make([]int, len(old)), make([]int, len(new))
	for i := range om {
		om[i] = -1
	}
	for j := range nm {
		nm[j] = -1
	}
	// 1. The longest order-keeping match of text and heading path.
	ids := map[string]int{}
	id := func(e *Entry) int {
		k := strconv.Itoa(len(e.Heading)) + "\n" + strings.Join(e.Heading, "\n") + "\n" + e.Text
		v, ok := ids[k]
		if !ok {
			v = len(ids)
			ids[k] = v
		}
		return v
	}
	a, b := make([]int, len(old)), make([]int, len(new))
	for i := range old {
		a[i] = id(&old[i])
	}
	for j := range new {
		b[j] = id(&new[j])
	}
	matchRuns(a, b, om, nm)
	anchor := make([]bool, len(old))
	for i, j := range om {
		anchor[i] = j >= 0
	}
	// 2. The same text elsewhere: moved, not changed.
	left := map[string][]int{}
	for i := range old {
		if om[i] < 0 {
			left[old[i].Text] = append(left[old[i].Text], i)
		}
	}
	for j := range new {
		if q := left[new[j].Text]; nm[j] < 0 && len(q) > 0 {
			om[q[0]], nm[j], left[new[j].Text] = j, q[0], q[1:]
		}
	}
	kept := slices.ContainsFunc(om, func(j int) bool { return j >= 0 })
	// 3. Changed pairs between consecutive kept entries.
	changed := make([]bool, len(old))
	pi, pj := -1, -1
	for i := 0; i <= len(old); i++ {
		if i < len(old) && !anchor[i] {
			continue
		}
		j := len(new)
		if i < len(old) {
			j = om[i]
		}
		for _, pr := range pairRange(old, new, om, nm, pi+1, i, pj+1, j, kept, related) {
			om[pr[0]], nm[pr[1]], changed[pr[0]] = pr[1], pr[0], true
		}
		pi, pj = i, j
	}
	// 4. Regions: outer ones between kept entries, inner ones also
	// between the Changed pairs that keep their order in both files.
	type pair struct{ i, j int }
	var anchors, all []pair
	for i, j := range om {
		if anchor[i] {
			anchors = append(anchors, pair{i, j})
		}
		if anchor[i] || changed[i] {
			all = append(all, pair{i, j})
		}
	}
	slices.SortFunc(all, func(x, y pair) int { return x.j - y.j })
	split := []pair{{-1, -1}}
	for _, p := range all {
		if p.i > split[len(split)-1].i {
			split = append(split, p)
		}
	}
	split = append(split, pair{len(old), len(new)})
	anchors = append(append([]pair{{-1, -1}}, anchors...), pair{len(old), len(new)})
	oldSrc := ""
	if len(old) > 0 {
		oldSrc = old[0].src
	}
	region := func(s0, s1 pair) *span {
		r := &span{oldOK: len(old) > 0}
		oldFrom, oldTo := 0, len(oldSrc)
		if s0.i >= 0 {
			oldFrom = old[s0.i].Start + len(old[s0.i].Text)
			r.from = &new[s0.j]
		}
		if s1.i < len(old) {
			oldTo = old[s1.i].Start
			r.to = &new[s1.j]
		}
		if oldFrom <= oldTo && oldTo <= len(oldSrc) {
			r.old = oldSrc[oldFrom:oldTo]
			r.oldLines = structLines(oldSrc, oldFrom, oldTo, old[s0.i+1:s1.i])
		} else {
			r.oldOK = false
		}
		// Only changes may lie in the region for its old bytes to be put
		// back: not a moved entry, nor one half of a pair split across
		// regions.
		for i := s0.i + 1; i < s1.i; i++ {
			if om[i] >= 0 && (!changed[i] || om[i] <= s0.j || om[i] >= s1.j) {
				r.oldOK = false
			}
		}
		for j := s0.j + 1; j < s1.j; j++ {
			if nm[j] >= 0 && (!changed[nm[j]] || nm[j] <= s0.i || nm[j] >= s1.i) {
				r.oldOK = false
			}
		}
		return r
	}
	outer := make([]*span, len(anchors)-1)
	for k := range outer {
		outer[k] = region(anchors[k], anchors[k+1])
	}
	// outerAt is the outer region from the last kept entry at or before
	// old entry i.
	outerAt := func(i int) *span {
		k, found := slices.BinarySearchFunc(anchors, i, func(p pair, i int) int { return p.i - i })
		if !found {
			k--
		}
		return outer[min(k, len(outer)-1)]
	}

	var out []diffed
	var prev *span // the inner region before split[k-1]
	for k := 1; k < len(split); k++ {
		s0, s1 := split[k-1], split[k]
		r, o := region(s0, s1), outerAt(s0.i)
		r.fromChanged = s0.i >= 0 && changed[s0.i]
		r.toChanged = s1.i < len(old) && changed[s1.i]
		if r.fromChanged {
			// The Changed pair emitted last, between prev and r.
			out[len(out)-1].hint.around = [2]*span{prev, r}
		}
		prev = r
		// In new-file order; between two Changed pairs, the removed
		// entries first (where they were), then the added ones.
		ri := s0.i + 1
		var added []diffed
		flush := func(upTo int) {
			for ; ri < upTo && ri < s1.i; ri++ {
				if om[ri] < 0 {
					h := removedHint(old, new, om, ri)
					h.region, h.outer = r, o
					out = append(out, diffed{Change{Kind: Removed, Old: &old[ri]}, h})
				}
			}
			out, added = append(out, added...), added[:0]
		}
		for j := s0.j + 1; j < s1.j; j++ {
			switch i := nm[j]; {
			case i < 0:
				added = append(added, diffed{Change{Kind: Added, New: &new[j]}, &hint{region: r, outer: o}})
			case changed[i]:
				flush(i)
				out = append(out, diffed{Change{Kind: Changed, Old: &old[i], New: &new[j]}, &hint{region: r, outer: o}})
			}
		}
		flush(s1.i)
		if s1.i < len(old) && changed[s1.i] {
			out = append(out, diffed{Change{Kind: Changed, Old: &old[s1.i], New: &new[s1.j]}, &hint{outer: o}})
		}
	}
	var plan Plan
	for _, c := range out {
		for _, r := range []*span{c.hint.region, c.hint.outer} {
			if r != nil {
				r.changes++
				if c.New != nil {
					r.news++
				}
			}
		}
		plan.Changes = append(plan.Changes, c.Change)
		plan.hints = append(plan.hints, c.hint)
	}
	return plan
}

// removedHint finds where the removed old[i] goes back: next to the
// nearest entry of its run (the entries around it with no blank line
// between, as a list) that is still in the file, before it or else after
// it; if the whole run is gone, after the nearest earlier entry of its
// section that is still there, or else before the nearest later one.
func removedHint(old, new []Entry, om []int, i int) *hint {
	h := &hint{order: i, run: i}
	for h.run > 0 && old[h.run-1].End == old[h.run].Start {
		h.run--
	}
	if i > 0 && om[i-1] >= 0 {
		h.prevNew = &new[om[i-1]]
	}
	if i+1 < len(old) && om[i+1] >= 0 {
		h.nextNew = &new[om[i+1]]
	}
	there := func(k int) *Entry {
		if om[k] >= 0 && slices.Equal(new[om[k]].Heading, old[i].Heading) {
			return &new[om[k]]
		}
		return nil
	}
	same := func(k int) bool { return slices.Equal(old[k].Heading, old[i].Heading) }
	for k := i - 1; k >= 0 && old[k].End == old[k+1].Start && same(k) && h.after == nil; k-- {
		h.after = there(k)
	}
	for k := i + 1; k < len(old) && old[k-1].End == old[k].Start && same(k) && h.after == nil && h.before == nil; k++ {
		h.before = there(k)
	}
	for k := i - 1; k >= 0 && same(k) && h.after == nil && h.before == nil; k-- {
		h.after = there(k)
	}
	for k := i + 1; k < len(old) && same(k) && h.after == nil && h.before == nil; k++ {
		h.before = there(k)
	}
	return h
}

// matchRuns finds a longest common subsequence of a and b, marking matched
// indices in om and nm. Past a size it falls back to a greedy in-order
// match, to bound memory.
func matchRuns(a, b []int, om, nm []int) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		om[p], nm[p] = p, p
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		om[len(a)-1-s], nm[len(b)-1-s] = len(b)-1-s, len(a)-1-s
		s++
	}
	x, y := a[p:len(a)-s], b[p:len(b)-s]
	if len(x) == 0 || len(y) == 0 {
		return
	}
	const maxCells = 1 << 22
	if (len(x)+1)*(len(y)+1) > maxCells {
		at := map[int][]int{}
		for j, v := range y {
			at[v] = append(at[v], j)
		}
		last := -1
		for i, v := range x {
			q := at[v]
			k, _ := slices.BinarySearch(q, last+1)
			if k < len(q) {
				last = q[k]
				om[p+i], nm[p+last] = p+last, p+i
			}
		}
		return
	}
	w := len(y) + 1
	dp := make([]int32, (len(x)+1)*w) // dp[i*w+j]: LCS of x[i:] and y[j:]
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				dp[i*w+j] = dp[(i+1)*w+j+1] + 1
			} else {
				dp[i*w+j] = max(dp[(i+1)*w+j], dp[i*w+j+1])
			}
		}
	}
	for i, j := 0, 0; i < len(x) && j < len(y); {
		switch {
		case x[i] == y[j]:
			om[p+i], nm[p+j] = p+j, p+i
			i++
			j++
		case dp[(i+1)*w+j] >= dp[i*w+j+1]:
			i++
		default:
			j++
		}
	}
}

// pairRange pairs the unmatched old entries in [i0, i1) with the unmatched
// new ones in [j0, j1) as Changed, section by section.
func pairRange(old, new []Entry, om, nm []int, i0, i1, j0, j1 int, kept bool, related func(string, string) bool) [][2]int {
	var os, ns []int
	for i := i0; i < i1; i++ {
		if om[i] < 0 {
			os = append(os, i)
		}
	}
	for j := j0; j < j1; j++ {
		if nm[j] < 0 {
			ns = append(ns, j)
		}
	}
	if len(os) == 0 || len(ns) == 0 {
		return nil
	}
	var out [][2]int
	for len(os) > 0 {
		h := old[os[0]].Heading
		var so, sn []int
		os = slices.DeleteFunc(os, func(i int) bool {
			if slices.Equal(old[i].Heading, h) {
				so = append(so, i)
				return true
			}
			return false
		})
		for _, j := range ns {
			if slices.Equal(new[j].Heading, h) {
				sn = append(sn, j)
			}
		}
		if len(sn) == 0 {
			continue
		}
		if kept && len(so) == len(sn) {
			for k := range so {
				out = append(out, [2]int{so[k], sn[k]})
			}
			continue
		}
		out = append(out, pairSimilar(old, new, so, sn, related)...)
	}
	return out
}

// pairSimilar pairs similar entries (Jaccard >= 0.5, or related) keeping
// their order: the most pairs, then the most similar.
func pairSimilar(old, new []Entry, so, sn []int, related func(string, string) bool) [][2]int {
	const maxCells = 1 << 16
	if len(so)*len(sn) > maxCells {
		return nil // a rewrite this large is adds and removes
	}
	to := make([]map[string]bool, len(so))
	for k, i := range so {
		to[k] = wordSet(old[i].Summary())
	}
	tn := make([]map[string]bool, len(sn))
	for k, j := range sn {
		tn[k] = wordSet(new[j].Summary())
	}
	type cell struct {
		n   int
		sim float64
	}
	better := func(x, y cell) bool { return x.n > y.n || x.n == y.n && x.sim > y.sim }
	w := len(sn) + 1
	dp := make([]cell, (len(so)+1)*w)
	sim := make([]float64, len(so)*len(sn))
	for x := len(so) - 1; x >= 0; x-- {
		for y := len(sn) - 1; y >= 0; y-- {
			best := dp[(x+1)*w+y]
			if c := dp[x*w+y+1]; better(c, best) {
				best = c
			}
			s := jaccard(to[x], tn[y])
			if s < 0.5 && related != nil && related(old[so[x]].Summary(), new[sn[y]].Summary()) {
				s = 0.5 // one fact: as similar as a pair must be
			}
			if s >= 0.5 {
				sim[x*len(sn)+y] = s
				c := dp[(x+1)*w+y+1]
				c.n++
				c.sim += s
				if better(c, best) {
					best = c
				}
			}
			dp[x*w+y] = best
		}
	}
	var out [][2]int
	for x, y := 0, 0; x < len(so) && y < len(sn); {
		cur := dp[x*w+y]
		if s := sim[x*len(sn)+y]; s > 0 {
			c := dp[(x+1)*w+y+1]
			c.n++
			c.sim += s
			if c == cur {
				out = append(out, [2]int{so[x], sn[y]})
				x++
				y++
				continue
			}
		}
		if dp[(x+1)*w+y] == cur {
			x++
		} else {
			y++
		}
	}
	return out
}

// wordSet is the set of words of a text, lower-cased; characters of
// scripts written without spaces count one each.
func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	word := strings.Builder{}
	flush := func() {
		if word.Len() > 0 {
			out[word.String()] = true
			word.Reset()
		}
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case wide(r) && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			flush()
			out[string(r)] = true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// structLines returns the lines of src[from:to] outside the given
// entries (which lie in that range) that are not blank: what must be the
// same in both versions for a region's old bytes to replace its new ones.
func structLines(src string, from, to int, entries []Entry) []string {
	var out []string
	add := func(s string) {
		for _, l := range strings.Split(s, "\n") {
			if !isBlank(l) {
				out = append(out, strings.TrimSuffix(l, "\r"))
			}
		}
	}
	at := from
	for _, e := range entries {
		if e.Start < at || e.End > to {
			return append(out, "\x00overlap") // cannot happen with entries from Parse
		}
		add(src[at:e.Start])
		at = e.End
	}
	add(src[at:to])
	return out
}
