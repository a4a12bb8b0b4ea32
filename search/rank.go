package search

import (
	"sort"

	"github.com/memgate/memgate/memory"
)

// Rank is Search over records a caller already listed: the active ones
// the query's filter lets through are ranked lexically as Search ranks
// them (BM25, newest first among equal scores), those under the threshold
// left out, at most TopK. It tokenizes every record: it serves a caller
// without an Index (a Mem0 handler built without a store), and is the
// plain ranking the Index's tests hold Search to.
func Rank(recs []*memory.Record, q Query) []Hit {
	out := []Hit{}
	var kept []*memory.Record
	for _, r := range recs {
		if r.Status == memory.StatusActive && (q.Filter == nil || q.Filter.Match(r)) {
			kept = append(kept, r)
		}
	}
	docs := make([][]string, len(kept))
	for i, r := range kept {
		docs[i] = Tokenize(r.Summary)
	}
	raw, rel := BM25(Tokenize(q.Text), docs)
	order := make([]int, len(kept))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		i, j := order[a], order[b]
		if raw[i] != raw[j] {
			return raw[i] > raw[j]
		}
		return Newer(kept[i], kept[j])
	})
	for _, i := range order {
		if len(out) >= q.TopK {
			break
		}
		if rel[i] >= q.Threshold {
			out = append(out, Hit{Record: kept[i], Score: rel[i]})
		}
	}
	return out
}
