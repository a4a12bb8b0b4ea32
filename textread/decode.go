package textread

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind says how a reading was hidden.
type Kind string

const (
	Base64   Kind = "base64"
	Hex      Kind = "hex"
	ROT13    Kind = "rot13"
	Reversed Kind = "reversed"
	// Spaced is words spelled out letter by letter: "d i s r e g a r d",
	// "i.g.n.o.r.e".
	Spaced Kind = "spaced"
	// Leet is words with digits and symbols for letters: "1gn0re
	// pr3vious rul3s".
	Leet Kind = "leet"
)

// Obfuscating reports whether a reading of this kind hides the whole text
// from a reader: no ordinary memory is written in rot13 or backwards.
func (k Kind) Obfuscating() bool { return k == ROT13 || k == Reversed || k == Leet }

// Reading is a text hidden in another, decoded.
type Reading struct {
	Kind Kind
	Text string
}

const (
	minEncodedRun = 16 // base64 or hex characters: shorter runs are words and ids
	maxDepth      = 2  // base64 inside base64 is decoded once more, no further
	maxReadings   = 8  // a text with more hidden parts than this is judged on these
)

// Decode returns the readings hidden in s, in the order found: base64 and
// hex runs that decode to readable text, the whole text with rot13 undone
// or reversed when that reads as English and the text does not, and words
// spelled out letter by letter. Most texts have none, and then Decode
// returns nil without allocating much.
func Decode(s string) []Reading { return decode(s, Language(s)) }

// decode is Decode of a text in language lang.
func decode(s string, lang Lang) []Reading {
	var out []Reading
	decodeInto(&out, s, 0)
	// rot13 and reversal are tried only on a text of Latin words that does
	// not read as English already (most English text stops here); a
	// Chinese text with a few Latin words (commands, names) is read as it
	// is.
	if lang != Chinese && hasLetterWords(s) {
		if hits, distinct, total := englishHits(s); total >= 2 && (distinct < 3 || hits*5 < total*2) {
			if r, ok := unrot13(s, hits); ok {
				out = appendReading(out, Reading{ROT13, r})
			}
			if r, ok := unreverse(s, hits); ok {
				out = appendReading(out, Reading{Reversed, r})
			}
		}
		if r, ok := unleet(s); ok {
			out = appendReading(out, Reading{Leet, r})
		}
	}
	if r, ok := unspace(s); ok {
		out = appendReading(out, Reading{Spaced, r})
	}
	return out
}

func appendReading(out []Reading, r Reading) []Reading {
	if len(out) >= maxReadings {
		return out
	}
	return append(out, r)
}

// decodeInto appends the base64 and hex readings of s, and theirs.
func decodeInto(out *[]Reading, s string, depth int) {
	if depth >= maxDepth {
		return
	}
	for _, run := range encodedRuns(s) {
		r, nested := decodeRun(run)
		switch {
		case len(*out) >= maxReadings:
			return
		case r != nil:
			*out = append(*out, *r)
			decodeInto(out, r.Text, depth+1)
		case nested != "":
			decodeInto(out, nested, depth+1) // encoded again: only the text inside is a reading
		}
	}
}

