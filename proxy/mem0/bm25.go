package mem0

import (
	"math"
	"strings"
	"unicode"
)

// Okapi BM25 over the memories a search may return. The corpus is small
// (the active layer of a scope) and changes with every write, so it is
// scored per query instead of indexed.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25 ranks docs (already tokenized) for the query terms. It returns each
// doc's raw BM25 score and a relevance in [0, 1]: the score divided by what
// a document of average length containing every query term once would get
// (the idf mass of the query), capped at 1. A doc sharing no term scores 0.
func bm25(query []string, docs [][]string) (raw, relevance []float64) {
	raw = make([]float64, len(docs))
	relevance = make([]float64, len(docs))
	terms := uniq(query)
	if len(terms) == 0 || len(docs) == 0 {
		return raw, relevance
	}
	df := make(map[string]int, len(terms))
	total := 0
	tfs := make([]map[string]int, len(docs))
	for i, d := range docs {
		total += len(d)
		tf := map[string]int{}
		for _, t := range d {
			tf[t]++
		}
		tfs[i] = tf
		for _, t := range terms {
			if tf[t] > 0 {
				df[t]++
			}
		}
	}
	n := float64(len(docs))
	avgdl := math.Max(float64(total)/n, 1)
	idf := make(map[string]float64, len(terms))
	mass := 0.0
	for _, t := range terms {
		// The "+1" form keeps idf positive even for a term in every doc.
		idf[t] = math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
		mass += idf[t]
	}
	for i, d := range docs {
		norm := bm25K1 * (1 - bm25B + bm25B*float64(len(d))/avgdl)
		s := 0.0
		for _, t := range terms {
			if f := float64(tfs[i][t]); f > 0 {
				s += idf[t] * f * (bm25K1 + 1) / (f + norm)
			}
		}
		raw[i] = s
		if mass > 0 {
			relevance[i] = math.Min(1, s/mass)
		}
	}
	return raw, relevance
}

func uniq(ts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// stopwords are English function words that say nothing about a memory
// (read-only after initialization).
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does doing for from had has have
		having he her hers him his how i if in into is it its me my myself no not of on or our ours she should so
		some such than that the their them then there these they this those to too us very was we were what when
		where which who whom why will with would you your yours about any all also am just know tell remember`) {
		m[w] = true
	}
	return m
}()

// tokenize splits text into search terms: lowercase words of letters and
// digits, without stopwords and with a plural "s" dropped; runs of Chinese,
// Japanese or Korean characters become overlapping character pairs, since
// those scripts do not separate words.
func tokenize(text string) []string {
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
