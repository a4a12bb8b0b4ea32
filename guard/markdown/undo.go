package markdown

import (
	"bytes"
	"slices"
	"strings"
)

// Undo returns content (whose entries are now, i.e. Parse(content)) with
// the plan's changes (from Diff(old, now), or Select of it) undone and
// nothing else touched:
//
//   - An Added entry is taken out with the blank line that set it off
//     (see Remove).
//   - A Changed entry's Old.Text is put in place of its New text; the
//     line ending stays.
//   - A Removed entry is put back next to the nearest entry of its run in
//     the old file (the entries around it with no blank line between: its
//     list) that is still in the file, also changed: after one before it,
//     else before one after it. If its whole run is gone: after the
//     nearest earlier entry of its section that is still there, else
//     before the nearest later one, else at the end of its section (after
//     its last entry that stays) if the file has that heading, else at
//     the end of the file (no heading is made). Entries put back in one
//     place keep their old order and what separated them.
//   - Blank lines around an entry put back are as in the old file where it
//     comes next to the same line as there; elsewhere an item next to an
//     item joins the list and other blocks are set off by blank lines. No
//     undo glues two blocks into one (a blank line stays or is added) or
//     gives a file without a final newline one.
//
// When every change between two entries kept in both versions is undone
// and the versions differ there only by entries and blank lines, that
// stretch gets its old bytes back, so undoing all changes of such a pair
// of versions gives the old content byte for byte. Diff learns the old
// bytes from the old entries: for an old file without any, the rules above
// apply alone, as they do for changes not made by Diff. Changes whose
// entry is not in content are skipped.
func Undo(content []byte, now []Entry, plan Plan) []byte {
	src := string(content)
	claimed := map[int]bool{} // now entries (by Start) that a change stands for
	// at finds e in now where Diff saw it; byText finds it by text if it moved
	// (content is not the one Diff saw), not taking one a change claimed.
	at := func(e *Entry) *Entry {
		k, found := slices.BinarySearchFunc(now, e.Start, func(x Entry, s int) int { return x.Start - s })
		if found && now[k].Text == e.Text {
			return &now[k]
		}
		return nil
	}
	byText := func(e *Entry, claim bool) *Entry {
		if x := at(e); x != nil && (!claim || !claimed[x.Start]) {
			return x
		}
		for k := range now {
			if now[k].Text == e.Text && (!claim || !claimed[now[k].Start]) {
				return &now[k]
			}
		}
		return nil
	}
	var list []todo
	seen := map[[3]any]bool{}
	for i, c := range plan.Changes {
		if c.Kind < Added || c.Kind > Removed || c.Kind != Added && c.Old == nil || c.Kind != Removed && c.New == nil {
			continue
		}
		key := [3]any{c.Kind, c.Old, c.New}
		if seen[key] {
			continue
		}
		seen[key] = true
		t := todo{c: c, h: plan.hint(i)}
		if c.New != nil {
			if t.cur = byText(c.New, true); t.cur == nil {
				continue // not in the file: nothing to undo
			}
			claimed[t.cur.Start] = true
		}
		list = append(list, t)
	}

	var edits []byteEdit
	done := make([]bool, len(list))
	// Whole regions first: outer ones, then inner ones.
	restored := map[*span]bool{}
	levels := []func(*hint) *span{
		func(h *hint) *span { return h.outer },
		func(h *hint) *span { return h.region },
	}
	for _, level := range levels {
		var regions []*span
		byRegion := map[*span][]int{}
		for k, t := range list {
			if done[k] || t.h == nil || level(t.h) == nil {
				continue
			}
			r := level(t.h)
			if byRegion[r] == nil {
				regions = append(regions, r)
			}
			byRegion[r] = append(byRegion[r], k)
		}
		for _, r := range regions {
			if ks := byRegion[r]; r.oldOK && len(ks) == r.changes {
				if ed, ok := regionEdit(src, now, r, ks, list, at); ok {
					restored[r] = true
					ed.order = slices.Min(ks)
					edits = append(edits, ed)
					for _, k := range ks {
						done[k] = true
					}
				}
			}
		}
	}
	// The blank lines next to an entry whose old text goes back, where
	// no other change lies and the entry on the other side is as it was.
	undoneAt := map[int]bool{}
	for _, t := range list {
		if t.c.Kind == Changed {
			undoneAt[t.cur.Start] = true
		}
	}
	asWas := func(e *Entry, changed bool) bool {
		if !changed {
			return true
		}
		x := at(e)
		return x != nil && undoneAt[x.Start]
	}
	seen = map[[3]any]bool{}
	for k, t := range list {
		if done[k] || t.c.Kind != Changed || t.h == nil {
			continue
		}
		for _, r := range t.h.around {
			if r == nil || r.changes != 0 || !r.oldOK || seen[[3]any{r}] ||
				!asWas(r.from, r.fromChanged) || !asWas(r.to, r.toChanged) {
				continue
			}
			seen[[3]any{r}] = true
			if ed, ok := regionEdit(src, now, r, nil, list, at); ok {
				restored[r] = true
				ed.order = k
				edits = append(edits, ed)
			}
		}
	}
	// Then each change on its own.
	// A removed entry goes back among the entries that stay.
	removing := map[int]bool{}
	for k, t := range list {
		if t.c.Kind == Added && !done[k] {
			removing[t.cur.Start] = true
		}
	}
	staying := slices.DeleteFunc(slices.Clone(now), func(e Entry) bool { return removing[e.Start] })
	doc := &document{src: src, entries: staying}
	var oldSrc string // the old file of the last removed entry, as bytes
	var oldBytes []byte
	var headings []headingNode // parsed only when needed
	parsed := false
	for k, t := range list {
		if done[k] {
			continue
		}
		switch t.c.Kind {
		case Added:
			edits = append(edits, byteEdit{pos: t.cur.Start, end: t.cur.End, op: removeOp, order: k})
		case Changed:
			ed := byteEdit{pos: t.cur.Start, end: t.cur.Start + len(t.cur.Text), op: replaceBlockOp, text: t.c.Old.Text, order: k}
			if h := t.h; h != nil {
				ed.keepBefore, ed.keepAfter = restored[h.around[0]], restored[h.around[1]]
			}
			edits = append(edits, ed)
		case Removed:
			ed := byteEdit{op: insertOp, text: t.c.Old.Text, order: len(list) + k, old: t.c.Old}
			var after, before, near *Entry // near: the entry it goes next to
			if h := t.h; h != nil {
				ed.order = h.order
				if h.after != nil {
					after = byText(h.after, false)
				}
				if after == nil && h.before != nil {
					before = byText(h.before, false)
				}
			}
			switch {
			case after != nil:
				ed.pos, near = after.End, after
			case before != nil:
				ed.pos, near = before.Start, before
			default:
				if !parsed {
					headings, parsed = parseDocument(content).headings, true
				}
				doc.headings = headings
				if ed.pos, near = doc.sectionEnd(t.c.Old.Heading); ed.pos < 0 {
					ed.pos, near = len(content), nil
					if len(staying) > 0 {
						near = &staying[len(staying)-1]
					}
				}
			}
			// Set off as in the old file where it comes next to the same
			// line as there; else an item next to an item joins the list,
			// and other blocks get blank lines.
			item := t.c.Old.Kind == ItemBlock || t.c.Old.Kind == 0 && itemText(t.c.Old.Text)
			nowPrev, _ := prevText(content, ed.pos)
			nowNext, _ := nextText(content, ed.pos)
			ed.blankBefore = !item || near == nil || near.Kind != ItemBlock || near.Start >= ed.pos
			ed.blankAfter = !item || !isListMarker(nowNext)
			if t.h != nil {
				ed.run = t.h.run
			}
			if old := t.c.Old; old.src != "" && old.End <= len(old.src) {
				if old.src != oldSrc {
					oldSrc, oldBytes = old.src, []byte(old.src)
				}
				// The same neighbour: the entry that was right next to it
				// (perhaps edited), or the same line.
				var prevE *Entry
				if h := t.h; h != nil {
					prevE = h.prevNew
				}
				prevSame := false
				if prevE != nil {
					if x := at(prevE); x != nil && x.End == ed.pos {
						prevSame = true
					}
				}
				if prev, gap := prevText(oldBytes, old.Start); prevSame || prev == nowPrev {
					ed.blankBefore = gap
				}
				// What comes after it is known when it is put in (the
				// edits after it are made by then).
				ed.oldNext, ed.oldGapAfter = nextText(oldBytes, old.End)
				ed.known = true
			}
			ed.item = item
			edits = append(edits, ed)
		}
	}
	// The file's line ending; for a file without one, the old file's.
	nl := newlineOf(content)
	if bytes.IndexByte(content, '\n') < 0 {
		for _, t := range list {
			if t.c.Old != nil && strings.Contains(t.c.Old.src, "\n") {
				nl = newlineOf([]byte(t.c.Old.src))
				break
			}
		}
	}
	return applyEdits(content, groupInserts(edits, nl), nl)
}

