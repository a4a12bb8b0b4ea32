package search

import (
	"context"
	"math"
)

// Semantic scores records by meaning. Scores returns the cosine similarity in [-1, 1] of the query
// to each record id it holds a vector for (ids without one are left out). An error or a ctx
// deadline means no semantic part: ranking falls back to lexical only.
type Semantic interface {
	Scores(ctx context.Context, query string, ids []string) (map[string]float64, error)
}

// The hybrid ranking, used when the index has a Semantic: every record the
// filter lets through is a candidate, not only those sharing a term with
// the query (a memory may say the same thing in other words), and its
// relevance is
//
//	0.3 · lexical + 0.7 · max(0, cosine)   for a record with a vector,
//	lexical                                for a record without one yet,
//
// where lexical is the BM25 relevance in [0, 1] (BM25) and cosine the
// Semantic's similarity; a negative cosine (unrelated meaning) counts as
// none. Threshold and TopK apply to that relevance; ties go to the newer
// record. The Semantic is asked once per search, for every candidate,
// within SemanticTimeout (or the request's deadline if sooner); an error
// or a timeout ranks the search lexically, as without a Semantic.
const (
	lexicalWeight  = 0.3
	semanticWeight = 0.7
)

// hybrid returns the candidates of a search ranked by the hybrid
// relevance (raw and rel both hold it), those under the threshold left
// out; ok is false when the Semantic gave nothing (the search is then
// lexical).
func (x *Index) hybrid(ctx context.Context, q Query, docs []*entry, scored []docScore) (cands []docScore, ok bool) {
	ids := make([]string, len(docs))
	for d, e := range docs {
		ids[d] = e.ID
	}
	sctx, cancel := context.WithTimeout(ctx, x.semWait)
	defer cancel()
	cos, err := x.semantic.Scores(sctx, q.Text, ids)
	if err != nil {
		x.log.Debug("search: no semantic scores; ranking lexically", "err", err)
		return nil, false
	}
	lex := make([]float64, len(docs))
	for _, s := range scored {
		lex[s.doc] = s.rel
	}
	for d, e := range docs {
		rel := lex[d]
		if c, ok := cos[e.ID]; ok && !math.IsNaN(c) {
			rel = lexicalWeight*lex[d] + semanticWeight*math.Max(0, math.Min(1, c))
		}
		if rel >= q.Threshold {
			cands = append(cands, docScore{doc: d, raw: rel, rel: rel})
		}
	}
	return cands, true
}