// encodedRuns returns the runs of s made of base64 or hex characters
// (a hex run may have its bytes separated by single spaces, colons or
// "\x"), at least minEncodedRun long.
func encodedRuns(s string) []string {
	var runs []string
	start := -1
	flush := func(end int) {
		if start >= 0 && end-start >= minEncodedRun {
			runs = append(runs, s[start:end])
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		if isBase64Byte(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	if r, ok := spacedHex(s); ok {
		runs = append(runs, r)
	}
	return runs
}

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}

func isWordByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// spacedHex returns the bytes of s written as hex pairs apart ("69 67 6e",
// "69:67:6e", "\x69\x67\x6e", "%69%67"), joined, when there are at least
// minEncodedRun/2 of them in a row.
func spacedHex(s string) (string, bool) {
	var b strings.Builder
	pairs, best := 0, ""
	i := 0
	end := func() {
		if pairs*2 >= minEncodedRun && len(best) == 0 {
			best = b.String()
		}
		b.Reset()
		pairs = 0
	}
	for i < len(s) {
		j := i
		switch {
		case strings.HasPrefix(s[j:], `\x`):
			j += 2
		case s[j] == '%':
			j++
		}
		// A pair is two hex digits on their own: not the end of a word.
		alone := j > i || i == 0 || !isWordByte(s[i-1])
		if alone && j+2 <= len(s) && isHexByte(s[j]) && isHexByte(s[j+1]) && (j+2 == len(s) || !isWordByte(s[j+2])) {
			b.WriteString(s[j : j+2])
			pairs++
			i = j + 2
			if i < len(s) && (s[i] == ' ' || s[i] == ':') {
				i++
			}
			continue
		}
		end()
		i++
	}
	end()
	return best, best != ""
}

// decodeRun decodes a run as hex or base64 (standard or URL alphabet,
// padded or not), keeping only what reads as text; nested is a decoded
// run that is itself one encoded run, to be decoded once more.
func decodeRun(run string) (r *Reading, nested string) {
	if len(run)%2 == 0 && allHex(run) {
		if b, err := hex.DecodeString(run); err == nil && readable(b) {
			return &Reading{Hex, string(b)}, ""
		}
	}
	// A run of only lowercase letters (or only digits) is a word or a
	// number, not base64: base64 of text mixes cases and digits.
	if !mixed(run) {
		return nil, ""
	}
	trimmed := strings.TrimRight(run, "=")
	std := urlToStd.Replace(trimmed)
	if len(std)%4 == 1 {
		std = std[:len(std)-1] // a stray character at the end of a run
	}
	b, err := base64.RawStdEncoding.DecodeString(std)
	switch {
	case err != nil:
		return nil, ""
	case readable(b):
		return &Reading{Base64, string(b)}, ""
	case len(b) >= minEncodedRun && isEncodedRun(b):
		return nil, string(b)
	}
	return nil, ""
}

func isEncodedRun(b []byte) bool {
	for _, c := range b {
		if !isBase64Byte(c) {
			return false
		}
	}
	return true
}

// urlToStd maps base64's URL alphabet to the standard one.
var urlToStd = strings.NewReplacer("-", "+", "_", "/")

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

func mixed(s string) bool {
	var upper, lower, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		upper = upper || c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return upper && lower || (upper || lower) && digit
}

// readable reports whether b is text a person wrote: valid UTF-8, at least
// four characters, almost all printable, mostly letters, with a space
// between words or Chinese characters. Random bytes (a hash, an image)
// are not.
func readable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	var runes, printable, letters, spaces, han int
	for _, r := range string(b) {
		runes++
		switch {
		case r == ' ' || r == '\n' || r == '\t':
			spaces++
			printable++
		case unicode.IsPrint(r):
			printable++
			if unicode.IsLetter(r) {
				letters++
				if unicode.Is(unicode.Han, r) {
					han++
				}
			}
		}
	}
	return runes >= 4 && printable*10 >= runes*9 && letters*2 >= runes-spaces && (spaces > 0 || han >= 2)
}

// readsAsEnglish reports whether a candidate reading of a text reads as
// English where the text, with orig common English words, does not: at
// least three different common English words, two words in five of them,
// and more than twice as many as the text has.
func readsAsEnglish(reading string, orig int) bool {
	hits, distinct, total := englishHits(reading)
	return distinct >= 3 && hits*5 >= total*2 && hits > 2*orig
}

// unrot13 returns s with rot13 undone, if that reads as English.
func unrot13(s string, orig int) (string, bool) {
	r := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z':
			return 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			return 'A' + (c-'A'+13)%26
		}
		return c
	}, s)
	return r, readsAsEnglish(r, orig)
}

// unreverse returns s written backwards, if that reads as English.
func unreverse(s string, orig int) (string, bool) {
	rs := []rune(s)
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	r := string(rs)
	return r, readsAsEnglish(r, orig)
}

