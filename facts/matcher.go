package facts

import (
	"context"
	"fmt"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

// Matcher is the memory.FactMatcher over the search index: its
// candidates are the active memories of the write's subject and scope
// that rank highest for the write's text (BM25; with an embedder, by
// meaning too), and Compare decides.
type Matcher struct {
	Index *search.Index
	// Candidates is how many ranked memories of the subject are compared
	// (0: 8).
	Candidates int
}

var _ memory.FactMatcher = (*Matcher)(nil)

// maxQueryRunes bounds the text searched for: a write longer than this
// is searched for by its beginning (a repeat of it still ranks first),
// well within the terms a search takes (search.MaxQueryTerms), Chinese
// included (a term per pair of characters).
const maxQueryRunes = 512

// MatchFact returns the strongest match for rec (a repeat, then an update,
// then a possible conflict; the best ranked among equals), or nil.
func (m *Matcher) MatchFact(ctx context.Context, rec *memory.Record) (*memory.FactMatch, error) {
	// The subject alone selects a part of the index as it is, whose term
	// counts earlier searches keep (search/terms.go): a search of 10,000
	// memories then costs well under a millisecond. The scope is tested
	// on the hits.
	n := m.Candidates
	if n <= 0 {
		n = 8
	}
	query := rec.Summary
	if rs := []rune(query); len(rs) > maxQueryRunes {
		query = string(rs[:maxQueryRunes])
	}
	hits, err := m.Index.Search(ctx, search.Query{Text: query,
		Filter: search.Eq("subject_id", rec.SubjectID), TopK: n})
	if err != nil {
		return nil, fmt.Errorf("facts: candidates: %w", err)
	}
	var best *memory.FactMatch
	bestRel := Distinct
	text := parse(rec.Summary)
	for _, h := range hits {
		r := h.Record
		if r.ID == rec.ID || r.SubjectID != rec.SubjectID || r.Scope != rec.Scope || r.Op == memory.OpDelete {
			continue // a match is in the same subject and scope
		}
		rel, why := compare(text, parse(r.Summary))
		if rel > bestRel {
			bestRel = rel
			best = &memory.FactMatch{Kind: kinds[rel], SlotID: r.SlotID, RecordID: r.ID, Reason: why, Record: r}
		}
	}
	return best, nil
}

var kinds = map[Relation]memory.MatchKind{Repeat: memory.MatchRepeat, Update: memory.MatchUpdate, Possible: memory.MatchPossible}
