package search

import "strings"

// chunkTerms is what BM25 needs of the entries of one chunk of a part
// (partView), laid out flat so a
// search scans arrays instead of chasing each entry's memo: each
// document's length and its distinct terms, from start[d] to start[d+1] in
// the term arrays: a hash of each (most comparisons with a query term fail
// on it), its text (text[off[j]:off[j+1]]) and its count.
//
// It is kept in the memo of the chunk's first entry. A chunk a reader may
// hold never changes (the store copies it to change it), so the address
// of its first slot and its length tell whether the chunk in the memo is
// this one: after a write, only the chunk it changed is laid out again.
type chunkTerms struct {
	chunk  []*entry // kept, so its address is not reused
	lens   []int
	total  int
	start  []int32 // by document, and one more
	owner  []int32 // by term: its document in the chunk
	hashes []uint32
	counts []int32
	off    []int32 // by term, and one more
	text   string
}

// chunkTermsKey keys chunkTerms in an entry's memo.
type chunkTermsKey struct{}

// chunkTermsOf returns a chunk's terms, counting them on first use.
func chunkTermsOf(c []*entry) *chunkTerms {
	if ct, ok := c[0].memo.load(chunkTermsKey{}).(*chunkTerms); ok && len(ct.chunk) == len(c) && &ct.chunk[0] == &c[0] {
		return ct
	}
	terms := make([]*docTerms, len(c))
	nt, nb := 0, 0 // terms, bytes of their text
	for i, e := range c {
		d := docTermsOf(e)
		terms[i] = d
		nt += len(d.terms)
		for _, t := range d.terms {
			nb += len(t)
		}
	}
	ct := &chunkTerms{chunk: c, lens: make([]int, len(c)), start: make([]int32, 1, len(c)+1),
		owner: make([]int32, 0, nt), hashes: make([]uint32, 0, nt), counts: make([]int32, 0, nt), off: make([]int32, 1, nt+1)}
	var text strings.Builder
	text.Grow(nb)
	for i, d := range terms {
		ct.lens[i] = d.n
		ct.total += d.n
		ct.hashes = append(ct.hashes, d.hashes...)
		ct.counts = append(ct.counts, d.counts...)
		for _, t := range d.terms {
			text.WriteString(t)
			ct.owner = append(ct.owner, int32(i))
			ct.off = append(ct.off, int32(text.Len()))
		}
		ct.start = append(ct.start, int32(len(ct.hashes)))
	}
	ct.text = text.String()
	c[0].memo.store(chunkTermsKey{}, ct)
	return ct
}

// partTerms is what BM25 needs of every entry of a part: its documents in
// order and each chunk's terms. It is kept in the part's memo, which the
// index renews when the part changes.
type partTerms struct {
	docs   []*entry
	chunks []*chunkTerms
	lens   []int
	total  int
}

// partTermsKey keys partTerms in a part's memo.
type partTermsKey struct{}

// partTermsOf returns the part's terms, counting what changed on first use.
func partTermsOf(part partView) *partTerms {
	if pt, ok := part.memo.load(partTermsKey{}).(*partTerms); ok {
		return pt
	}
	pt := &partTerms{docs: part.entries()}
	pt.lens = make([]int, 0, len(pt.docs))
	for _, c := range part.chunks {
		if len(c) == 0 {
			continue
		}
		ct := chunkTermsOf(c)
		pt.chunks = append(pt.chunks, ct)
		pt.lens = append(pt.lens, ct.lens...)
		pt.total += ct.total
	}
	part.memo.store(partTermsKey{}, pt)
	return pt
}

// docScore is the score of one document of a search.
type docScore struct {
	doc      int
	raw, rel float64
}

// score returns the scores of the part's documents holding a query term
// (terms are distinct), in document order, but for those that cannot reach
// the threshold; the others score 0. The figures are bm25Corpus.scores'
// to the bit: the same statistics, and each document's sum taken in query
// term order (bm25Stats.score).
func (pt *partTerms) score(terms []string, threshold float64) []docScore {
	if len(terms) == 0 || len(pt.lens) == 0 {
		return nil
	}
	qh := make([]uint32, len(terms))
	var mask uint64 // a bit for each query term's hash: most terms fail on it
	for i, t := range terms {
		qh[i] = termHash(t)
		mask |= 1 << (qh[i] & 63)
	}
	type hit struct{ doc, term, count int32 }
	var hits []hit
	df := make([]int, len(terms))
	// A long query looks its terms up in a map: with every bit of the
	// mask set, the loop below would compare each term of the part with
	// each of the query's.
	var index map[string]int
	if len(terms) > 8 {
		index = make(map[string]int, len(terms))
		for i, t := range terms {
			index[t] = i
		}
	}
	base := int32(0)
	for _, ct := range pt.chunks {
		for j := masked(ct.hashes, 0, mask); j < len(ct.hashes); j = masked(ct.hashes, j+1, mask) {
			if index != nil {
				if i, ok := index[ct.text[ct.off[j]:ct.off[j+1]]]; ok {
					hits = append(hits, hit{base + ct.owner[j], int32(i), ct.counts[j]})
					df[i]++
				}
				continue
			}
			h := ct.hashes[j]
			for i, q := range qh {
				if h != q {
					continue
				}
				if ct.text[ct.off[j]:ct.off[j+1]] == terms[i] {
					hits = append(hits, hit{base + ct.owner[j], int32(i), ct.counts[j]})
					df[i]++
				}
				break
			}
		}
		base += int32(len(ct.lens))
	}
	st := newBM25Stats(df, len(pt.lens), pt.total)
	// A term adds less than idf·(k1+1) to a score: a document whose terms
	// cannot add up to the threshold is not scored.
	floor := threshold * st.mass * (1 - 1e-9)
	tf := make([]int32, len(terms))
	var out []docScore
	for k := 0; k < len(hits); {
		d, bound := hits[k].doc, 0.0
		for ; k < len(hits) && hits[k].doc == d; k++ {
			tf[hits[k].term] = hits[k].count
			bound += st.idf[hits[k].term] * (bm25K1 + 1)
		}
		if threshold <= 0 || bound >= floor {
			raw, rel := st.score(tf, pt.lens[d])
			out = append(out, docScore{int(d), raw, rel})
		}
		clear(tf)
	}
	return out
}

// masked returns the index of the first hash from i on with its bit in
// mask, or len(hs): the tight loop most of a search runs.
func masked(hs []uint32, i int, mask uint64) int {
	for ; i < len(hs); i++ {
		if mask&(1<<(hs[i]&63)) != 0 {
			return i
		}
	}
	return i
}
