package search

import (
	"strings"
	"unicode"
)

// Text analysis: what a memory's text and a query become before ranking.
// English words are lower-cased, stripped of stopwords and possessives and
// folded to their singular; Chinese, Japanese and Korean text, which does
// not separate words, becomes overlapping pairs of characters.

// stopwords are English function words that say nothing about a memory
// (read-only after initialization).
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(stopwordList) {
		m[w] = true
	}
	return m
}()

// stopTable holds the stopwords by a cheap hash of their ends and length:
// the scoring of a search tests every word of every memory in scope.
var stopTable = func() (t [256][]string) {
	for w := range stopwords {
		h := stopHash(w)
		t[h] = append(t[h], w)
	}
	return t
}()

func stopHash[S ~string | ~[]byte](w S) uint8 {
	return uint8(w[0])*31 + uint8(w[len(w)-1])*7 + uint8(len(w))
}

// isStopword is stopwords[string(w)] for a lowercase word.
func isStopword(w []byte) bool {
	if len(w) == 0 {
		return false
	}
	for _, s := range stopTable[stopHash(w)] {
		if s == string(w) {
			return true
		}
	}
	return false
}

const stopwordList = `a an and are as at be been but by can could did do does doing for from had has have
		having he her hers him his how i if in into is it its me my myself no not of on or our ours she should so
		some such than that the their them then there these they this those to too us very was we were what when
		where which who whom why will with would you your yours about any all also am just know tell remember`

// Tokenize splits text into search terms: lowercase words of letters and
// digits, without stopwords and with a plural "s" dropped; runs of Chinese,
// Japanese or Korean characters become overlapping character pairs, since
// those scripts do not separate words.
func Tokenize(text string) []string {
	var out []string
	var word, cjk []rune
	flushWord := func() {
		if len(word) > 0 {
			w := string(word)
			if !stopwords[w] {
				out = append(out, stem(w))
			}
			word = word[:0]
		}
	}
	flushCJK := func() {
		switch len(cjk) {
		case 0:
		case 1:
			out = append(out, string(cjk))
		default:
			for i := 0; i+1 < len(cjk); i++ {
				out = append(out, string(cjk[i:i+2]))
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range text {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word = append(word, unicode.ToLower(r))
		case r == '\'' || r == '’':
			// "user's" -> "user": the possessive ends the word
			flushCJK()
			flushWord()
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return dropPossessive(out)
}

// dropPossessive removes the lone "s" a possessive leaves behind.
func dropPossessive(ts []string) []string {
	out := ts[:0]
	for _, t := range ts {
		if t != "s" && t != "t" {
			out = append(out, t)
		}
	}
	return out
}

// stemBytes is stem on a word being built, in place.
func stemBytes(w []byte) []byte {
	switch {
	case len(w) > 4 && string(w[len(w)-3:]) == "ies":
		w[len(w)-3] = 'y'
		return w[:len(w)-2]
	case len(w) > 3 && w[len(w)-1] == 's' && !strings.ContainsRune("sui", rune(w[len(w)-2])): // not -ss, -us, -is
		return w[:len(w)-1]
	}
	return w
}

// stem folds the commonest English plural forms.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r)
}