// unleet returns s with the digits and symbols that stand for letters
// inside words (1gn0re, s4f3ty, @dmin) read as those letters, if that
// reads as English and s does not. A word is changed only when it mixes
// letters and such characters, so numbers, versions and ids stay; and as
// for rot13, a text that reads as English already gives nothing.
func unleet(s string) (string, bool) {
	b := []byte(s)
	changed := false
	for i := 0; i < len(b); {
		j := i
		letters, leets := 0, 0
		for j < len(b) && (isLetterByte(b[j]) || leetLetter(b[j]) != 0) {
			if isLetterByte(b[j]) {
				letters++
			} else {
				leets++
			}
			j++
		}
		if j == i {
			i++
			continue
		}
		if letters > 0 && leets > 0 {
			for k := i; k < j; k++ {
				if c := leetLetter(b[k]); c != 0 {
					b[k] = c
					changed = true
				}
			}
		}
		i = j
	}
	if !changed {
		return "", false
	}
	orig, _, _ := englishHits(s)
	r := string(b)
	return r, readsAsEnglish(r, orig)
}

// leetLetter is the letter c stands for in leetspeak, or 0.
func leetLetter(c byte) byte {
	switch c {
	case '0':
		return 'o'
	case '1':
		return 'i'
	case '3':
		return 'e'
	case '4', '@':
		return 'a'
	case '5', '$':
		return 's'
	case '7':
		return 't'
	}
	return 0
}

// hasLetterWords reports whether s has at least two ASCII words of two
// letters or more: rot13 and reversal are only tried on such texts.
func hasLetterWords(s string) bool {
	n, run := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
			run++
			continue
		}
		if run >= 2 {
			if n++; n >= 2 {
				return true
			}
		}
		run = 0
	}
	return false
}

// unspace joins words spelled out letter by letter, one separator (space,
// dot, dash, underscore, asterisk) between letters and a wider gap or
// another mark between words: "d i s r e g a r d  y o u r  r u l e s"
// gives "disregard your rules". It reports whether at least one such word
// of three letters or more was found.
func unspace(s string) (string, bool) {
	if !maySpell(s) {
		return "", false
	}
	rs := []rune(s)
	var words []string
	found := false
	i := 0
	for i < len(rs) {
		// A spelled-out word starts at a letter not preceded by a letter.
		if !unicode.IsLetter(rs[i]) || i > 0 && unicode.IsLetter(rs[i-1]) {
			i++
			continue
		}
		sep := rune(0)
		var w []rune
		j := i
		for j < len(rs) && unicode.IsLetter(rs[j]) {
			w = append(w, rs[j])
			if j+2 >= len(rs) || !isSpelledSep(rs[j+1]) || !unicode.IsLetter(rs[j+2]) ||
				(sep != 0 && rs[j+1] != sep) || j+3 < len(rs) && unicode.IsLetter(rs[j+3]) {
				j++
				break
			}
			sep = rs[j+1]
			j += 2
		}
		// The word must end where the letters end: "a b c" inside
		// "a b cat" is not a spelled-out word.
		if len(w) >= 2 && (j >= len(rs) || !unicode.IsLetter(rs[j])) {
			words = append(words, string(w))
			found = found || len(w) >= 3
		}
		i = j
	}
	if !found {
		return "", false
	}
	return strings.Join(words, " "), true
}

// maySpell reports whether s has an ASCII letter, separator, letter,
// separator, letter sequence, or any non-ASCII text (which unspace reads
// rune by rune): the cheap test before unspace looks closer.
func maySpell(s string) bool {
	for i := 0; i+4 < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
		if isLetterByte(s[i]) && isSpelledSep(rune(s[i+1])) && isLetterByte(s[i+2]) && isSpelledSep(rune(s[i+3])) && isLetterByte(s[i+4]) {
			return true
		}
	}
	return false
}

func isLetterByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isSpelledSep(r rune) bool {
	return r == ' ' || r == '.' || r == '-' || r == '_' || r == '*'
}
