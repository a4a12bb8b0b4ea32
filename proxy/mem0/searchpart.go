package mem0

import (
	"strings"

	"github.com/memgate/memgate/memory"
)

// partTerms is what BM25 needs of every entry of a part of the store's
// cache of the index (memory.ActivePart), laid out flat so a search scans
// arrays instead of chasing each entry's memo: each document's length and
// its distinct terms, from start[d] to start[d+1] in the term arrays: a
// hash of each (most comparisons with a query term fail on it), its text
// (text[off[j]:off[j+1]]) and its count. It is kept in the part's memo,
// which the store renews when the part changes.
type partTerms struct {
	docs   []*memory.ActiveEntry
	lens   []int
	total  int
	start  []int32 // by document, and one more
	owner  []int32 // by term: its document
	hashes []uint32
	counts []int32
	off    []int32 // by term, and one more
	text   string
}

// partTermsKey keys partTerms in a part's memo.
type partTermsKey struct{}

// partTermsOf returns the part's terms, counting them on first use.
func partTermsOf(part memory.ActivePart) *partTerms {
	if pt, ok := part.Memo.Load(partTermsKey{}).(*partTerms); ok {
		return pt
	}
	docs := part.Entries()
	terms := make([]*docTerms, len(docs))
	nt, nb := 0, 0 // terms, bytes of their text
	for i, e := range docs {
		d, ok := e.Memo.Load(docTermsKey{}).(*docTerms)
		if !ok {
			d = newDocTerms(e.Summary)
			e.Memo.Store(docTermsKey{}, d)
		}
		terms[i] = d
		nt += len(d.terms)
		for _, t := range d.terms {
			nb += len(t)
		}
	}
	pt := &partTerms{docs: docs, lens: make([]int, len(docs)), start: make([]int32, 1, len(docs)+1),
		owner: make([]int32, 0, nt), hashes: make([]uint32, 0, nt), counts: make([]int32, 0, nt), off: make([]int32, 1, nt+1)}
	var text strings.Builder
	text.Grow(nb)
	for i, d := range terms {
		pt.lens[i] = d.n
		pt.total += d.n
		pt.hashes = append(pt.hashes, d.hashes...)
		pt.counts = append(pt.counts, d.counts...)
		for _, t := range d.terms {
			text.WriteString(t)
			pt.owner = append(pt.owner, int32(i))
			pt.off = append(pt.off, int32(text.Len()))
		}
		pt.start = append(pt.start, int32(len(pt.hashes)))
	}
	pt.text = text.String()
	part.Memo.Store(partTermsKey{}, pt)
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
	hits := make([]hit, 0, len(pt.lens))
	df := make([]int, len(terms))
	for j, h := range pt.hashes {
		if mask&(1<<(h&63)) == 0 {
			continue
		}
		for i, q := range qh {
			if h != q {
				continue
			}
			if pt.text[pt.off[j]:pt.off[j+1]] == terms[i] {
				hits = append(hits, hit{pt.owner[j], int32(i), pt.counts[j]})
				df[i]++
			}
			break
		}
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

// selectsScope reports whether f lets through exactly the records whose
// entity ids are s's non-empty ones: a conjunction of equalities on entity
// ids that agree with s. The search may then take a cached part of the
// index as it is, untested.
func selectsScope(f *filter, s memory.Scope) bool {
	switch f.kind {
	case kindAnd:
		for _, k := range f.kids {
			if !selectsScope(k, s) {
				return false
			}
		}
		return true
	case kindLeaf:
		switch {
		case f.eq == "":
			return false
		case f.field == "user_id":
			return f.eq == s.UserID
		case f.field == "agent_id":
			return f.eq == s.AgentID
		case f.field == "app_id":
			return f.eq == s.AppID
		case f.field == "run_id":
			return f.eq == s.RunID
		}
	}
	return false
}
