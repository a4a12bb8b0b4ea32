package policy

import (
	"strings"
	"unicode"
)

// normalizeText returns the form of a memory's text that policy keyword
// lists are matched against, so matching is robust to case, punctuation and
// spacing without regexes in the hot path:
//   - lowercase, with full-width ASCII (ＡＢＣ，１２３) folded to ASCII;
//   - every rune that is not a letter, digit or mark becomes a space
//     ("auto-publish" -> "auto publish", "don't" -> "don t");
//   - runs of spaces collapse to one, and a space next to a Chinese
//     character is dropped, since Chinese is written without them
//     ("项目 alpha 当前" -> "项目alpha当前");
//   - one space at each end, so a keyword can anchor on a word boundary
//     (" on " matches "on" as a word, not inside "only").
func normalizeText(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(' ')
	started, gap, prevHan := false, false, false
	for _, r := range s {
		if r >= 0xFF01 && r <= 0xFF5E {
			r -= 0xFEE0
		}
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) {
			gap = started
			continue
		}
		r = unicode.ToLower(r)
		han := unicode.Is(unicode.Han, r)
		if gap && !han && !prevHan {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		started, gap, prevHan = true, false, han
	}
	if started {
		b.WriteByte(' ')
	}
	return b.String()
}
