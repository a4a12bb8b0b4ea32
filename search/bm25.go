package search

import (
	"math"
	"slices"
)

// Okapi BM25 over the memories a search may return. The corpus is small
// (the active layer of a scope) and changes with every write, so it is
// scored per query instead of indexed.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// BM25 ranks docs (already tokenized) for the query terms. It returns each
// doc's raw BM25 score and a relevance in [0, 1]: the score divided by what
// a document of average length containing every query term once would get
// (the idf mass of the query), capped at 1. A doc sharing no term scores 0.
func BM25(query []string, docs [][]string) (raw, relevance []float64) {
	c := newBM25Corpus(uniq(query))
	for _, d := range docs {
		c.addTokens(d)
	}
	return c.scores()
}

// bm25Corpus gathers what BM25 needs of each document without keeping its
// tokens: its length and how often each query term occurs in it.
type bm25Corpus struct {
	terms  []string
	index  map[string]int // term -> position, for long queries
	hashes []uint32       // termHash of each term, for addDoc
	lens   []int
	tf     []int32 // len(terms) counts per document
	total  int
	word   []byte // scratch of addText
}

func newBM25Corpus(terms []string) *bm25Corpus {
	c := &bm25Corpus{terms: terms}
	if len(terms) > 8 {
		c.index = make(map[string]int, len(terms))
		for i, t := range terms {
			c.index[t] = i
		}
	}
	return c
}

func (c *bm25Corpus) docs() int { return len(c.lens) }

// addTokens adds a tokenized document.
func (c *bm25Corpus) addTokens(tokens []string) {
	c.newDoc()
	for _, t := range tokens {
		c.count(t)
	}
}

// addText adds a document by its text: tokenize's terms, counted without
// building them where the text is ASCII.
func (c *bm25Corpus) addText(text string) {
	for i := 0; i < len(text); i++ {
		if text[i] >= 0x80 {
			c.addTokens(Tokenize(text))
			return
		}
	}
	c.newDoc()
	word := c.word[:0]
	for i := 0; i <= len(text); i++ {
		var b byte
		if i < len(text) {
			b = text[i]
		}
		switch {
		case 'a' <= b && b <= 'z', '0' <= b && b <= '9':
			word = append(word, b)
		case 'A' <= b && b <= 'Z':
			word = append(word, b+('a'-'A'))
		default: // any other ASCII character ends a word, as in tokenize
			if len(word) > 0 && !isStopword(word) {
				if w := stemBytes(word); !(len(w) == 1 && (w[0] == 's' || w[0] == 't')) { // dropPossessive
					c.count(string(w)) // no allocation: the conversion only compares
				}
			}
			word = word[:0]
		}
	}
	c.word = word
}

// docTerms is what BM25 needs of a document, counted once and kept with
// an entry of a part (its memo): its length in
// terms, its distinct terms, a hash of each (most comparisons with a query
// term fail on it) and how often each occurs.
type docTerms struct {
	n      int
	terms  []string
	hashes []uint32
	counts []int32
}

// docTermsKey keys docTerms in an entry's memo.
type docTermsKey struct{}

func newDocTerms(text string) *docTerms {
	toks := Tokenize(text)
	d := &docTerms{n: len(toks)}
	for _, t := range toks {
		if i := slices.Index(d.terms, t); i >= 0 {
			d.counts[i]++
			continue
		}
		d.terms = append(d.terms, t)
		d.hashes = append(d.hashes, termHash(t))
		d.counts = append(d.counts, 1)
	}
	return d
}

// termHash is FNV-1a.
func termHash(t string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(t); i++ {
		h = (h ^ uint32(t[i])) * 16777619
	}
	return h
}

// addEntry adds an entry by its summary, through the terms counted with
// it if it has a memo (counting them there on first use).
func (c *bm25Corpus) addEntry(e *entry) {
	if e.memo == nil {
		c.addText(e.Summary)
		return
	}
	c.addDoc(docTermsOf(e))
}

