package guard

// The Markdown side of the guard, without any I/O: a memory file is split
// into entries (Parse), two versions are compared entry by entry (Diff),
// chosen changes are undone in the file with every other byte left as it is
// (Undo), and single entries are put in, replaced or taken out (Insert,
// Replace, Remove).
//
// This is a block splitter, not a renderer. It follows CommonMark where
// that decides what a reader (or an agent reading the raw file) takes as
// one piece of text, and is simpler elsewhere:
//
//   - A list item ("- ", "* ", "+ ", "1. ", "1) ", task items too) is an
//     entry with its continuation lines: lines indented at least to the
//     item's text, lazy (unindented) lines that continue its text, and
//     indented paragraphs or fenced code after blank lines. A nested item
//     is an entry of its own; its parent's text ends before it. Any list
//     marker line starts a new entry, also one that would continue a
//     paragraph. A paragraph indented under an item but after a nested item
//     is an entry of its own (not glued back to its parent).
//   - A paragraph is an entry: lines up to a blank line or a line that
//     starts another block.
//   - A fenced code block (``` or ~~~, unclosed: to the end) is one entry,
//     kept whole; inside a list item it belongs to the item.
//   - A table (a header row and a delimiter row) is one entry; so is a
//     block quote (its ">" lines and lazy lines up to a blank line).
//   - An HTML comment block (a line starting "<!--", to the line holding
//     "-->", or to the end) is an entry, and so is YAML front matter (---
//     on the first line to the next --- or ...): an agent reads the raw
//     file, so text there is memory it loads and must be governed too.
//   - Headings (ATX "#".."######", and setext: a paragraph underlined
//     with === or ---), thematic breaks and blank lines are not entries.
//     Headings give the entries below them their heading path.

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BlockKind is the kind of Markdown block an entry is. Entries built by
// hand may leave it 0.
type BlockKind int

const (
	ParagraphBlock BlockKind = iota + 1
	ItemBlock
	CodeBlock
	TableBlock
	QuoteBlock
	CommentBlock
	FrontMatterBlock
)

// Entry is one Markdown block of a memory file (see the rules above).
type Entry struct {
	Text    string   // the block's bytes as in the file, without its final newline
	Heading []string // heading path, outermost first (shared by the entries of a section: do not modify)
	Line    int      // 1-based line of the block's first line
	Start   int      // byte offset of the block's first byte in the content
	End     int      // byte offset just past the block's last newline (or the content's end)
	Kind    BlockKind

	// src is the whole content the entry was parsed from (one string shared
	// by all entries of a Parse): Diff records from it what lay around a
	// change, so that Undo can put the old bytes back exactly.
	src string
}

// Summary is the entry as a memory's text: for items, paragraphs, quotes
// and comments the markup around the text (list marker and task box, ">",
// "<!--" "-->") removed and the lines joined with single spaces (no space
// between two lines when both sides are Chinese, Japanese or Korean
// text, which wraps without spaces); for code blocks, tables and front
// matter the block's lines as they are, LF-terminated and trimmed, since
// joining them would lose their meaning.
func (e Entry) Summary() string {
	text := strings.ReplaceAll(e.Text, "\r\n", "\n")
	switch e.Kind {
	case CodeBlock, TableBlock, FrontMatterBlock:
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " \t\r")
		}
		return strings.TrimSpace(strings.Join(lines, "\n"))
	}
	lines := strings.Split(text, "\n")
	switch e.Kind {
	case QuoteBlock:
		for i, l := range lines {
			l = strings.TrimLeft(l, " \t")
			if strings.HasPrefix(l, ">") {
				l = l[1:]
			}
			lines[i] = l
		}
	case CommentBlock:
		text = strings.TrimSpace(text)
		text = strings.TrimPrefix(text, "<!--")
		if i := strings.LastIndex(text, "-->"); i >= 0 {
			text = text[:i] + text[i+3:]
		}
		lines = strings.Split(text, "\n")
	default: // items, paragraphs, and entries built by hand (Kind 0)
		if _, mk, ok := mdListMarker(lines[0]); ok && !mdThematicBreak(lines[0]) {
			first := strings.TrimLeft(lines[0][mk:], " \t")
			for _, box := range []string{"[ ]", "[x]", "[X]"} {
				if rest, found := strings.CutPrefix(first, box); found && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
					first = rest
					break
				}
			}
			lines[0] = first
		}
	}
	return mdJoinLines(lines)
}

