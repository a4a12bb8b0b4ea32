package secrets

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// fold returns text as a reader sees it: invisible characters removed and
// NFKC applied, so that a zero-width space inside a key, or a key typed in
// full-width letters, does not hide it. ASCII text is returned unchanged
// without allocating, which is the common case.
func fold(text string) string {
	if isASCII(text) {
		return text
	}
	if strings.IndexFunc(text, isInvisible) >= 0 {
		text = strings.Map(func(r rune) rune {
			if isInvisible(r) {
				return -1
			}
			return r
		}, text)
	}
	// NFKC can compose a character out of pieces an invisible one had
	// separated, but never makes an invisible one, so one pass suffices.
	return norm.NFKC.String(text)
}

// isInvisible reports whether r renders as nothing: format characters
// (zero-width space, joiners, word joiner, BOM, soft hyphen, bidi controls,
// ...), variation selectors and the other default-ignorable code points
// such as the combining grapheme joiner.
func isInvisible(r rune) bool {
	switch {
	case r < 0xAD:
		return false
	case r >= 0x2070 && r < 0xFE00:
		// CJK and most other scripts: only the Hangul filler is
		// invisible here (TestIsInvisibleFastPath), and three table
		// lookups per character would dominate fold for Chinese text.
		return r == 0x3164
	}
	return unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}