// todo is a change to undo, with its New entry as found in the content.
type todo struct {
	c   Change
	h   *hint // where Diff saw it; nil for a change built by hand
	cur *Entry
}

// regionEdit puts a region's old bytes back in place of its new ones,
// if the entries in it now are those of its changes (ks, all undone) and
// its other lines that are not blank are as they were.
func regionEdit(content string, now []Entry, r *span, ks []int, list []todo, at func(*Entry) *Entry) (byteEdit, bool) {
	from, to := 0, len(content)
	if r.from != nil {
		e := at(r.from)
		if e == nil {
			return byteEdit{}, false
		}
		from = e.Start + len(e.Text)
	}
	if r.to != nil {
		e := at(r.to)
		if e == nil {
			return byteEdit{}, false
		}
		to = e.Start
	}
	if from > to {
		return byteEdit{}, false
	}
	mine := map[int]bool{}
	for _, k := range ks {
		if list[k].cur != nil {
			mine[list[k].cur.Start] = true
		}
	}
	lo, _ := slices.BinarySearchFunc(now, from, func(e Entry, at int) int { return e.Start - at })
	hi, _ := slices.BinarySearchFunc(now, to, func(e Entry, at int) int { return e.Start - at })
	inside := now[lo:max(lo, hi)]
	if len(inside) != r.news || slices.ContainsFunc(inside, func(e Entry) bool { return !mine[e.Start] }) ||
		!slices.Equal(structLines(content, from, to, inside), r.oldLines) {
		return byteEdit{}, false
	}
	return byteEdit{pos: from, end: to, op: replaceOp, text: r.old}, true
}

