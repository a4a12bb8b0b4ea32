package search

import (
	"slices"
	"strings"
)

// partText is the lower-case summaries of the entries of a part
// (partView) joined by newlines: List finds the entries holding a word
// with strings.Index over all of them, which skips the entries without it
// far faster than testing each. A word (strings.Fields) holds no newline,
// so no match spans two entries. It is kept in the part's memo, which the
// index renews when the part changes.
type partText struct {
	entries []*entry
	text    string
	ends    []int // by entry: where its text ends
}

// partTextKey keys partText in a part's memo.
type partTextKey struct{}

func partTextOf(part partView) *partText {
	if pt, ok := part.memo.load(partTextKey{}).(*partText); ok {
		return pt
	}
	pt := &partText{entries: part.entries()}
	n := 0
	for _, e := range pt.entries {
		n += len(e.text()) + 1
	}
	var b strings.Builder
	b.Grow(n)
	pt.ends = make([]int, len(pt.entries))
	for i, e := range pt.entries {
		b.WriteString(e.text())
		pt.ends[i] = b.Len()
		b.WriteByte('\n')
	}
	pt.text = b.String()
	part.memo.store(partTextKey{}, pt)
	return pt
}

// holding calls fn with each entry whose text holds w, in order, until fn
// returns false.
func (pt *partText) holding(w string, fn func(*entry) bool) {
	for at := 0; at < len(pt.text); {
		k := strings.Index(pt.text[at:], w)
		if k < 0 {
			return
		}
		i, _ := slices.BinarySearch(pt.ends, at+k) // the first entry ending at or after the match
		if !fn(pt.entries[i]) {
			return
		}
		at = pt.ends[i] + 1
	}
}
