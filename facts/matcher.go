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

// MatchFact returns the strongest match for rec (a repeat, then an update,
// then a possible conflict), or nil. Among equals it takes the memory with
// most words in common with the write, then the newest.
func (m *Matcher) MatchFact(ctx context.Context, rec *memory.Record) (*memory.FactMatch, error) {
	text := parse(rec.Summary)
	f, err := m.Index.Follow(ctx, rec.SubjectID, followerKey{}, newSubjectFacts)
	if err != nil {
		return nil, fmt.Errorf("facts: index of %s: %w", rec.SubjectID, err)
	}
	if f == nil {
		return m.searchMatch(ctx, rec, text)
	}
	rel := f.(*subjectFacts).related(rec.Summary, text, rec.Scope)
	slices.SortFunc(rel, func(a, b relatedDoc) int {
		return cmp.Or(cmp.Compare(b.rel, a.rel), cmp.Compare(b.overlap, a.overlap),
			cmp.Compare(b.id, a.id)) // ids are ULIDs: newest first
	})
	for _, d := range rel {
		// The index may be a moment behind a commit that is not a
		// free-text write of the subject (those wait for the fact lock):
		// a memory that left since is passed over.
		r, err := m.Index.Active(ctx, d.id)
		if err != nil {
			return nil, fmt.Errorf("facts: candidate: %w", err)
		}
		if r != nil && matchable(rec, r) {
			return match(d.rel, d.why, r), nil
		}
	}
	return nil, nil
}

// searchMatch is MatchFact by a search of the subject's memories.
func (m *Matcher) searchMatch(ctx context.Context, rec *memory.Record, text *clause) (*memory.FactMatch, error) {
	// The subject alone selects a part of the index as it is: the scope
	// is tested on the hits.
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
	for _, h := range hits {
		r := h.Record
		if !matchable(rec, r) {
			continue
		}
		rel, why := compare(text, parse(r.Summary))
		if rel > bestRel {
			bestRel = rel
			best = match(rel, why, r)
		}
	}
	return best, nil
}

// matchable reports whether the active memory r may match the write rec:
// another memory of its subject and scope.
func matchable(rec, r *memory.Record) bool {
	return r.ID != rec.ID && r.SubjectID == rec.SubjectID && r.Scope == rec.Scope && r.Op != memory.OpDelete
}

func match(rel Relation, why string, r *memory.Record) *memory.FactMatch {
	return &memory.FactMatch{Kind: kinds[rel], SlotID: r.SlotID, RecordID: r.ID, Reason: why, Record: r}
}

var kinds = map[Relation]memory.MatchKind{Repeat: memory.MatchRepeat, Update: memory.MatchUpdate, Possible: memory.MatchPossible}