// groupInserts joins entries put back at one position into one block,
// with what separated them in the old file (if only line ends and blank
// lines, else one blank line), so that a list put back stays a list.
func groupInserts(edits []byteEdit, nl string) []byteEdit {
	slices.SortStableFunc(edits, func(x, y byteEdit) int {
		if x.pos != y.pos {
			return x.pos - y.pos
		}
		return x.order - y.order
	})
	var out []byteEdit
	for _, ed := range edits {
		if n := len(out); n > 0 && ed.op == insertOp && ed.old != nil {
			prev := &out[n-1]
			if prev.op == insertOp && prev.old != nil && prev.pos == ed.pos && prev.old.src == ed.old.src {
				sep := nl + nl
				if from := prev.old.Start + len(prev.old.Text); from <= ed.old.Start && ed.old.Start <= len(ed.old.src) &&
					strings.Trim(ed.old.src[from:ed.old.Start], " \t\r\n\v\f") == "" {
					sep = ed.old.src[from:ed.old.Start]
				} else if prev.run == ed.run && prev.known && ed.known {
					sep = nl // of one list, whose entries between stay out
				}
				prev.text += sep + ed.text
				prev.blankAfter, prev.old = ed.blankAfter, ed.old
				prev.oldNext, prev.oldGapAfter, prev.known = ed.oldNext, ed.oldGapAfter, prev.known && ed.known
				prev.item = ed.item
				continue
			}
		}
		out = append(out, ed)
	}
	return out
}

// prevText returns the last line before pos (a line start) that is not
// blank ("" at the start of the file), and whether blank lines lie
// between.
func prevText(b []byte, pos int) (string, bool) {
	gap := false
	for {
		l, ok := lineBefore(b, pos)
		if !ok {
			return "", gap
		}
		if !isBlank(l) {
			return l, gap
		}
		gap, pos = true, lineStart(b, pos)
	}
}

// nextText returns the first line from pos on that is not blank ("" at
// the end of the file), and whether blank lines lie before it.
func nextText(b []byte, pos int) (string, bool) {
	gap := false
	for {
		l, ok := lineAt(b, pos)
		if !ok {
			return "", gap
		}
		if !isBlank(l) {
			return l, gap
		}
		gap, pos = true, pos+len(l)+1
	}
}

