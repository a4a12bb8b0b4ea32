package textfold

import (
	"unicode"

	"go.mau.fi/util/confusable"
)

// isInvisible reports whether r is dropped from text and ids: format
// characters (Cf), the rest of Default_Ignorable_Code_Point and variation
// selectors. All Cf are dropped, not only the default-ignorable ones, since
// a format character inside a word splits it for the classifier.
func isInvisible(r rune) bool {
	if invisibleFree(r) {
		return false
	}
	return unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) ||
		// Tags and the variation selectors supplement, whole blocks, in
		// case a character there is newer than the unicode tables.
		(r >= 0xE0000 && r <= 0xE0FFF)
}

// invisibleFree reports whether r lies in a span with no invisible
// character, so that Latin, Greek, Cyrillic, CJK and emoji skip the table
// look-ups; TestInvisibleFree checks the spans against the tables.
func invisibleFree(r rune) bool {
	switch {
	case r < 0xAD,
		r > 0xAD && r < 0x34F,
		r > 0x34F && r < 0x600,
		r >= 0x2070 && r < 0x3164,
		r > 0x3164 && r < 0xFE00,
		r >= 0x1F000 && r < 0xE0000:
		return true
	}
	return false
}

// nfkcStable reports whether r is left alone by NFKC whatever surrounds it
// (no decomposition, combining class 0, never the second of a
// composition), for the common letters of Chinese, Japanese, Korean and
// Western European text. A string of such runes and ASCII is NFKC without
// asking the norm package, which costs more than the rest of the clean
// check. TestNFKCStable checks the ranges against the norm tables.
func nfkcStable(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, // CJK Unified Ideographs
		r >= 0x3400 && r <= 0x4DBF, // extension A
		r >= 0xAC00 && r <= 0xD7A3, // Hangul syllables
		r >= 0x3041 && r <= 0x3096, // Hiragana
		r >= 0x30A1 && r <= 0x30FA, // Katakana
		r >= 0x3001 && r <= 0x3002, // 、。
		r >= 0x3008 && r <= 0x3011: // 〈〉《》「」『』【】
		return true
	case r >= 0xC0 && r <= 0xFF: // Latin-1 letters and × ÷
		return true
	}
	switch r {
	case '“', '”', '—', 'ー':
		return true
	}
	return false
}

// isStrayControl reports whether r is a C0/C1 control or DEL that is not
// white space: invisible, so Text drops it, and never valid in an id.
func isStrayControl(r rune) bool {
	return unicode.IsControl(r) && !unicode.IsSpace(r)
}

// isCJK reports whether r belongs to Chinese, Japanese or Korean writing,
// which is never folded: the confusables data maps some ideographs and CJK
// punctuation to ASCII (〇→O, 丿→/, 〔→(), which would corrupt that text.
func isCJK(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r >= 0x4E00 && r <= 0x9FFF, // CJK Unified Ideographs, the common case
		r >= 0x1100 && r <= 0x11FF,   // Hangul Jamo
		r >= 0x2E80 && r <= 0x2FFF,   // radicals, Kangxi, description characters
		r >= 0x3000 && r <= 0x4DBF,   // CJK punctuation, kana, Bopomofo, strokes, Hangul compatibility, enclosed, extension A
		r >= 0xA960 && r <= 0xA97F,   // Hangul Jamo Extended-A
		r >= 0xAC00 && r <= 0xD7FF,   // Hangul syllables, Jamo Extended-B
		r >= 0xF900 && r <= 0xFAFF,   // CJK compatibility ideographs
		r >= 0xFE30 && r <= 0xFE4F,   // CJK compatibility forms
		r >= 0xFF00 && r <= 0xFFEF,   // half-width and full-width forms
		r >= 0x1AFF0 && r <= 0x1B2FF, // kana extensions, Nushu
		r >= 0x1F200 && r <= 0x1F2FF, // enclosed ideographic supplement
		r >= 0x20000 && r <= 0x3FFFF: // supplementary ideographic planes
		return true
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Bopomofo)
}

// prototype returns the ASCII string that r is folded to, or "" when r is
// kept. ASCII itself is never folded.
func prototype(r rune) string {
	if r < 0x80 || isCJK(r) {
		return ""
	}
	if p := localFold(r); p != "" {
		return p
	}
	switch r {
	case '\u201C', '\u201D':
		// Chinese quotation marks; the prototype would be '' anyway.
		return ""
	}
	p := confusable.GetReplacement(r)
	if p == "" || !isASCII(p) {
		return ""
	}
	letter := unicode.IsLetter(r) && !unicode.Is(unicode.Lm, r)
	if letter && !isAlnum(p) {
		// A letter whose prototype has punctuation (ơ → o', Ɓ → 'B) is a
		// letter with a diacritic, not a look-alike.
		return ""
	}
	// The skeleton stands one member for each ASCII look-alike class (it
	// maps m to rn, I, 1 and | to l, 0 to O, " to ''). Give back the member
	// that r resembles, so "ΙGNORE" reads as "IGNORE", not "lGNORE".
	switch p {
	case "l":
		switch {
		case unicode.IsUpper(r) || unicode.IsTitle(r):
			return "I"
		case unicode.IsNumber(r):
			return "1"
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
			return "|"
		}
	case "O", "o":
		if unicode.IsNumber(r) {
			return "0" // Devanagari ०, NKo ߀
		}
	case "rn":
		return "m"
	case "''":
		return `"`
	}
	return p
}

// localFold covers look-alikes that the confusables data lacks and that are
// sold as "fancy text": Latin small capitals and negative circled or
// squared letters. NFKC has no mapping for them either.
func localFold(r rune) string {
	switch {
	case r >= 0x1F150 && r <= 0x1F169: // 🅐..🅩
		return asciiUpper[r-0x1F150 : r-0x1F150+1]
	case r >= 0x1F170 && r <= 0x1F189: // 🅰..🆉
		return asciiUpper[r-0x1F170 : r-0x1F170+1]
	}
	switch r {
	case 'ᴀ':
		return "a"
	case 'ʙ':
		return "b"
	case 'ᴄ':
		return "c"
	case 'ᴅ':
		return "d"
	case 'ᴇ':
		return "e"
	case 'ꜰ':
		return "f"
	case 'ɢ':
		return "g"
	case 'ʜ':
		return "h"
	case 'ɪ':
		return "i"
	case 'ᴊ':
		return "j"
	case 'ᴋ':
		return "k"
	case 'ʟ':
		return "l"
	case 'ᴍ':
		return "m"
	case 'ɴ':
		return "n"
	case 'ᴏ':
		return "o"
	case 'ᴘ':
		return "p"
	case 'ꞯ':
		return "q"
	case 'ʀ':
		return "r"
	case 'ꜱ':
		return "s"
	case 'ᴛ':
		return "t"
	case 'ᴜ':
		return "u"
	case 'ᴠ':
		return "v"
	case 'ᴡ':
		return "w"
	case 'ʏ':
		return "y"
	case 'ᴢ':
		return "z"
	}
	return ""
}

const asciiUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func isASCIILetter(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}
