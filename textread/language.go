package textread

import (
	"unicode"
	"unicode/utf8"

	"github.com/memgate/memgate/textfold"
)

// Lang is the language family of a text, as far as policy is concerned.
type Lang string

const (
	// English is English, and every text the function-word lists do not
	// place elsewhere: a name, a number, code, a short phrase. The
	// lexicons read it.
	English Lang = "en"
	// Chinese is text with Chinese characters and no kana or Hangul,
	// English words among them or not. The lexicons read it.
	Chinese Lang = "zh"
	// Other is a language the lexicons do not read: Japanese, Korean, a
	// script other than Latin and Han, or a Latin text whose function
	// words are those of another language.
	Other Lang = "other"
)

// Language returns the language family of s. Look-alike letters are
// folded first (textfold.Text), so an English text written with Cyrillic
// look-alikes is English, while a Russian one keeps the letters that have
// no Latin twin and is Other.
func Language(s string) Lang { return LanguageFolded(textfold.Text(s)) }

// LanguageFolded is Language of a text already folded by textfold.Text.
func LanguageFolded(folded string) Lang { return language(folded) }

// Text is what Read finds in a text.
type Text struct {
	Lang     Lang
	Readings []Reading
}

// Read returns the language of s and its hidden readings (Language and
// Decode in one pass over its words). folded is textfold.Text(s), which
// the caller usually has already.
func Read(s, folded string) Text {
	lang := LanguageFolded(folded)
	return Text{Lang: lang, Readings: decode(s, lang)}
}

// language returns the language of a folded text.
func language(folded string) Lang {
	var letters, latin, han, kana, hangul, other int
	for _, r := range folded {
		if !unicode.IsLetter(r) {
			continue
		}
		letters++
		switch {
		case r < utf8.RuneSelf || unicode.Is(unicode.Latin, r):
			latin++
		case unicode.Is(unicode.Han, r):
			han++
		case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
			kana++
		case unicode.Is(unicode.Hangul, r):
			hangul++
		default:
			other++
		}
	}
	en, foreign, words, distinct := 0, 0, 0, 0
	var first string // the first foreign function word, to count distinct ones up to two
	eachWord(folded, func(w []byte) {
		words++
		if englishWords[string(w)] {
			en++
		} else if foreignWords[string(w)] {
			foreign++
			switch {
			case distinct == 0:
				first, distinct = string(w), 1
			case distinct == 1 && string(w) != first:
				distinct = 2
			}
		}
	})
	switch {
	case letters == 0:
		return English
	// Japanese mixes kanji with kana; a tenth of kana is well below what
	// any Japanese sentence has, and no Chinese one has two.
	case kana >= 2 && kana*10 >= letters,
		hangul >= 2 && hangul*5 >= letters,
		// Letters of another script that textfold left unfolded (they
		// have no Latin look-alike): a fifth of the letters is a language,
		// not a stray symbol or a name.
		other >= 3 && other*5 >= letters:
		return Other
	case han >= 2:
		return Chinese
	}
	// Two different function words of another language, more of them
	// than of English, and as many as a sentence has (a tenth of its
	// words at least): a German, French, Spanish, Portuguese, Italian or
	// Dutch sentence. "Meet at La Jolla with De Niro" stays English, and
	// so does a list of names or tags in which one of them recurs ("uma"
	// is also a name).
	if latin > 0 && distinct >= 2 && foreign > en && foreign*10 >= words {
		return Other
	}
	return English
}

// eachWord calls fn with each lowercased word of s: a run of letters
// other than Chinese characters (an apostrophe ends a word, as
// normalization does: "don't" gives "don", "t"). The slice is reused.
func eachWord(s string, fn func(w []byte)) {
	var buf [64]byte
	w := buf[:0]
	for _, r := range s {
		if r < utf8.RuneSelf {
			if c := byte(r); c >= 'a' && c <= 'z' {
				w = append(w, c)
				continue
			} else if c >= 'A' && c <= 'Z' {
				w = append(w, c+'a'-'A')
				continue
			}
		} else if unicode.IsLetter(r) && !unicode.Is(unicode.Han, r) {
			w = utf8.AppendRune(w, unicode.ToLower(r))
			continue
		}
		if len(w) > 0 {
			fn(w)
			w = w[:0]
		}
	}
	if len(w) > 0 {
		fn(w)
	}
}

// englishHits counts the words of s of two letters or more that are
// common English words, how many different ones, and all its words of two
// letters or more (a single letter says nothing of a language: rot13 turns
// "n" into "a").
func englishHits(s string) (hits, distinct, total int) {
	var seen [(maxEnglishWords + 63) / 64]uint64
	eachWord(s, func(w []byte) {
		if len(w) < 2 {
			return
		}
		total++
		if id, ok := englishIDs[string(w)]; ok {
			hits++
			if seen[id/64]&(1<<(id%64)) == 0 {
				seen[id/64] |= 1 << (id % 64)
				distinct++
			}
		}
	})
	return hits, distinct, total
}
