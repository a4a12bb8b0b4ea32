package facts

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

// Matcher is the memory.FactMatcher over the search index. Where the
// index keeps the subject's part in memory (a store with a commit feed,
// within its budget), it keeps with it an index of the subject's facts
// (index.go) that yields every active memory of the write's scope that
// Compare could relate to the write, and Compare decides on each: the
// answer is the one comparing the write with all of them would give.
// Otherwise (a store without a feed, a part over budget) the candidates
// are the memories of the subject that rank highest for the write's text
// (BM25; with an embedder, by meaning too), and Compare decides on those.
type Matcher struct {
	Index *search.Index
	// Candidates is how many ranked memories of the subject are compared
	// when the index keeps no part of it (0: 8).
	Candidates int
}

var _ memory.FactMatcher = (*Matcher)(nil)

// maxQueryRunes bounds the text searched for: a write longer than this
// is searched for by its beginning (a repeat of it still ranks first),
// well within the terms a search takes (search.MaxQueryTerms), Chinese
// included (a term per pair of characters).
const maxQueryRunes = 512

// candidate is an active memory a write may state the same fact as, with
// its relevance (search's score, or the share of words in common) and how
// Compare reads the pair.
type candidate struct {
	rec   *memory.Record
	score float64
	rel   Relation
	why   string
}

// MatchFact returns the strongest match for rec (a repeat, then an update,
// then a possible conflict), or nil. Among equals it takes, from the
// index of the subject's facts, the memory with most words in common with
// the write, then the newest; from a search, the best ranked.
func (m *Matcher) MatchFact(ctx context.Context, rec *memory.Record) (*memory.FactMatch, error) {
	cands, err := m.candidates(ctx, rec, 1)
	if err != nil {
		return nil, err
	}
	return lexical(cands), nil
}

// candidates returns active memories of rec's subject and scope, best
// first, each compared with rec. From the index of the subject's facts:
// the first most of those Compare relates to rec (every one it could
// relate to is there). Otherwise: the memories a search ranks highest
// for rec's text (BM25; with an embedder, by meaning too), Distinct ones
// included.
func (m *Matcher) candidates(ctx context.Context, rec *memory.Record, most int) ([]candidate, error) {
	text := parse(rec.Summary)
	f, err := m.Index.Follow(ctx, rec.SubjectID, followerKey{}, newSubjectFacts)
	if err != nil {
		return nil, fmt.Errorf("facts: index of %s: %w", rec.SubjectID, err)
	}
	if f == nil {
		return m.searchCandidates(ctx, rec, text)
	}
	rel := f.(*subjectFacts).related(rec.Summary, text, rec.Scope)
	slices.SortFunc(rel, func(a, b relatedDoc) int {
		return cmp.Or(cmp.Compare(b.rel, a.rel), cmp.Compare(b.overlap, a.overlap),
			cmp.Compare(b.id, a.id)) // ids are ULIDs: newest first
	})
	var out []candidate
	for _, d := range rel {
		if len(out) >= most {
			break
		}
		// The index may be a moment behind a commit that is not a
		// free-text write of the subject (those wait for the fact lock):
		// a memory that left since is passed over.
		r, err := m.Index.Active(ctx, d.id)
		if err != nil {
			return nil, fmt.Errorf("facts: candidate: %w", err)
		}
		if r != nil && matchable(rec, r) {
			out = append(out, candidate{rec: r, score: d.overlap, rel: d.rel, why: d.why})
		}
	}
	return out, nil
}

// searchCandidates are candidates by a search of the subject's memories.
func (m *Matcher) searchCandidates(ctx context.Context, rec *memory.Record, text *clause) ([]candidate, error) {
	// The subject alone selects a part of the index as it is: the scope
	// is tested on the hits.
	n := m.candidateCount()
	query := rec.Summary
	if rs := []rune(query); len(rs) > maxQueryRunes {
		query = string(rs[:maxQueryRunes])
	}
	hits, err := m.Index.Search(ctx, search.Query{Text: query,
		Filter: search.Eq("subject_id", rec.SubjectID), TopK: n})
	if err != nil {
		return nil, fmt.Errorf("facts: candidates: %w", err)
	}
	out := make([]candidate, 0, len(hits))
	for _, h := range hits {
		if r := h.Record; matchable(rec, r) {
			rel, why := compare(text, parse(r.Summary))
			out = append(out, candidate{rec: r, score: h.Score, rel: rel, why: why})
		}
	}
	return out, nil
}

// candidateCount is how many memories a search compares, and a model is
// shown at most: Candidates, or 8.
func (m *Matcher) candidateCount() int {
	if m.Candidates > 0 {
		return m.Candidates
	}
	return 8
}

// matchable reports whether the active memory r may match the write rec:
// another memory of its subject and scope.
func matchable(rec, r *memory.Record) bool {
	return r.ID != rec.ID && r.SubjectID == rec.SubjectID && r.Scope == rec.Scope && r.Op != memory.OpDelete
}

// lexical returns Compare's strongest match among cands (the first among
// equals), or nil.
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