// docTermsOf returns the terms of an entry of a part, counting them on
// first use.
func docTermsOf(e *entry) *docTerms {
	d, ok := e.memo.load(docTermsKey{}).(*docTerms)
	if !ok {
		d = newDocTerms(e.Summary)
		e.memo.store(docTermsKey{}, d)
	}
	return d
}

// addDoc adds a document by its counted terms.
func (c *bm25Corpus) addDoc(d *docTerms) {
	c.newDoc()
	doc := len(c.lens) - 1
	c.lens[doc] = d.n
	c.total += d.n
	tf := c.tf[doc*len(c.terms):]
	if c.index != nil {
		for j, t := range d.terms {
			if i, ok := c.index[t]; ok {
				tf[i] = d.counts[j]
			}
		}
		return
	}
	for i, qh := range c.termHashes() {
		for j, h := range d.hashes {
			if h == qh && d.terms[j] == c.terms[i] {
				tf[i] = d.counts[j]
				break
			}
		}
	}
}

// termHashes returns termHash of each query term.
func (c *bm25Corpus) termHashes() []uint32 {
	if c.hashes == nil {
		c.hashes = make([]uint32, len(c.terms))
		for i, q := range c.terms {
			c.hashes[i] = termHash(q)
		}
	}
	return c.hashes
}

func (c *bm25Corpus) newDoc() {
	c.lens = append(c.lens, 0)
	c.tf = append(c.tf, make([]int32, len(c.terms))...)
}

// count counts one token of the newest document.
func (c *bm25Corpus) count(t string) {
	d := len(c.lens) - 1
	c.lens[d]++
	c.total++
	tf := c.tf[d*len(c.terms):]
	if c.index != nil {
		if i, ok := c.index[t]; ok {
			tf[i]++
		}
		return
	}
	for i, q := range c.terms {
		if q == t {
			tf[i]++
		}
	}
}

// scores returns each document's raw score and relevance (see BM25).
func (c *bm25Corpus) scores() (raw, relevance []float64) {
	docs, terms := len(c.lens), c.terms
	raw = make([]float64, docs)
	relevance = make([]float64, docs)
	if len(terms) == 0 || docs == 0 {
		return raw, relevance
	}
	df := make([]int, len(terms))
	for d := range docs {
		for i, f := range c.tf[d*len(terms) : (d+1)*len(terms)] {
			if f > 0 {
				df[i]++
			}
		}
	}
	st := newBM25Stats(df, docs, c.total)
	for d := range docs {
		raw[d], relevance[d] = st.score(c.tf[d*len(terms):(d+1)*len(terms)], c.lens[d])
	}
	return raw, relevance
}

// bm25Stats is what scoring a document needs of the corpus: each query
// term's idf, their sum (the query's idf mass) and the average length.
type bm25Stats struct {
	idf         []float64
	mass, avgdl float64
}

// newBM25Stats takes each term's document frequency, the number of
// documents and their total length in terms.
func newBM25Stats(df []int, docs, total int) bm25Stats {
	n := float64(docs)
	st := bm25Stats{idf: make([]float64, len(df)), avgdl: math.Max(float64(total)/n, 1)}
	for i := range df {
		// The "+1" form keeps idf positive even for a term in every doc.
		st.idf[i] = math.Log(1 + (n-float64(df[i])+0.5)/(float64(df[i])+0.5))
		st.mass += st.idf[i]
	}
	return st
}

// score returns a document's raw score and relevance (see BM25) from the
// counts of each query term in it and its length.
func (st *bm25Stats) score(tf []int32, dl int) (raw, relevance float64) {
	if !slices.ContainsFunc(tf, func(f int32) bool { return f > 0 }) {
		return 0, 0 // as the sum below would be
	}
	norm := bm25K1 * (1 - bm25B + bm25B*float64(dl)/st.avgdl)
	s := 0.0
	for i, f := range tf {
		if f := float64(f); f > 0 {
			s += st.idf[i] * f * (bm25K1 + 1) / (f + norm)
		}
	}
	if st.mass > 0 {
		relevance = math.Min(1, s/st.mass)
	}
	return s, relevance
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