func itemText(text string) bool {
	first, _, _ := strings.Cut(text, "\n")
	return isListMarker(first) && !thematicBreak(first)
}

type editOp int

const (
	replaceOp      editOp = iota // put text in place of [pos, end)
	replaceBlockOp               // put text in place of an entry's text [pos, end), kept apart from its neighbours
	removeOp                     // take the block [pos, end) out with its blank line
	insertOp                     // put text in at pos as a block
)

type byteEdit struct {
	pos, end int
	op       editOp
	text     string
	order    int // among inserts at one position: ascending in the result

	// Insert: a blank line wanted before and after it, and the old entry
	// it puts back. If known, the blank line after it is as in the old
	// file where the same line follows (oldNext, oldGapAfter), else an
	// item next to an item joins the list.
	blankBefore, blankAfter bool
	keepBefore, keepAfter   bool // replace block: see replaceBlock
	old                     *Entry
	item, known             bool
	oldNext                 string
	oldGapAfter             bool
	run                     int
}

// applyEdits applies edits from the end of the content backwards, so that
// each one's offsets still hold, and each removal or insertion sees the
// blank lines around it as the later edits left them.
func applyEdits(content []byte, edits []byteEdit, nl string) []byte {
	slices.SortStableFunc(edits, func(x, y byteEdit) int {
		if x.pos != y.pos {
			return y.pos - x.pos
		}
		if (x.end > x.pos) != (y.end > y.pos) {
			if x.end > x.pos {
				return -1 // a span starting here before an insert here
			}
			return 1
		}
		return y.order - x.order
	})
	buf := slices.Clone(content)
	limit := len(buf) // the lowest offset edited so far: edits must not reach past it
	for _, ed := range edits {
		if ed.pos > limit {
			if ed.op != insertOp {
				continue // overlapping changes: only the first applies
			}
			ed.pos = limit // its place went with the edit after it (a line ending at the end)
		}
		if ed.op != insertOp && ed.end > limit {
			if ed.op != removeOp || limit <= ed.pos {
				continue
			}
			ed.end = limit // its last line ending went with the block after it
		}
		low := ed.pos
		switch ed.op {
		case replaceOp:
			buf = slices.Concat(buf[:ed.pos:ed.pos], []byte(ed.text), buf[ed.end:])
		case replaceBlockOp:
			buf = replaceBlock(buf, ed.pos, ed.end, ed.text, nl, ed.keepBefore, ed.keepAfter)
		case removeOp:
			buf, low = removeBlock(buf, ed.pos, ed.end, nl)
		case insertOp:
			if ed.known {
				next, _ := nextText(buf, ed.pos)
				ed.blankAfter = !ed.item || !isListMarker(next)
				if next == ed.oldNext {
					ed.blankAfter = ed.oldGapAfter
				}
			}
			buf = insertBlock(buf, ed.pos, ed.text, ed.blankBefore, ed.blankAfter, nl)
		}
		limit = low
	}
	return buf
}

