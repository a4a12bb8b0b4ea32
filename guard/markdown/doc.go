// Package markdown is the model of a Markdown memory file, without any
// I/O: a file is split into entries (Parse, parse.go), two versions are
// compared entry by entry (Diff, diff.go), which returns a Plan that Undo
// takes to put chosen changes back with every other byte left as it is
// (undo.go), and single entries are put in, replaced or taken out
// (Insert, Replace, Remove: edit.go). The guard (package guard) watches
// the files and decides; this package only reads and rewrites bytes.
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
package markdown
