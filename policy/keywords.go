package policy

import "strings"

// keywordIndex finds which keyword lists have a keyword in a text, in one
// pass over the text instead of one substring search per keyword (a few
// hundred of them cost ~6 µs a write). A bitset of the keywords' first two
// bytes skips almost every position of the text without a map lookup;
// keywords are then bucketed by their first four bytes, as normalized
// keywords mostly start with a space and a letter (" a" begins 136 of the
// default's), so a bucket of two bytes would be tried at every word.
type keywordIndex struct {
	lists int // number of keyword lists
	pairs [1 << 16 / 64]uint64
	// short marks the pairs that begin a keyword of two or three bytes.
	short    [1 << 16 / 64]uint64
	byPair   map[uint16][]indexedKeyword // keywords of two or three bytes
	byQuad   map[uint32][]indexedKeyword // longer keywords
	oneBytes []indexedKeyword            // keywords too short to bucket
}

type indexedKeyword struct {
	word string
	list int
}

func newKeywordIndex(lists []keywordFeature) *keywordIndex {
	x := &keywordIndex{lists: len(lists), byPair: map[uint16][]indexedKeyword{}, byQuad: map[uint32][]indexedKeyword{}}
	for i, kf := range lists {
		for _, w := range kf.words {
			k := indexedKeyword{word: w, list: i}
			if len(w) < 2 {
				// "" is in every text, as strings.Contains has it.
				x.oneBytes = append(x.oneBytes, k)
				continue
			}
			p := pair(w, 0)
			x.pairs[p/64] |= 1 << (p % 64)
			if len(w) < 4 {
				x.short[p/64] |= 1 << (p % 64)
				x.byPair[p] = append(x.byPair[p], k)
				continue
			}
			x.byQuad[quad(w)] = append(x.byQuad[quad(w)], k)
		}
	}
	return x
}

func pair(s string, i int) uint16 { return uint16(s[i])<<8 | uint16(s[i+1]) }

func quad(s string) uint32 {
	return uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3])
}

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
		if x.short[p/64]&(1<<(p%64)) != 0 {
			for _, k := range x.byPair[p] {
				if !found[k.list] && strings.HasPrefix(rest, k.word) {
					found[k.list] = true
				}
			}
		}
		if len(rest) < 4 {
			continue
		}
		for _, k := range x.byQuad[quad(rest)] {
			if !found[k.list] && strings.HasPrefix(rest, k.word) {
				found[k.list] = true
			}
		}
	}
}