// mdJoinLines joins lines into one, each line's white space runs folded
// into single spaces.
func mdJoinLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			last, _ := utf8.DecodeLastRuneInString(b.String())
			first, _ := utf8.DecodeRuneInString(l)
			if !mdWide(last) || !mdWide(first) {
				b.WriteByte(' ')
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// mdWide reports runes of scripts written without spaces between words.
func mdWide(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r >= 0x3000 && r <= 0x303F || r >= 0xFF00 && r <= 0xFFEF
}

// Parse splits content into entries, in file order. Any bytes parse:
// invalid UTF-8 is kept as it is, CRLF line endings are recognised (Text
// keeps the inner ones, its final newline is left out either way), and a
// UTF-8 byte order mark at the start belongs to no entry.
func Parse(content []byte) []Entry {
	return mdParse(content).entries
}

// mdDoc is a parsed file: its entries and its headings.
type mdDoc struct {
	src      string
	entries  []Entry
	headings []mdHeading
}

type mdHeading struct {
	path       []string
	level      int
	start, end int // the heading's lines, end past the last newline
}

type mdLine struct {
	start, end int    // the line's bytes, end past its newline
	text       string // without its newline (and the CR before it)
}

func mdSplitLines(src string) []mdLine {
	ls := make([]mdLine, 0, strings.Count(src, "\n")+1)
	for s := 0; s < len(src); {
		end, te := len(src), len(src)
		if i := strings.IndexByte(src[s:], '\n'); i >= 0 {
			end, te = s+i+1, s+i
			if te > s && src[te-1] == '\r' {
				te--
			}
		}
		ls = append(ls, mdLine{start: s, end: end, text: src[s:te]})
		s = end
	}
	if len(ls) > 0 && strings.HasPrefix(ls[0].text, "\ufeff") {
		ls[0].start += 3
		ls[0].text = ls[0].text[3:]
	}
	return ls
}

type mdParser struct {
	mdDoc
	lines []mdLine
	stack []mdHeading // open headings, outermost first
	path  []string
}

func mdParse(content []byte) *mdDoc {
	p := &mdParser{mdDoc: mdDoc{src: string(content)}}
	p.lines = mdSplitLines(p.src)
	p.run()
	return &p.mdDoc
}

func (p *mdParser) run() {
	ls := p.lines
	i := p.frontMatter()
	for i < len(ls) {
		t := ls[i].text
		switch {
		case mdBlank(t):
			i++
		case mdCommentStart(t):
			i = p.comment(i)
		case mdATX(t) > 0:
			level, text := mdATXHeading(t)
			p.heading(level, text, i, i)
			i++
		case mdFenceOpener(t):
			i = p.block(i, p.skipFence(i), CodeBlock)
		case mdThematicBreak(t):
			i++
		case mdIsListMarker(t):
			i = p.item(i)
		case mdQuoteStart(t):
			i = p.quote(i)
		case i+1 < len(ls) && mdTableStart(t, ls[i+1].text):
			i = p.table(i)
		default:
			i = p.paragraph(i)
		}
	}
}

// block emits lines first..last-1 as an entry and returns last. Blank
// lines at its end (of a fence or comment left open to the end of the
// file) are not part of it.
func (p *mdParser) block(first, last int, kind BlockKind) int {
	end := last - 1
	for end > first && mdBlank(p.lines[end].text) {
		end--
	}
	start, l := p.lines[first].start, p.lines[end]
	p.entries = append(p.entries, Entry{
		Text: p.src[start : l.start+len(l.text)], Heading: p.path,
		Line: first + 1, Start: start, End: l.end, Kind: kind, src: p.src,
	})
	return last
}

func (p *mdParser) heading(level int, text string, first, last int) {
	for len(p.stack) > 0 && p.stack[len(p.stack)-1].level >= level {
		p.stack = p.stack[:len(p.stack)-1]
	}
	path := make([]string, 0, len(p.stack)+1)
	for _, h := range p.stack {
		path = append(path, h.path[len(h.path)-1])
	}
	// Clipped, so that an append by a caller copies instead of writing
	// into the path the next entries share.
	p.path = slices.Clip(append(path, text))
	h := mdHeading{path: p.path, level: level, start: p.lines[first].start, end: p.lines[last].end}
	p.stack = append(p.stack, h)
	p.headings = append(p.headings, h)
}

// frontMatter emits the YAML front matter, if any, and returns the line
// after it.
func (p *mdParser) frontMatter() int {
	if len(p.lines) == 0 || strings.TrimRight(p.lines[0].text, " \t") != "---" {
		return 0
	}
	for j := 1; j < len(p.lines); j++ {
		if t := strings.TrimRight(p.lines[j].text, " \t"); t == "---" || t == "..." {
			return p.block(0, j+1, FrontMatterBlock)
		}
	}
	return 0 // no end: a thematic break
}

func (p *mdParser) comment(i int) int {
	_, ind := mdIndent(p.lines[i].text)
	if strings.Contains(p.lines[i].text[ind+4:], "-->") {
		return p.block(i, i+1, CommentBlock)
	}
	for j := i + 1; j < len(p.lines); j++ {
		if strings.Contains(p.lines[j].text, "-->") {
			return p.block(i, j+1, CommentBlock)
		}
	}
	return p.block(i, len(p.lines), CommentBlock)
}

// skipFence returns the line after the fence that opens on line i.
func (p *mdParser) skipFence(i int) int {
	ch, n := mdFence(strings.TrimLeft(p.lines[i].text, " \t"))
	return p.closeFence(i, ch, n)
}

// closeFence returns the line after the one, after line i, that closes a
// fence of n ch characters (the end if none does).
func (p *mdParser) closeFence(i int, ch byte, n int) int {
	for j := i + 1; j < len(p.lines); j++ {
		if mdFenceCloses(p.lines[j].text, ch, n) {
			return j + 1
		}
	}
	return len(p.lines)
}

func (p *mdParser) paragraph(i int) int {
	j := i + 1
	for ; j < len(p.lines); j++ {
		t := p.lines[j].text
		if mdBlank(t) {
			break
		}
		if level := mdSetext(t); level > 0 {
			parts := make([]string, 0, j-i)
			for _, l := range p.lines[i:j] {
				parts = append(parts, l.text)
			}
			p.heading(level, mdJoinLines(parts), i, j)
			return j + 1
		}
		if mdInterrupts(t) {
			break
		}
	}
	return p.block(i, j, ParagraphBlock)
}

func (p *mdParser) item(i int) int {
	ls := p.lines
	ci, mk, _ := mdListMarker(ls[i].text)
	j := i + 1
	if ch, n := mdFence(strings.TrimLeft(ls[i].text[mk:], " \t")); ch != 0 {
		j = p.closeFence(i, ch, n) // "- ```": the item's text is a code block
	}
	for j < len(ls) {
		t := ls[j].text
		if mdBlank(t) {
			// After blank lines the item goes on only with a line indented
			// to its text (another paragraph, a code block).
			k := j + 1
			for k < len(ls) && mdBlank(ls[k].text) {
				k++
			}
			if k < len(ls) && mdIndentCols(ls[k].text) >= ci && !mdIsListMarker(ls[k].text) {
				j = k
				continue
			}
			break
		}
		if mdIndentCols(t) < ci {
			if mdInterrupts(t) {
				break
			}
			j++ // a lazy line of the item's text
			continue
		}
		rel := strings.TrimLeft(t, " \t")
		switch {
		case mdIsListMarker(rel) && !mdThematicBreak(rel):
			return p.block(i, j, ItemBlock) // a nested item: an entry of its own
		case mdFenceOpener(rel):
			j = p.skipFence(j)
		default:
			j++
		}
	}
	return p.block(i, j, ItemBlock)
}

func (p *mdParser) quote(i int) int {
	j := i + 1
	for ; j < len(p.lines); j++ {
		t := p.lines[j].text
		if mdBlank(t) || !mdQuoteStart(t) && mdInterrupts(t) {
			break
		}
	}
	return p.block(i, j, QuoteBlock)
}

func (p *mdParser) table(i int) int {
	j := i + 2
	for ; j < len(p.lines); j++ {
		if t := p.lines[j].text; mdBlank(t) || mdInterrupts(t) {
			break
		}
	}
	return p.block(i, j, TableBlock)
}

// Line classification. Lines come without their newline.

func mdBlank(t string) bool {
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// mdIndent returns the columns (tabs to multiples of 4) and bytes of the
// line's leading white space.
func mdIndent(t string) (cols, n int) {
	for n < len(t) {
		switch t[n] {
		case ' ':
			cols++
		case '\t':
			cols += 4 - cols%4
		default:
			return cols, n
		}
		n++
	}
	return cols, n
}

func mdIndentCols(t string) int {
	c, _ := mdIndent(t)
	return c
}

// mdBlockIndent returns the line without its indentation if that is at
// most three columns (more makes it text, not a block's start).
func mdBlockIndent(t string) (string, bool) {
	c, n := mdIndent(t)
	return t[n:], c <= 3
}

// mdATX returns the level of an ATX heading line, or 0.
func mdATX(t string) int {
	r, ok := mdBlockIndent(t)
	if !ok {
		return 0
	}
	n := 0
	for n < len(r) && r[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n < len(r) && r[n] != ' ' && r[n] != '\t' {
		return 0
	}
	return n
}

func mdATXHeading(t string) (int, string) {
	level := mdATX(t)
	r, _ := mdBlockIndent(t)
	text := strings.Trim(r[level:], " \t\r")
	// An optional closing sequence of #s, after a space.
	k := len(text)
	for k > 0 && text[k-1] == '#' {
		k--
	}
	if k == 0 {
		text = ""
	} else if text[k-1] == ' ' || text[k-1] == '\t' {
		text = strings.TrimRight(text[:k], " \t")
	}
	return level, text
}

func mdSetext(t string) int {
	r, ok := mdBlockIndent(t)
	r = strings.TrimRight(r, " \t\r")
	if !ok || r == "" {
		return 0
	}
	switch {
	case strings.Trim(r, "=") == "":
		return 1
	case strings.Trim(r, "-") == "":
		return 2
	}
	return 0
}

func mdThematicBreak(t string) bool {
	r, ok := mdBlockIndent(t)
	if !ok || r == "" || r[0] != '-' && r[0] != '*' && r[0] != '_' {
		return false
	}
	n := 0
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case r[0]:
			n++
		case ' ', '\t', '\r':
		default:
			return false
		}
	}
	return n >= 3
}

// mdFence returns the fence character and length if r (unindented) opens
// a fenced code block.
func mdFence(r string) (byte, int) {
	if r == "" || r[0] != '`' && r[0] != '~' {
		return 0, 0
	}
	n := 0
	for n < len(r) && r[n] == r[0] {
		n++
	}
	if n < 3 || r[0] == '`' && strings.IndexByte(r[n:], '`') >= 0 {
		return 0, 0
	}
	return r[0], n
}

func mdFenceOpener(t string) bool {
	r, ok := mdBlockIndent(t)
	ch, _ := mdFence(r)
	return ok && ch != 0
}

func mdFenceCloses(t string, ch byte, n int) bool {
	r := strings.TrimLeft(t, " \t")
	k := 0
	for k < len(r) && r[k] == ch {
		k++
	}
	return k >= n && strings.Trim(r[k:], " \t\r") == ""
}

// mdListMarker reports whether t starts a list item, at any indentation;
// ci is the column of the item's text (where continuation lines line up)
// and mk the bytes up to and including the marker.
func mdListMarker(t string) (ci, mk int, ok bool) {
	cols, n := mdIndent(t)
	r := t[n:]
	m := 0
	switch {
	case r == "":
		return 0, 0, false
	case r[0] == '-' || r[0] == '*' || r[0] == '+':
		m = 1
	default:
		for m < len(r) && m < 9 && r[m] >= '0' && r[m] <= '9' {
			m++
		}
		if m == 0 || m == len(r) || r[m] != '.' && r[m] != ')' {
			return 0, 0, false
		}
		m++
	}
	after := r[m:]
	if after != "" && after[0] != ' ' && after[0] != '\t' && after != "\r" {
		return 0, 0, false
	}
	sp, _ := mdIndent(after)
	if sp == 0 || sp > 4 || mdBlank(after) {
		sp = 1 // no text on the line, or text indented as code: the item's text starts one column on
	}
	return cols + m + sp, n + m, true
}

func mdIsListMarker(t string) bool {
	_, _, ok := mdListMarker(t)
	return ok
}

func mdQuoteStart(t string) bool {
	r, ok := mdBlockIndent(t)
	return ok && strings.HasPrefix(r, ">")
}

func mdCommentStart(t string) bool {
	r, ok := mdBlockIndent(t)
	return ok && strings.HasPrefix(r, "<!--")
}

// mdInterrupts reports lines that start a new block even right after a
// line of text (so they end a paragraph, item or quote).
func mdInterrupts(t string) bool {
	return mdATX(t) > 0 || mdFenceOpener(t) || mdThematicBreak(t) || mdIsListMarker(t) ||
		mdQuoteStart(t) || mdCommentStart(t)
}

func mdTableStart(header, delim string) bool {
	if !strings.Contains(header, "|") || !strings.Contains(delim, "|") {
		return false
	}
	cells := mdCells(delim)
	for _, c := range cells {
		c = strings.TrimSpace(c)
		c = strings.TrimPrefix(c, ":")
		c = strings.TrimSuffix(c, ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return len(cells) == len(mdCells(header))
}

func mdCells(row string) []string {
	row = strings.TrimSpace(strings.ReplaceAll(row, `\|`, ""))
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	return strings.Split(row, "|")
}

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

	hint *mdHint // from Diff: what Undo needs to restore the old bytes
}

// mdHint is where a change sits, as Diff saw both versions.
type mdHint struct {
	region, outer *mdRegion // the inner and the outer region it lies in
	// Changed, between two inner regions: those two. Where they hold no
	// change, their blank lines go back with the entry's old text.
	around [2]*mdRegion
	// Removed: the new-file counterparts of the nearest old neighbours in
	// the entry's section that are still in the file, and of the entries
	// right before and after it (nil if gone).
	after, before    *Entry
	prevNew, nextNew *Entry
	order            int // the entry's index in the old file: keeps neighbours in order
	run              int // the index of the first entry of its run
}

// mdRegion is the stretch of a file between two entries that are in both
// versions (outer regions: kept as they were; inner ones: also paired as
// Changed): when all changes in it are undone and the versions differ
// there only by entries and blank lines, Undo puts the region's old bytes
// back as they were, blank lines included.
type mdRegion struct {
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
func Diff(old, new []Entry) []Change {
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
	mdMatch(a, b, om, nm)
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
		for _, pr := range mdPair(old, new, om, nm, pi+1, i, pj+1, j, kept) {
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
	region := func(s0, s1 pair) *mdRegion {
		r := &mdRegion{oldOK: len(old) > 0}
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
			r.oldLines = mdStructLines(oldSrc, oldFrom, oldTo, old[s0.i+1:s1.i])
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
	outer := make([]*mdRegion, len(anchors)-1)
	for k := range outer {
		outer[k] = region(anchors[k], anchors[k+1])
	}
	// outerAt is the outer region from the last kept entry at or before
	// old entry i.
	outerAt := func(i int) *mdRegion {
		k, found := slices.BinarySearchFunc(anchors, i, func(p pair, i int) int { return p.i - i })
		if !found {
			k--
		}
		return outer[min(k, len(outer)-1)]
	}

	var out []Change
	var prev *mdRegion // the inner region before split[k-1]
	for k := 1; k < len(split); k++ {
		s0, s1 := split[k-1], split[k]
		r, o := region(s0, s1), outerAt(s0.i)
		r.fromChanged = s0.i >= 0 && changed[s0.i]
		r.toChanged = s1.i < len(old) && changed[s1.i]
		if r.fromChanged {
			// The Changed pair emitted last, between prev and r.
			out[len(out)-1].hint.around = [2]*mdRegion{prev, r}
		}
		prev = r
		// In new-file order; between two Changed pairs, the removed
		// entries first (where they were), then the added ones.
		ri := s0.i + 1
		var added []Change
		flush := func(upTo int) {
			for ; ri < upTo && ri < s1.i; ri++ {
				if om[ri] < 0 {
					h := mdRemovedHint(old, new, om, ri)
					h.region, h.outer = r, o
					out = append(out, Change{Kind: Removed, Old: &old[ri], hint: h})
				}
			}
			out, added = append(out, added...), added[:0]
		}
		for j := s0.j + 1; j < s1.j; j++ {
			switch i := nm[j]; {
			case i < 0:
				added = append(added, Change{Kind: Added, New: &new[j], hint: &mdHint{region: r, outer: o}})
			case changed[i]:
				flush(i)
				out = append(out, Change{Kind: Changed, Old: &old[i], New: &new[j], hint: &mdHint{region: r, outer: o}})
			}
		}
		flush(s1.i)
		if s1.i < len(old) && changed[s1.i] {
			out = append(out, Change{Kind: Changed, Old: &old[s1.i], New: &new[s1.j], hint: &mdHint{outer: o}})
		}
	}
	for _, c := range out {
		for _, r := range []*mdRegion{c.hint.region, c.hint.outer} {
			if r != nil {
				r.changes++
				if c.New != nil {
					r.news++
				}
			}
		}
	}
	return out
}

// mdRemovedHint finds where the removed old[i] goes back: next to the
// nearest entry of its run (the entries around it with no blank line
// between, as a list) that is still in the file, before it or else after
// it; if the whole run is gone, after the nearest earlier entry of its
// section that is still there, or else before the nearest later one.
func mdRemovedHint(old, new []Entry, om []int, i int) *mdHint {
	h := &mdHint{order: i, run: i}
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

// mdMatch finds a longest common subsequence of a and b, marking matched
// indices in om and nm. Past a size it falls back to a greedy in-order
// match, to bound memory.
func mdMatch(a, b []int, om, nm []int) {
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

// mdPair pairs the unmatched old entries in [i0, i1) with the unmatched
// new ones in [j0, j1) as Changed, section by section.
func mdPair(old, new []Entry, om, nm []int, i0, i1, j0, j1 int, kept bool) [][2]int {
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
		out = append(out, mdPairSimilar(old, new, so, sn)...)
	}
	return out
}

// mdPairSimilar pairs similar entries (Jaccard >= 0.5) keeping their order:
// the most pairs, then the most similar.
func mdPairSimilar(old, new []Entry, so, sn []int) [][2]int {
	const maxCells = 1 << 16
	if len(so)*len(sn) > maxCells {
		return nil // a rewrite this large is adds and removes
	}
	to := make([]map[string]bool, len(so))
	for k, i := range so {
		to[k] = mdWords(old[i].Summary())
	}
	tn := make([]map[string]bool, len(sn))
	for k, j := range sn {
		tn[k] = mdWords(new[j].Summary())
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
			if s := mdJaccard(to[x], tn[y]); s >= 0.5 {
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

// mdWords is the set of words of a text, lower-cased; characters of
// scripts written without spaces count one each.
func mdWords(s string) map[string]bool {
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
		case mdWide(r) && (unicode.IsLetter(r) || unicode.IsDigit(r)):
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

func mdJaccard(a, b map[string]bool) float64 {
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

// mdStructLines returns the lines of src[from:to] outside the given
// entries (which lie in that range) that are not blank: what must be the
// same in both versions for a region's old bytes to replace its new ones.
func mdStructLines(src string, from, to int, entries []Entry) []string {
	var out []string
	add := func(s string) {
		for _, l := range strings.Split(s, "\n") {
			if !mdBlank(l) {
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

// Undo.

// Undo returns content (whose entries are now, i.e. Parse(content)) with
// the given changes (from Diff(old, now)) undone and nothing else touched:
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
func Undo(content []byte, now []Entry, changes []Change) []byte {
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
	var list []mdTodo
	seen := map[[3]any]bool{}
	for _, c := range changes {
		if c.Kind < Added || c.Kind > Removed || c.Kind != Added && c.Old == nil || c.Kind != Removed && c.New == nil {
			continue
		}
		key := [3]any{c.Kind, c.Old, c.New}
		if seen[key] {
			continue
		}
		seen[key] = true
		t := mdTodo{c: c}
		if c.New != nil {
			if t.cur = byText(c.New, true); t.cur == nil {
				continue // not in the file: nothing to undo
			}
			claimed[t.cur.Start] = true
		}
		list = append(list, t)
	}

	var edits []mdEdit
	done := make([]bool, len(list))
	// Whole regions first: outer ones, then inner ones.
	restored := map[*mdRegion]bool{}
	levels := []func(*mdHint) *mdRegion{
		func(h *mdHint) *mdRegion { return h.outer },
		func(h *mdHint) *mdRegion { return h.region },
	}
	for _, level := range levels {
		var regions []*mdRegion
		byRegion := map[*mdRegion][]int{}
		for k, t := range list {
			if done[k] || t.c.hint == nil || level(t.c.hint) == nil {
				continue
			}
			r := level(t.c.hint)
			if byRegion[r] == nil {
				regions = append(regions, r)
			}
			byRegion[r] = append(byRegion[r], k)
		}
		for _, r := range regions {
			if ks := byRegion[r]; r.oldOK && len(ks) == r.changes {
				if ed, ok := mdRegionEdit(src, now, r, ks, list, at); ok {
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
		if done[k] || t.c.Kind != Changed || t.c.hint == nil {
			continue
		}
		for _, r := range t.c.hint.around {
			if r == nil || r.changes != 0 || !r.oldOK || seen[[3]any{r}] ||
				!asWas(r.from, r.fromChanged) || !asWas(r.to, r.toChanged) {
				continue
			}
			seen[[3]any{r}] = true
			if ed, ok := mdRegionEdit(src, now, r, nil, list, at); ok {
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
	doc := &mdDoc{src: src, entries: staying}
	var oldSrc string // the old file of the last removed entry, as bytes
	var oldBytes []byte
	var headings []mdHeading // parsed only when needed
	parsed := false
	for k, t := range list {
		if done[k] {
			continue
		}
		switch t.c.Kind {
		case Added:
			edits = append(edits, mdEdit{pos: t.cur.Start, end: t.cur.End, op: mdRemoveOp, order: k})
		case Changed:
			ed := mdEdit{pos: t.cur.Start, end: t.cur.Start + len(t.cur.Text), op: mdReplaceBlockOp, text: t.c.Old.Text, order: k}
			if h := t.c.hint; h != nil {
				ed.keepBefore, ed.keepAfter = restored[h.around[0]], restored[h.around[1]]
			}
			edits = append(edits, ed)
		case Removed:
			ed := mdEdit{op: mdInsertOp, text: t.c.Old.Text, order: len(list) + k, old: t.c.Old}
			var after, before, near *Entry // near: the entry it goes next to
			if h := t.c.hint; h != nil {
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
					headings, parsed = mdParse(content).headings, true
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
			item := t.c.Old.Kind == ItemBlock || t.c.Old.Kind == 0 && mdItemText(t.c.Old.Text)
			nowPrev, _ := mdPrevText(content, ed.pos)
			nowNext, _ := mdNextText(content, ed.pos)
			ed.blankBefore = !item || near == nil || near.Kind != ItemBlock || near.Start >= ed.pos
			ed.blankAfter = !item || !mdIsListMarker(nowNext)
			if t.c.hint != nil {
				ed.run = t.c.hint.run
			}
			if old := t.c.Old; old.src != "" && old.End <= len(old.src) {
				if old.src != oldSrc {
					oldSrc, oldBytes = old.src, []byte(old.src)
				}
				// The same neighbour: the entry that was right next to it
				// (perhaps edited), or the same line.
				var prevE *Entry
				if h := t.c.hint; h != nil {
					prevE = h.prevNew
				}
				prevSame := false
				if prevE != nil {
					if x := at(prevE); x != nil && x.End == ed.pos {
						prevSame = true
					}
				}
				if prev, gap := mdPrevText(oldBytes, old.Start); prevSame || prev == nowPrev {
					ed.blankBefore = gap
				}
				// What comes after it is known when it is put in (the
				// edits after it are made by then).
				ed.oldNext, ed.oldGapAfter = mdNextText(oldBytes, old.End)
				ed.known = true
			}
			ed.item = item
			edits = append(edits, ed)
		}
	}
	// The file's line ending; for a file without one, the old file's.
	nl := mdNewline(content)
	if bytes.IndexByte(content, '\n') < 0 {
		for _, t := range list {
			if t.c.Old != nil && strings.Contains(t.c.Old.src, "\n") {
				nl = mdNewline([]byte(t.c.Old.src))
				break
			}
		}
	}
	return mdApply(content, mdGroupInserts(edits, nl), nl)
}

// mdTodo is a change to undo, with its New entry as found in the content.
type mdTodo struct {
	c   Change
	cur *Entry
}

// mdRegionEdit puts a region's old bytes back in place of its new ones,
// if the entries in it now are those of its changes (ks, all undone) and
// its other lines that are not blank are as they were.
func mdRegionEdit(content string, now []Entry, r *mdRegion, ks []int, list []mdTodo, at func(*Entry) *Entry) (mdEdit, bool) {
	from, to := 0, len(content)
	if r.from != nil {
		e := at(r.from)
		if e == nil {
			return mdEdit{}, false
		}
		from = e.Start + len(e.Text)
	}
	if r.to != nil {
		e := at(r.to)
		if e == nil {
			return mdEdit{}, false
		}
		to = e.Start
	}
	if from > to {
		return mdEdit{}, false
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
		!slices.Equal(mdStructLines(content, from, to, inside), r.oldLines) {
		return mdEdit{}, false
	}
	return mdEdit{pos: from, end: to, op: mdReplaceOp, text: r.old}, true
}

// mdGroupInserts joins entries put back at one position into one block,
// with what separated them in the old file (if only line ends and blank
// lines, else one blank line), so that a list put back stays a list.
func mdGroupInserts(edits []mdEdit, nl string) []mdEdit {
	slices.SortStableFunc(edits, func(x, y mdEdit) int {
		if x.pos != y.pos {
			return x.pos - y.pos
		}
		return x.order - y.order
	})
	var out []mdEdit
	for _, ed := range edits {
		if n := len(out); n > 0 && ed.op == mdInsertOp && ed.old != nil {
			prev := &out[n-1]
			if prev.op == mdInsertOp && prev.old != nil && prev.pos == ed.pos && prev.old.src == ed.old.src {
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

// mdPrevText returns the last line before pos (a line start) that is not
// blank ("" at the start of the file), and whether blank lines lie
// between.
func mdPrevText(b []byte, pos int) (string, bool) {
	gap := false
	for {
		l, ok := mdLineBefore(b, pos)
		if !ok {
			return "", gap
		}
		if !mdBlank(l) {
			return l, gap
		}
		gap, pos = true, mdLineStart(b, pos)
	}
}

// mdNextText returns the first line from pos on that is not blank ("" at
// the end of the file), and whether blank lines lie before it.
func mdNextText(b []byte, pos int) (string, bool) {
	gap := false
	for {
		l, ok := mdLineAt(b, pos)
		if !ok {
			return "", gap
		}
		if !mdBlank(l) {
			return l, gap
		}
		gap, pos = true, pos+len(l)+1
	}
}

func mdItemText(text string) bool {
	first, _, _ := strings.Cut(text, "\n")
	return mdIsListMarker(first) && !mdThematicBreak(first)
}

type mdOp int

const (
	mdReplaceOp      mdOp = iota // put text in place of [pos, end)
	mdReplaceBlockOp             // put text in place of an entry's text [pos, end), kept apart from its neighbours
	mdRemoveOp                   // take the block [pos, end) out with its blank line
	mdInsertOp                   // put text in at pos as a block
)

type mdEdit struct {
	pos, end int
	op       mdOp
	text     string
	order    int // among inserts at one position: ascending in the result

	// Insert: a blank line wanted before and after it, and the old entry
	// it puts back. If known, the blank line after it is as in the old
	// file where the same line follows (oldNext, oldGapAfter), else an
	// item next to an item joins the list.
	blankBefore, blankAfter bool
	keepBefore, keepAfter   bool // replace block: see mdReplaceBlock
	old                     *Entry
	item, known             bool
	oldNext                 string
	oldGapAfter             bool
	run                     int
}

// mdApply applies edits from the end of the content backwards, so that
// each one's offsets still hold, and each removal or insertion sees the
// blank lines around it as the later edits left them.
func mdApply(content []byte, edits []mdEdit, nl string) []byte {
	slices.SortStableFunc(edits, func(x, y mdEdit) int {
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
			if ed.op != mdInsertOp {
				continue // overlapping changes: only the first applies
			}
			ed.pos = limit // its place went with the edit after it (a line ending at the end)
		}
		if ed.op != mdInsertOp && ed.end > limit {
			if ed.op != mdRemoveOp || limit <= ed.pos {
				continue
			}
			ed.end = limit // its last line ending went with the block after it
		}
		low := ed.pos
		switch ed.op {
		case mdReplaceOp:
			buf = slices.Concat(buf[:ed.pos:ed.pos], []byte(ed.text), buf[ed.end:])
		case mdReplaceBlockOp:
			buf = mdReplaceBlock(buf, ed.pos, ed.end, ed.text, nl, ed.keepBefore, ed.keepAfter)
		case mdRemoveOp:
			buf, low = mdRemoveBlock(buf, ed.pos, ed.end, nl)
		case mdInsertOp:
			if ed.known {
				next, _ := mdNextText(buf, ed.pos)
				ed.blankAfter = !ed.item || !mdIsListMarker(next)
				if next == ed.oldNext {
					ed.blankAfter = ed.oldGapAfter
				}
			}
			buf = mdInsertBlock(buf, ed.pos, ed.text, ed.blankBefore, ed.blankAfter, nl)
		}
		limit = low
	}
	return buf
}

// mdNewline is the file's line ending: that of its first line ("\n" if
// it has none).
func mdNewline(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i > 0 && b[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// mdLineBefore returns the line that ends at pos (a line start, or the
// end of b), if any.
func mdLineBefore(b []byte, pos int) (string, bool) {
	if pos <= 0 || pos > len(b) {
		return "", false
	}
	end := pos
	if b[end-1] == '\n' {
		end--
	}
	return string(b[mdLineStart(b, pos):end]), true
}

// mdLineStart is where the line that ends at pos starts.
func mdLineStart(b []byte, pos int) int {
	end := pos
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	return bytes.LastIndexByte(b[:end], '\n') + 1
}

// mdLineAt returns the line that starts at pos, if any.
func mdLineAt(b []byte, pos int) (string, bool) {
	if pos >= len(b) {
		return "", false
	}
	end := bytes.IndexByte(b[pos:], '\n')
	if end < 0 {
		return string(b[pos:]), true
	}
	return string(b[pos : pos+end]), true
}

// mdRemoveBlock takes the block [start, end) out of b (start a line start,
// end past its newline or the end), with the blank line that set it off:
// one between two blocks stays, none is left at the start or end of the
// file, and a list stays a list. If that would join two blocks of text
// into one, a blank line stays in its place. A file without a final
// newline stays so.
// It returns the new content and the lowest offset it changed.
func mdRemoveBlock(b []byte, start, end int, nl string) ([]byte, int) {
	ps := start // start of the blank lines before the block
	for {
		l, ok := mdLineBefore(b, ps)
		if !ok || !mdBlank(l) {
			break
		}
		ps = mdLineStart(b, ps)
	}
	ne := end // end of the blank lines after it
	for {
		l, ok := mdLineAt(b, ne)
		if !ok || !mdBlank(l) {
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
		prev, _ := mdLineBefore(b, start)
		next, _ := mdLineAt(b, end)
		if mdContinues(prev, next) {
			return slices.Concat(b[:start:start], []byte(nl), b[end:]), start
		}
	}
	return cut(start, end)
}

// mdInsertBlock puts text in at pos (a line start, or the end) as a block
// of its own, with a blank line before and after it if wanted (and not
// there yet), and also where the text would otherwise run on into the
// block above or below. At the end of a file without a final newline the
// text comes after a newline and the file still has no final newline.
func mdInsertBlock(b []byte, pos int, text string, blankBefore, blankAfter bool, nl string) []byte {
	pos = min(pos, len(b))
	pre, end, post := "", nl, ""
	if pos == len(b) && len(b) > 0 && b[len(b)-1] != '\n' {
		// A file without a final newline stays so: the newline goes
		// before the text.
		pre, end = nl, ""
	}
	if l, ok := mdLineAt(b, pos); ok && blankBefore && mdBlank(l) && pre == "" {
		pos += len(l) + 1 // below the blank line there: it sets the text off
		pos = min(pos, len(b))
	}
	first, _, _ := strings.Cut(text, "\n")
	last := text[strings.LastIndexByte(text, '\n')+1:]
	if l, ok := mdLineBefore(b, pos); ok && !mdBlank(l) && (blankBefore || mdContinues(l, first)) {
		pre += nl
	}
	if l, ok := mdLineAt(b, pos); ok && !mdBlank(l) && (blankAfter || mdContinues(last, l)) {
		post = nl
	}
	return slices.Concat(b[:pos:pos], []byte(pre+text+end+post), b[pos:])
}

// mdReplaceBlock puts text in place of the entry text b[start:end] (its
// line ending stays), with a blank line before or after it where it
// would otherwise run on into the block above or below (a paragraph in
// place of an item in a list).
// keepBefore and keepAfter leave out the check on that side (the block
// there is being put back as it was, next to this text).
func mdReplaceBlock(b []byte, start, end int, text, nl string, keepBefore, keepAfter bool) []byte {
	pre, post := "", ""
	first, _, _ := strings.Cut(text, "\n")
	last := text[strings.LastIndexByte(text, '\n')+1:]
	if l, ok := mdLineBefore(b, start); ok && !keepBefore && mdContinues(l, first) {
		pre = nl
	}
	next := len(b) // past the entry's line ending
	if i := bytes.IndexByte(b[end:], '\n'); i >= 0 {
		next = end + i + 1
		if l, ok := mdLineAt(b, next); ok && !keepAfter && mdContinues(last, l) {
			post = nl
		}
	}
	return slices.Concat(b[:start:start], []byte(pre+text), b[end:next], []byte(post), b[next:])
}

// mdContinues reports whether line next, right below line prev, would be
// read as part of prev's block (or make it a setext heading).
func mdContinues(prev, next string) bool {
	if mdBlank(prev) || mdBlank(next) || mdATX(prev) > 0 || mdThematicBreak(prev) || mdSetext(prev) > 0 || mdFenceOpener(prev) {
		return false
	}
	return !mdInterrupts(next) || mdSetext(next) > 0
}

// Sections.

// find returns the heading that names path (the first one), or nil. An
// empty path is the part of the file before any heading.
func (d *mdDoc) find(path []string) *mdHeading {
	for k := range d.headings {
		if slices.Equal(d.headings[k].path, path) {
			return &d.headings[k]
		}
	}
	return nil
}

// direct returns the span of the section's own text (up to its first
// subheading or the next heading) and its entries there. ok is false if
// the file has no such heading.
func (d *mdDoc) direct(path []string) (from, to int, entries []Entry, ok bool) {
	from, to = 0, len(d.src)
	if len(path) > 0 {
		h := d.find(path)
		if h == nil {
			return 0, 0, nil, false
		}
		from = h.end
	}
	for _, h := range d.headings {
		if h.start >= from {
			to = h.start
			break
		}
	}
	for _, e := range d.entries {
		if e.Start >= from && e.Start < to {
			entries = append(entries, e)
		}
	}
	return from, to, entries, true
}

// sectionEnd is where an entry goes at the end of the section's own text:
// after its last entry, or after its heading. -1 if there is no such
// section.
func (d *mdDoc) sectionEnd(path []string) (int, *Entry) {
	from, _, es, ok := d.direct(path)
	switch {
	case !ok:
		return -1, nil
	case len(es) > 0:
		return es[len(es)-1].End, &es[len(es)-1]
	}
	return from, nil
}

// Insert, Replace, Remove.

// Insert places text (an entry's raw Text) into content as an entry:
// after the entry whose Text is afterText if there is one (afterText ""
// means at the start of the section), else at the end of the section
// whose heading path is heading, else under a new heading line for the
// last element of heading (at the end of the parent section if the file
// has it, at the level of its other subheadings; else at the end of the
// file), or at the end of the file if heading is empty. An item next to an
// item joins the list with no blank line; other blocks are set off by
// blank lines. Empty text changes nothing.
func Insert(content []byte, heading []string, afterText, text string) []byte {
	if text == "" {
		return content
	}
	d := mdParse(content)
	item, nl := mdItemText(text), mdNewline(content)
	if afterText != "" {
		for _, e := range d.entries {
			if e.Text == afterText {
				tight := item && e.Kind == ItemBlock
				return mdInsertBlock(content, e.End, text, !tight, !tight, nl)
			}
		}
		if pos, last := d.sectionEnd(heading); pos >= 0 {
			tight := item && last != nil && last.Kind == ItemBlock
			return mdInsertBlock(content, pos, text, !tight, !tight, nl)
		}
	} else if from, _, es, ok := d.direct(heading); ok {
		if len(es) > 0 {
			tight := item && es[0].Kind == ItemBlock
			return mdInsertBlock(content, es[0].Start, text, !tight, !tight, nl)
		}
		return mdInsertBlock(content, from, text, true, true, nl)
	}
	if len(heading) == 0 {
		return mdInsertBlock(content, len(content), text, true, true, nl)
	}
	// A new heading, at the end of its parent section.
	pos, level := len(content), min(len(heading), 6)
	parent := heading[:len(heading)-1]
	if p := d.find(parent); p != nil || len(parent) == 0 {
		if p != nil {
			level = min(p.level+1, 6)
			for _, h := range d.headings {
				if h.start > p.start && h.level <= p.level {
					pos = h.start
					break
				}
			}
		}
		for _, h := range d.headings {
			if len(h.path) == len(heading) && slices.Equal(h.path[:len(parent)], parent) {
				level = h.level // as its siblings are
				break
			}
		}
	}
	block := strings.Repeat("#", level) + " " + heading[len(heading)-1] + nl + nl + text
	return mdInsertBlock(content, pos, block, true, true, nl)
}

// Replace replaces the entry whose Text is oldText (the first one) with
// newText, leaving its line ending and everything around it as it is
// (except a blank line added where newText would otherwise run on into
// the block above or below, as a paragraph in place of an item in a
// list); an empty newText removes the entry (as Remove). ok is false if
// no entry has that text.
func Replace(content []byte, oldText, newText string) (out []byte, ok bool) {
	if newText == "" {
		return Remove(content, oldText)
	}
	for _, e := range Parse(content) {
		if e.Text == oldText {
			return mdReplaceBlock(content, e.Start, e.Start+len(e.Text), newText, mdNewline(content), false, false), true
		}
	}
	return content, false
}

// Remove removes the entry whose Text is text (the first one) with the
// blank line that set it off: one blank line stays between the blocks
// around it, none is left at the start or end of the file, and a list
// stays a list. ok is false if no entry has that text.
func Remove(content []byte, text string) (out []byte, ok bool) {
	for _, e := range Parse(content) {
		if e.Text == text {
			out, _ := mdRemoveBlock(slices.Clone(content), e.Start, e.End, mdNewline(content))
			return out, true
		}
	}
	return content, false
}
