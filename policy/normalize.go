package policy

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/memgate/memgate/textfold"
)

// normalizeText returns the form of a memory's text that policy keyword
// lists are matched against, so matching is robust to case, punctuation,
// spacing and look-alike characters without regexes in the hot path:
//   - folded first (textfold.Text: NFKC, invisible characters removed,
//     confusables folded to ASCII), then lowercased, combining marks
//     NFKC could not compose dropped ("a\u0336uto" -> "auto") and Latin
//     letters with diacritics read as their base letter ("ïgnörë" ->
//     "ignore");
//   - every rune that is not a letter, digit or mark becomes a space
//     ("auto-publish" -> "auto publish", "don't" -> "don t");
//   - runs of spaces collapse to one; Chinese (and Japanese) characters
//     are written without spaces between them, and with one space between
//     them and any other word, whether the writer put one or not
//     ("项目 Atlas 的状态" and "项目Atlas的状态" -> "项目 atlas 的状态"),
//     so English words in Chinese text are whole words too;
//   - one space at each end, so a keyword can anchor on a word boundary
//     (" on " matches "on" as a word, not inside "only").
func normalizeText(s string) string { return normalizeFolded(textfold.Text(s)) }

// normalizeFolded is normalizeText of a text already folded.
func normalizeFolded(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(' ')
	started, gap, prevHan := false, false, false
	for _, r := range s {
		if r >= 0xFF01 && r <= 0xFF5E {
			r -= 0xFEE0
		}
		if unicode.In(r, unicode.Mn, unicode.Me) {
			continue // strikethrough and other marks NFKC left over a letter hide nothing
		}
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) {
			gap = started
			continue
		}
		if r >= 0xC0 && r < 0x2000 {
			r = latinBase(r)
		}
		r = unicode.ToLower(r)
		han := isHan(r)
		if unicode.IsMark(r) {
			han = prevHan // a spacing mark belongs to the character before it
		}
		if started && (han != prevHan || (gap && !han)) {
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

// latinBase returns the ASCII letter a Latin letter with diacritics is
// built on ("ï" -> "i", "Ö" -> "O"), else r: "ïgnörë prëvïöüs" is "ignore
// previous" to a reader, and to the lexicons. Letters without a
// decomposition (ß, ø, æ) are kept.
func latinBase(r rune) rune {
	if !unicode.Is(unicode.Latin, r) {
		return r
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	d := norm.NFD.Properties(buf[:n]).Decomposition()
	if len(d) > 0 && d[0] < utf8.RuneSelf && (d[0]|0x20 >= 'a' && d[0]|0x20 <= 'z') {
		return rune(d[0])
	}
	return r
}

// isHan reports whether r is written without spaces around it: Chinese
// characters and Japanese kana.
func isHan(r rune) bool {
	return r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r))
}

// clauseMark starts each clause in clauseHeads; normalizeText never
// produces it, so a lead keyword matches only at the start of a clause.
const clauseMark = "|"

// clauses splits text at sentence and clause punctuation (English and
// Chinese), line breaks and list bullets, and normalizes each part; empty
// parts are dropped. "If the build is red, don't merge." gives
// [" if the build is red ", " don t merge "].
func clauses(s string) []string { return foldedClauses(textfold.Text(s)) }

// foldedClauses is clauses of a text already folded: folded first, then
// split, so a folded full-width comma splits too.
func foldedClauses(folded string) []string {
	var out []string
	for part := range strings.FieldsFuncSeq(folded, isClauseBreak) {
		if n := normalizeFolded(part); n != " " {
			out = append(out, n)
		}
	}
	return out
}

func isClauseBreak(r rune) bool {
	switch r {
	case '.', '!', '?', ';', ':', ',', '\n', '\r', '\t', '(', ')', '"', '“', '”', '•', '·',
		'。', '！', '？', '；', '：', '，', '、', '（', '）', '「', '」', '—':
		return true
	}
	return false
}

// clauseHeads joins the normalized clauses of a folded text, each after
// clauseMark.
func clauseHeads(folded string) string {
	var b strings.Builder
	for _, c := range foldedClauses(folded) {
		b.WriteString(clauseMark)
		b.WriteString(c)
	}
	return b.String()
}
