package textclass

import (
	"unicode"
	"unicode/utf8"
)

// signBit of a token says, in a model of the earlier formats (hash
// buckets, no vocabulary), whether it adds or subtracts its bucket's
// weight; the low bits name the bucket. A vocabulary model (MGTC3) knows
// each token by all 32 bits.
const signBit = 1 << 31

const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

// Token kinds: one byte hashed before each token, so that a word and a
// character n-gram with the same bytes are different features.
const (
	kindWord     = 'w'
	kindBigram   = 'b'
	kindHan1     = 'c' // a Chinese (or Japanese) character
	kindHan2     = 'd' // two in a row
	kindHan3     = 'e' // three in a row
	kindFeature  = 'f' // a lexicon feature policy found
	kindLength   = 'l' // how many words the text has, roughly
	kindNoTokens = 'n'
)

func hashByte(h uint32, c byte) uint32 { return (h ^ uint32(c)) * fnvPrime }

func hashString(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * fnvPrime
	}
	return h
}

// finish mixes the hash so that its low bits (the bucket) and its top bit
// (the sign) are independent (FNV's low bits are weak on short inputs).
func finish(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	h *= 0x846ca68b
	h ^= h >> 16
	return h
}

// Tokens calls fn with the hashed features of a normalized text and its
// lexicon features: each word, each pair of words in a row, each Chinese
// character and each run of two and three, each feature name, and a
// bucket of the text's length. The same input always gives the same
// tokens, in the same order. (Character trigrams of words were tried:
// on the corpus they taught the model how the curated examples are
// written rather than what they say, and cost recall out of fold.)
func Tokens(norm string, features []string, fn func(uint32)) {
	words := 0
	var prev string
	for i := 0; i < len(norm); {
		for i < len(norm) && norm[i] == ' ' {
			i++
		}
		j := i
		for j < len(norm) && norm[j] != ' ' {
			j++
		}
		if j == i {
			break
		}
		tok := norm[i:j]
		i = j
		if r, _ := utf8.DecodeRuneInString(tok); isHan(r) {
			words += hanTokens(tok, fn)
			prev = ""
			continue
		}
		words++
		fn(finish(hashString(hashByte(fnvOffset, kindWord), tok)))
		if prev != "" {
			h := hashString(hashByte(fnvOffset, kindBigram), prev)
			fn(finish(hashString(hashByte(h, ' '), tok)))
		}
		prev = tok

	}
	for _, f := range features {
		fn(finish(hashString(hashByte(fnvOffset, kindFeature), f)))
	}
	fn(finish(hashByte(hashByte(fnvOffset, kindLength), lengthBucket(words))))
}

// hanTokens emits the characters of a run of Chinese characters, and
// each run of two and three; it returns how many words the run counts for
// (a character in two, roughly a word).
func hanTokens(run string, fn func(uint32)) int {
	var rs [3]string // the last three characters, as substrings of run
	n := 0
	for i := 0; i < len(run); {
		_, size := utf8.DecodeRuneInString(run[i:])
		c := run[i : i+size]
		i += size
		rs[0], rs[1], rs[2] = rs[1], rs[2], c
		n++
		fn(finish(hashString(hashByte(fnvOffset, kindHan1), c)))
		if n >= 2 {
			fn(finish(hashString(hashString(hashByte(fnvOffset, kindHan2), rs[1]), c)))
		}
		if n >= 3 {
			fn(finish(hashString(hashString(hashString(hashByte(fnvOffset, kindHan3), rs[0]), rs[1]), c)))
		}
	}
	return (n + 1) / 2
}

func isHan(r rune) bool {
	return r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r))
}

func lengthBucket(words int) byte {
	switch {
	case words == 0:
		return kindNoTokens
	case words == 1:
		return '1'
	case words <= 3:
		return '3'
	case words <= 7:
		return '7'
	case words <= 15:
		return 'f'
	case words <= 31:
		return 'F'
	}
	return 'L'
}
