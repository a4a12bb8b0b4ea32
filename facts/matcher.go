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

// candidate is an active memory a write may state the same fact as, with
// its search relevance and how Compare reads the pair.
type candidate struct {
	rec   *memory.Record
	score float64
	rel   Relation
	why   string
}

// MatchFact returns the strongest match for rec (a repeat, then an update,
// then a possible conflict; the best ranked among equals), or nil.
func (m *Matcher) MatchFact(ctx context.Context, rec *memory.Record) (*memory.FactMatch, error) {
	cands, err := m.candidates(ctx, rec)
	if err != nil {
		return nil, err
	}
	return lexical(cands), nil
}

// candidates returns the ranked active memories of rec's subject and
// scope, best first, each compared with rec.
func (m *Matcher) candidates(ctx context.Context, rec *memory.Record) ([]candidate, error) {
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
	text := parse(rec.Summary)
	out := make([]candidate, 0, len(hits))
	for _, h := range hits {
		r := h.Record
		if r.ID == rec.ID || r.SubjectID != rec.SubjectID || r.Scope != rec.Scope || r.Op == memory.OpDelete {
			continue // a match is in the same subject and scope
		}
		rel, why := compare(text, parse(r.Summary))
		out = append(out, candidate{rec: r, score: h.Score, rel: rel, why: why})
	}
	return out, nil
}

// lexical returns Compare's strongest match among cands (the best ranked
// among equals), or nil.
func lexical(cands []candidate) *memory.FactMatch {
	best := -1
	for i, c := range cands {
		if c.rel > Distinct && (best < 0 || c.rel > cands[best].rel) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return cands[best].match(kinds[cands[best].rel], cands[best].why)
}

func (c candidate) match(kind memory.MatchKind, why string) *memory.FactMatch {
	return &memory.FactMatch{Kind: kind, SlotID: c.rec.SlotID, RecordID: c.rec.ID, Reason: why, Record: c.rec}
}

var kinds = map[Relation]memory.MatchKind{Repeat: memory.MatchRepeat, Update: memory.MatchUpdate, Possible: memory.MatchPossible}
