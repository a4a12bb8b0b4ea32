package textfold

import (
	"strings"
	"unicode"
)

// Key returns the form in which two memory texts are compared to tell a
// repeat: equal keys state the same thing to a reader. It is Text, lower
// cased, with white space collapsed and the punctuation that only frames
// words dropped: "Alice prefers window seats on flights." and
// "  alice prefers ＷＩＮＤＯＷ seats on flights" have one key, and so do
// "项目 Atlas 的状态：开发中。" and "项目Atlas的状态开发中".
//
// It keeps whatever could carry a value, since a repeat changes nothing
// and a value lost that way is a fact lost: symbols (+ - $ % # @ / = < >),
// and punctuation between two letters or digits of a script that
// separates words ("3.5" is not "35",
// "10:30" is not "1030", "Alice's" is not "Alices"). So "likes C++" and
// "likes C", "is -5" and "is 5" keep two keys. Spaces next to a Chinese,
// Japanese or Korean character are dropped, since those scripts do not
// separate words.
func Key(s string) string {
	rs := []rune(strings.ToLower(Text(s)))
	var b strings.Builder
	b.Grow(len(s))
	space := false // a word boundary is owed before the next kept rune
	var prev rune  // the last rune written
	for i, r := range rs {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case framing(r) && !(i > 0 && i+1 < len(rs) && wordRune(rs[i-1]) && wordRune(rs[i+1])):
			space = true
			continue
		}
		if space && b.Len() > 0 && !cjkRune(prev) && !cjkRune(r) {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// framing reports punctuation that frames words rather than carrying a
// value: sentence and clause marks, quotes and brackets (Western, full
// width after NFKC, and Chinese). Dashes, and the marks that can be part
// of a value (# % & * @ / \), are not.
func framing(r rune) bool {
	switch {
	case unicode.In(r, unicode.Ps, unicode.Pe, unicode.Pi, unicode.Pf):
		return true
	case unicode.Is(unicode.Po, r):
		return !strings.ContainsRune("#%&*@/\\", r)
	}
	return false
}

// wordRune reports a letter or digit of a script that separates words.
func wordRune(r rune) bool { return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !cjkRune(r) }

// cjkRune reports a character of a script written without spaces between
// words.
func cjkRune(r rune) bool {
	return r >= 0x2E80 && (unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r >= 0x3000 && r <= 0x303F)
}
