package markdown

import (
	"slices"
	"strings"
)

// Sections.

// find returns the heading that names path (the first one), or nil. An
// empty path is the part of the file before any heading.
func (d *document) find(path []string) *headingNode {
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
func (d *document) direct(path []string) (from, to int, entries []Entry, ok bool) {
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
func (d *document) sectionEnd(path []string) (int, *Entry) {
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
	d := parseDocument(content)
	item, nl := itemText(text), newlineOf(content)
	if afterText != "" {
		for _, e := range d.entries {
			if e.Text == afterText {
				tight := item && e.Kind == ItemBlock
				return insertBlock(content, e.End, text, !tight, !tight, nl)
			}
		}
		if pos, last := d.sectionEnd(heading); pos >= 0 {
			tight := item && last != nil && last.Kind == ItemBlock
			return insertBlock(content, pos, text, !tight, !tight, nl)
		}
	} else if from, _, es, ok := d.direct(heading); ok {
		if len(es) > 0 {
			tight := item && es[0].Kind == ItemBlock
			return insertBlock(content, es[0].Start, text, !tight, !tight, nl)
		}
		return insertBlock(content, from, text, true, true, nl)
	}
	if len(heading) == 0 {
		return insertBlock(content, len(content), text, true, true, nl)
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
	return insertBlock(content, pos, block, true, true, nl)
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
			return replaceBlock(content, e.Start, e.Start+len(e.Text), newText, newlineOf(content), false, false), true
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
			out, _ := removeBlock(slices.Clone(content), e.Start, e.End, newlineOf(content))
			return out, true
		}
	}
	return content, false
}
