package markdown

import (
	"slices"
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
		if _, mk, ok := listMarker(lines[0]); ok && !thematicBreak(lines[0]) {
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
	return joinLines(lines)
}

// joinLines joins lines into one, each line's white space runs folded
// into single spaces.
func joinLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			last, _ := utf8.DecodeLastRuneInString(b.String())
			first, _ := utf8.DecodeRuneInString(l)
			if !wide(last) || !wide(first) {
				b.WriteByte(' ')
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// wide reports runes of scripts written without spaces between words.
func wide(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r >= 0x3000 && r <= 0x303F || r >= 0xFF00 && r <= 0xFFEF
}

// Parse splits content into entries, in file order. Any bytes parse:
// invalid UTF-8 is kept as it is, CRLF line endings are recognised (Text
// keeps the inner ones, its final newline is left out either way), and a
// UTF-8 byte order mark at the start belongs to no entry.
func Parse(content []byte) []Entry {
	return parseDocument(content).entries
}

// document is a parsed file: its entries and its headings.
type document struct {
	src      string
	entries  []Entry
	headings []headingNode
}

type headingNode struct {
	path       []string
	level      int
	start, end int // the heading's lines, end past the last newline
}

type srcLine struct {
	start, end int    // the line's bytes, end past its newline
	text       string // without its newline (and the CR before it)
}

func splitLines(src string) []srcLine {
	ls := make([]srcLine, 0, strings.Count(src, "\n")+1)
	for s := 0; s < len(src); {
		end, te := len(src), len(src)
		if i := strings.IndexByte(src[s:], '\n'); i >= 0 {
			end, te = s+i+1, s+i
			if te > s && src[te-1] == '\r' {
				te--
			}
		}
		ls = append(ls, srcLine{start: s, end: end, text: src[s:te]})
		s = end
	}
	if len(ls) > 0 && strings.HasPrefix(ls[0].text, "\ufeff") {
		ls[0].start += 3
		ls[0].text = ls[0].text[3:]
	}
	return ls
}

type parser struct {
	document
	lines []srcLine
	stack []headingNode // open headings, outermost first
	path  []string
}

func parseDocument(content []byte) *document {
	p := &parser{document: document{src: string(content)}}
	p.lines = splitLines(p.src)
	p.run()
	return &p.document
}

func (p *parser) run() {
	ls := p.lines
	i := p.frontMatter()
	for i < len(ls) {
		t := ls[i].text
		switch {
		case isBlank(t):
			i++
		case commentStart(t):
			i = p.comment(i)
		case aTX(t) > 0:
			level, text := aTXHeading(t)
			p.heading(level, text, i, i)
			i++
		case fenceOpener(t):
			i = p.block(i, p.skipFence(i), CodeBlock)
		case thematicBreak(t):
			i++
		case isListMarker(t):
			i = p.item(i)
		case quoteStart(t):
			i = p.quote(i)
		case i+1 < len(ls) && tableStart(t, ls[i+1].text):
			i = p.table(i)
		default:
			i = p.paragraph(i)
		}
	}
}

// block emits lines first..last-1 as an entry and returns last. Blank
// lines at its end (of a fence or comment left open to the end of the
// file) are not part of it.
func (p *parser) block(first, last int, kind BlockKind) int {
	end := last - 1
	for end > first && isBlank(p.lines[end].text) {
		end--
	}
	start, l := p.lines[first].start, p.lines[end]
	p.entries = append(p.entries, Entry{
		Text: p.src[start : l.start+len(l.text)], Heading: p.path,
		Line: first + 1, Start: start, End: l.end, Kind: kind, src: p.src,
	})
	return last
}

func (p *parser) heading(level int, text string, first, last int) {
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
	h := headingNode{path: p.path, level: level, start: p.lines[first].start, end: p.lines[last].end}
	p.stack = append(p.stack, h)
	p.headings = append(p.headings, h)
}

// frontMatter emits the YAML front matter, if any, and returns the line
// after it.
func (p *parser) frontMatter() int {
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

func (p *parser) comment(i int) int {
	_, ind := indent(p.lines[i].text)
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
func (p *parser) skipFence(i int) int {
	ch, n := fenceOf(strings.TrimLeft(p.lines[i].text, " \t"))
	return p.closeFence(i, ch, n)
}

// closeFence returns the line after the one, after line i, that closes a
// fence of n ch characters (the end if none does).
func (p *parser) closeFence(i int, ch byte, n int) int {
	for j := i + 1; j < len(p.lines); j++ {
		if fenceCloses(p.lines[j].text, ch, n) {
			return j + 1
		}
	}
	return len(p.lines)
}

func (p *parser) paragraph(i int) int {
	j := i + 1
	for ; j < len(p.lines); j++ {
		t := p.lines[j].text
		if isBlank(t) {
			break
		}
		if level := setextLevel(t); level > 0 {
			parts := make([]string, 0, j-i)
			for _, l := range p.lines[i:j] {
				parts = append(parts, l.text)
			}
			p.heading(level, joinLines(parts), i, j)
			return j + 1
		}
		if interrupts(t) {
			break
		}
	}
	return p.block(i, j, ParagraphBlock)
}

func (p *parser) item(i int) int {
	ls := p.lines
	ci, mk, _ := listMarker(ls[i].text)
	j := i + 1
	if ch, n := fenceOf(strings.TrimLeft(ls[i].text[mk:], " \t")); ch != 0 {
		j = p.closeFence(i, ch, n) // "- ```": the item's text is a code block
	}
	for j < len(ls) {
		t := ls[j].text
		if isBlank(t) {
			// After blank lines the item goes on only with a line indented
			// to its text (another paragraph, a code block).
			k := j + 1
			for k < len(ls) && isBlank(ls[k].text) {
				k++
			}
			if k < len(ls) && indentCols(ls[k].text) >= ci && !isListMarker(ls[k].text) {
				j = k
				continue
			}
			break
		}
		if indentCols(t) < ci {
			if interrupts(t) {
				break
			}
			j++ // a lazy line of the item's text
			continue
		}
		rel := strings.TrimLeft(t, " \t")
		switch {
		case isListMarker(rel) && !thematicBreak(rel):
			return p.block(i, j, ItemBlock) // a nested item: an entry of its own
		case fenceOpener(rel):
			j = p.skipFence(j)
		default:
			j++
		}
	}
	return p.block(i, j, ItemBlock)
}

func (p *parser) quote(i int) int {
	j := i + 1
	for ; j < len(p.lines); j++ {
		t := p.lines[j].text
		if isBlank(t) || !quoteStart(t) && interrupts(t) {
			break
		}
	}
	return p.block(i, j, QuoteBlock)
}

func (p *parser) table(i int) int {
	j := i + 2
	for ; j < len(p.lines); j++ {
		if t := p.lines[j].text; isBlank(t) || interrupts(t) {
			break
		}
	}
	return p.block(i, j, TableBlock)
}

// Line classification. Lines come without their newline.

func isBlank(t string) bool {
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// indent returns the columns (tabs to multiples of 4) and bytes of the
// line's leading white space.
func indent(t string) (cols, n int) {
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

func indentCols(t string) int {
	c, _ := indent(t)
	return c
}

// blockIndent returns the line without its indentation if that is at
// most three columns (more makes it text, not a block's start).
func blockIndent(t string) (string, bool) {
	c, n := indent(t)
	return t[n:], c <= 3
}

// aTX returns the level of an ATX heading line, or 0.
func aTX(t string) int {
	r, ok := blockIndent(t)
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

func aTXHeading(t string) (int, string) {
	level := aTX(t)
	r, _ := blockIndent(t)
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

func setextLevel(t string) int {
	r, ok := blockIndent(t)
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

func thematicBreak(t string) bool {
	r, ok := blockIndent(t)
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

// fenceOf returns the fence character and length if r (unindented) opens
// a fenced code block.
func fenceOf(r string) (byte, int) {
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

func fenceOpener(t string) bool {
	r, ok := blockIndent(t)
	ch, _ := fenceOf(r)
	return ok && ch != 0
}

func fenceCloses(t string, ch byte, n int) bool {
	r := strings.TrimLeft(t, " \t")
	k := 0
	for k < len(r) && r[k] == ch {
		k++
	}
	return k >= n && strings.Trim(r[k:], " \t\r") == ""
}

// listMarker reports whether t starts a list item, at any indentation;
// ci is the column of the item's text (where continuation lines line up)
// and mk the bytes up to and including the marker.
func listMarker(t string) (ci, mk int, ok bool) {
	cols, n := indent(t)
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
	sp, _ := indent(after)
	if sp == 0 || sp > 4 || isBlank(after) {
		sp = 1 // no text on the line, or text indented as code: the item's text starts one column on
	}
	return cols + m + sp, n + m, true
}

func isListMarker(t string) bool {
	_, _, ok := listMarker(t)
	return ok
}

func quoteStart(t string) bool {
	r, ok := blockIndent(t)
	return ok && strings.HasPrefix(r, ">")
}

func commentStart(t string) bool {
	r, ok := blockIndent(t)
	return ok && strings.HasPrefix(r, "<!--")
}

// interrupts reports lines that start a new block even right after a
// line of text (so they end a paragraph, item or quote).
func interrupts(t string) bool {
	return aTX(t) > 0 || fenceOpener(t) || thematicBreak(t) || isListMarker(t) ||
		quoteStart(t) || commentStart(t)
}

func tableStart(header, delim string) bool {
	if !strings.Contains(header, "|") || !strings.Contains(delim, "|") {
		return false
	}
	cells := tableCells(delim)
	for _, c := range cells {
		c = strings.TrimSpace(c)
		c = strings.TrimPrefix(c, ":")
		c = strings.TrimSuffix(c, ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return len(cells) == len(tableCells(header))
}

func tableCells(row string) []string {
	row = strings.TrimSpace(strings.ReplaceAll(row, `\|`, ""))
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	return strings.Split(row, "|")
}