// newlineOf is the file's line ending: that of its first line ("\n" if
// it has none).
func newlineOf(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i > 0 && b[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// lineBefore returns the line that ends at pos (a line start, or the
// end of b), if any.
func lineBefore(b []byte, pos int) (string, bool) {
	if pos <= 0 || pos > len(b) {
		return "", false
	}
	end := pos
	if b[end-1] == '\n' {
		end--
	}
	return string(b[lineStart(b, pos):end]), true
}

// lineStart is where the line that ends at pos starts.
func lineStart(b []byte, pos int) int {
	end := pos
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	return bytes.LastIndexByte(b[:end], '\n') + 1
}

// lineAt returns the line that starts at pos, if any.
func lineAt(b []byte, pos int) (string, bool) {
	if pos >= len(b) {
		return "", false
	}
	end := bytes.IndexByte(b[pos:], '\n')
	if end < 0 {
		return string(b[pos:]), true
	}
	return string(b[pos : pos+end]), true
}

// removeBlock takes the block [start, end) out of b (start a line start,
// end past its newline or the end), with the blank line that set it off:
// one between two blocks stays, none is left at the start or end of the
// file, and a list stays a list. If that would join two blocks of text
// into one, a blank line stays in its place. A file without a final
// newline stays so.
// It returns the new content and the lowest offset it changed.
func removeBlock(b []byte, start, end int, nl string) ([]byte, int) {
	ps := start // start of the blank lines before the block
	for {
		l, ok := lineBefore(b, ps)
		if !ok || !isBlank(l) {
			break
		}
		ps = lineStart(b, ps)
	}
	ne := end // end of the blank lines after it
	for {
		l, ok := lineAt(b, ne)
		if !ok || !isBlank(l) {
			break
		}
		ne += len(l)
		if ne < len(b) {
			ne++
		}
	}
	blankBefore, blankAfter, atEnd := ps < start, ne > end, ne >= len(b)
	cut := func(s, e int) ([]byte, int) {
		if e == len(b) && e > 0 && b[e-1] != '\n' && s > 0 {
			// The last line, without a final newline: so stays the file.
			s--
			if s > 0 && b[s-1] == '\r' {
				s--
			}
		}
		return slices.Concat(b[:s:s], b[e:]), s
	}
	switch {
	case blankBefore && (blankAfter || atEnd):
		return cut(ps, end)
	case start == 0 && blankAfter:
		return cut(start, ne)
	case !blankBefore && !blankAfter && start > 0 && !atEnd:
		prev, _ := lineBefore(b, start)
		next, _ := lineAt(b, end)
		if continues(prev, next) {
			return slices.Concat(b[:start:start], []byte(nl), b[end:]), start
		}
	}
	return cut(start, end)
}

// insertBlock puts text in at pos (a line start, or the end) as a block
// of its own, with a blank line before and after it if wanted (and not
// there yet), and also where the text would otherwise run on into the
// block above or below. At the end of a file without a final newline the
// text comes after a newline and the file still has no final newline.
func insertBlock(b []byte, pos int, text string, blankBefore, blankAfter bool, nl string) []byte {
	pos = min(pos, len(b))
	pre, end, post := "", nl, ""
	if pos == len(b) && len(b) > 0 && b[len(b)-1] != '\n' {
		// A file without a final newline stays so: the newline goes
		// before the text.
		pre, end = nl, ""
	}
	if l, ok := lineAt(b, pos); ok && blankBefore && isBlank(l) && pre == "" {
		pos += len(l) + 1 // below the blank line there: it sets the text off
		pos = min(pos, len(b))
	}
	first, _, _ := strings.Cut(text, "\n")
	last := text[strings.LastIndexByte(text, '\n')+1:]
	if l, ok := lineBefore(b, pos); ok && !isBlank(l) && (blankBefore || continues(l, first)) {
		pre += nl
	}
	if l, ok := lineAt(b, pos); ok && !isBlank(l) && (blankAfter || continues(last, l)) {
		post = nl
	}
	return slices.Concat(b[:pos:pos], []byte(pre+text+end+post), b[pos:])
}

// replaceBlock puts text in place of the entry text b[start:end] (its
// line ending stays), with a blank line before or after it where it
// would otherwise run on into the block above or below (a paragraph in
// place of an item in a list).
// keepBefore and keepAfter leave out the check on that side (the block
// there is being put back as it was, next to this text).
func replaceBlock(b []byte, start, end int, text, nl string, keepBefore, keepAfter bool) []byte {
	pre, post := "", ""
	first, _, _ := strings.Cut(text, "\n")
	last := text[strings.LastIndexByte(text, '\n')+1:]
	if l, ok := lineBefore(b, start); ok && !keepBefore && continues(l, first) {
		pre = nl
	}
	next := len(b) // past the entry's line ending
	if i := bytes.IndexByte(b[end:], '\n'); i >= 0 {
		next = end + i + 1
		if l, ok := lineAt(b, next); ok && !keepAfter && continues(last, l) {
			post = nl
		}
	}
	return slices.Concat(b[:start:start], []byte(pre+text), b[end:next], []byte(post), b[next:])
}

// continues reports whether line next, right below line prev, would be
// read as part of prev's block (or make it a setext heading).
func continues(prev, next string) bool {
	if isBlank(prev) || isBlank(next) || aTX(prev) > 0 || thematicBreak(prev) || setextLevel(prev) > 0 || fenceOpener(prev) {
		return false
	}
	return !interrupts(next) || setextLevel(next) > 0
}
