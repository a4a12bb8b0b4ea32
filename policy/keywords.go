package policy

import "strings"

// keywordIndex finds which keyword lists have a keyword in a text, in one
// pass over the text instead of one substring search per keyword (a few
// hundred of them cost ~6 µs a write). Keywords are bucketed by their first
// two bytes; a bitset of those pairs skips almost every position of the
// text without a map lookup.
type keywordIndex struct {
	lists    int // number of keyword lists
	pairs    [1 << 16 / 64]uint64
	byPair   map[uint16][]indexedKeyword
	oneBytes []indexedKeyword // keywords too short to bucket
}

type indexedKeyword struct {
	word string
	list int
}

func newKeywordIndex(lists []keywordFeature) *keywordIndex {
	x := &keywordIndex{lists: len(lists), byPair: map[uint16][]indexedKeyword{}}
	for i, kf := range lists {
		for _, w := range kf.words {
			switch {
			case w == "":
				// "" is in every text, as strings.Contains has it.
				x.oneBytes = append(x.oneBytes, indexedKeyword{word: w, list: i})
			case len(w) == 1:
				x.oneBytes = append(x.oneBytes, indexedKeyword{word: w, list: i})
			default:
				p := pair(w, 0)
				x.pairs[p/64] |= 1 << (p % 64)
				x.byPair[p] = append(x.byPair[p], indexedKeyword{word: w, list: i})
			}
		}
	}
	return x
}

func pair(s string, i int) uint16 { return uint16(s[i])<<8 | uint16(s[i+1]) }

// match sets found[i] for every list i with a keyword contained in text.
func (x *keywordIndex) match(text string, found []bool) {
	for _, k := range x.oneBytes {
		if !found[k.list] && strings.Contains(text, k.word) {
			found[k.list] = true
		}
	}
	for i := 0; i+1 < len(text); i++ {
		p := pair(text, i)
		if x.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		rest := text[i:]
		for _, k := range x.byPair[p] {
			if !found[k.list] && strings.HasPrefix(rest, k.word) {
				found[k.list] = true
			}
		}
	}
}
