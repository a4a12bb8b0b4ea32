package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Query is a ranked read of the active layer.
type Query struct {
	Text   string
	Filter *Filter // nil: every record (of the caller's tenant)
	// TopK bounds the hits; Threshold is the least relevance a hit has
	// (0 keeps records sharing no term with Text too).
	TopK      int
	Threshold float64
}

// Hit is a record a search found, with its relevance in [0, 1].
type Hit struct {
	Record *memory.Record
	Score  float64
}

// Search ranks the active records the filter lets through, of the
// caller's tenant only (memory.TenantOf): lexically by BM25 (bm25.go), or
// by the hybrid of semantic.go when the index has a Semantic. Those at or
// above the threshold come back, best first (newest first among equal
// scores), at most TopK.
//
// It tests the filter on the index's entries when the filter tests only
// fields they hold, and loads only the records it may return: those that
// score above the TopK-th and those tied with it, which are ordered by
// their update times unless the entries hold them. When the filter selects
// exactly the entries of a part kept in memory, their terms come counted
// by earlier searches (terms.go).
func (x *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	out := []Hit{}
	if q.TopK <= 0 {
		return out, nil
	}
	f, _, subject, scope, ok, err := prepare(ctx, q.Filter)
	if err != nil || !ok {
		return out, err
	}
	terms := uniq(Tokenize(q.Text))
	if len(terms) > MaxQueryTerms {
		return out, CheckQuery(q.Text)
	}
	pk := partKey(subject, scope)
	err = x.read(ctx, pk, func(sn storeapi.Snapshot, pv *partView) error {
		threshold := q.Threshold
		if x.semantic != nil {
			threshold = 0 // every candidate's lexical relevance is needed
		}
		docs, recs, scored, err := x.score(ctx, sn, pv, pk, f, terms, threshold)
		if err != nil {
			return err
		}
		var cands []docScore
		if x.semantic != nil {
			var ok bool
			if cands, ok = x.hybrid(ctx, q, docs, scored); ok {
				return x.best(sn, q, docs, recs, cands, &out)
			}
		}
		// Drop what is under the threshold; with none, documents sharing
		// no term score 0 and pass too: all tie for the places left.
		for _, s := range scored {
			if s.rel >= q.Threshold {
				cands = append(cands, s)
			}
		}
		if q.Threshold <= 0 && len(cands) < q.TopK && len(scored) < len(docs) {
			hit := make([]bool, len(docs))
			for _, s := range scored {
				hit[s.doc] = true
			}
			for d := range docs {
				if !hit[d] {
					cands = append(cands, docScore{doc: d})
				}
			}
		}
		return x.best(sn, q, docs, recs, cands, &out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// best loads the TopK best candidates and appends them to out, best first.
// Where the entries hold every candidate's update time, the order is known
// before loading: the best TopK are picked and loaded. Otherwise all are
// sorted by score and the TopK loaded with those tied with the last of
// them, whose update times order them.
func (x *Index) best(sn storeapi.Snapshot, q Query, docs []*entry, recs []*memory.Record, cands []docScore, out *[]Hit) error {
	timed := recs == nil && !slices.ContainsFunc(cands, func(c docScore) bool { return docs[c.doc].CreatedAt.IsZero() })
	better := func(a, b docScore) int {
		switch {
		case a.raw != b.raw:
			return cmp.Compare(b.raw, a.raw)
		case !timed || a.doc == b.doc:
			return 0
		case newerEntry(docs[a.doc], docs[b.doc]):
			return -1
		}
		return 1
	}
	loaded := map[int]*memory.Record{}
	load := func(d int) error {
		if _, ok := loaded[d]; ok {
			return nil
		}
		if recs != nil {
			loaded[d] = recs[d]
			return nil
		}
		r, err := activeRecord(sn, docs[d])
		loaded[d] = r
		return err
	}
	var kept []docScore
	if timed {
		kept = bestOf(cands, q.TopK, better)
	} else {
		slices.SortFunc(cands, better)
		for _, c := range cands {
			if len(kept) >= q.TopK && c.raw != kept[len(kept)-1].raw {
				break
			}
			kept = append(kept, c)
		}
	}
	for _, c := range kept {
		if err := load(c.doc); err != nil {
			return err
		}
	}
	slices.SortFunc(kept, func(a, b docScore) int {
		switch {
		case a.doc == b.doc:
			return 0
		case a.raw != b.raw:
			return cmp.Compare(b.raw, a.raw)
		case Newer(loaded[a.doc], loaded[b.doc]):
			return -1
		}
		return 1
	})
	for _, c := range kept[:min(len(kept), q.TopK)] {
		*out = append(*out, Hit{Record: loaded[c.doc], Score: c.rel})
	}
	return nil
}

// score scores the documents of a search: the entries of the records the
// filter lets through, their records too when the filter tests fields the
// entries do not hold (recs, by document; nil otherwise), and the scores
// of those holding a query term, in document order, but for those that
// cannot reach the threshold.
func (x *Index) score(ctx context.Context, sn storeapi.Snapshot, pv *partView, pk string, f *Filter, terms []string,
	threshold float64) (docs []*entry, recs []*memory.Record, scored []docScore, err error) {
	onIndex := f.indexable()
	sc := newScan(ctx, f, &x.examined)
	// Each document holds a count per query term (bm25Corpus.tf, or the
	// part's scoring): a long query costs that much more per record, in
	// CPU and in memory.
	sc.fixed += int64(len(terms))
	if pv != nil && onIndex && f.selectsPart(pk) {
		pt := partTermsOf(*pv) // counted once per change of the part, not per read
		if err := sc.chargeMany(len(pt.docs)); err != nil {
			return nil, nil, nil, err
		}
		return pt.docs, nil, pt.score(terms, threshold), nil
	}
	subject, scope, _ := f.Pinned()
	pins := And(scopeFilter(scope))
	if subject != "" {
		pins.Kids = append(pins.Kids, Eq("subject_id", subject))
	}
	c := newBM25Corpus(terms)
	scratch := &memory.Record{Status: memory.StatusActive} // an entry, tested in place of its record
	add := func(e *entry) error {
		if err := sc.charge(len(e.Summary)); err != nil {
			return err
		}
		if onIndex {
			if !f.Match(e.asRecord(scratch)) {
				return nil
			}
		} else {
			if !pins.Match(e.asRecord(scratch)) {
				return nil
			}
			r, err := activeRecord(sn, e)
			if err != nil {
				return err
			}
			if !f.Match(r) {
				return nil
			}
			recs = append(recs, r)
		}
		c.addEntry(e)
		docs = append(docs, e)
		return nil
	}
	if pv != nil {
		for _, ch := range pv.chunks {
			for _, e := range ch {
				if err := add(e); err != nil {
					return nil, nil, nil, err
				}
			}
		}
	} else {
		var addErr error
		err := sn.ScanActiveIndex(ctx, subject, scope, func(e storeapi.ActiveEntry, _ uint64) bool {
			addErr = add(newEntry(e, false))
			return addErr == nil
		})
		if err = cmp.Or(addErr, err); err != nil {
			return nil, nil, nil, err
		}
	}
	raw, rel := c.scores()
	for d := range raw {
		if raw[d] > 0 {
			scored = append(scored, docScore{d, raw[d], rel[d]})
		}
	}
	if !onIndex && recs == nil {
		recs = []*memory.Record{} // records were tested: none to load
	}
	return docs, recs, scored, nil
}

// List returns the active records the filter lets through, of the
// caller's tenant only, in the index's key order (subject, then record id:
// oldest first within a subject), at most limit (0: all).
func (x *Index) List(ctx context.Context, f *Filter, limit int) ([]*memory.Record, error) {
	return x.ListAfter(ctx, f, memory.Position{}, limit)
}

// ListAfter is List starting after a place in its order (a page's cursor,
// memory.PositionOf the last record of the page before). Entries before it
// are passed over untested: only compared, and not charged to the read's
// work budget.
func (x *Index) ListAfter(ctx context.Context, f *Filter, after memory.Position, limit int) ([]*memory.Record, error) {
	out := []*memory.Record{}
	f, tenant, subject, scope, ok, err := prepare(ctx, f)
	if err != nil || !ok {
		return out, err
	}
	onIndex, words := f.indexable(), f.words()
	err = x.read(ctx, partKey(subject, scope), func(sn storeapi.Snapshot, pv *partView) error {
		var err error
		scratch := &memory.Record{Status: memory.StatusActive}
		sc := newScan(ctx, f, &x.examined)
		hit := func(e *entry) bool {
			if !after.Before(e.SubjectID, e.ID) {
				err = sc.skip()
				return err == nil
			}
			if err = sc.charge(len(e.Summary)); err != nil {
				return false
			}
			if onIndex && !f.Match(e.asRecord(scratch)) {
				return true
			}
			var r *memory.Record
			if r, err = activeRecord(sn, e); err != nil {
				return false
			}
			if f.Match(r) && tenant.Covers(r.Scope) {
				out = append(out, r)
			}
			return limit <= 0 || len(out) < limit
		}
		switch {
		case pv == nil:
			serr := sn.ScanActiveIndex(ctx, subject, scope, func(e storeapi.ActiveEntry, _ uint64) bool { return hit(newEntry(e, false)) })
			return cmp.Or(err, serr)
		case len(words) > 0:
			// The longest word is likely the rarest: the fewest entries to test.
			w := slices.MaxFunc(words, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
			partTextOf(*pv).holding(w, hit)
			return err
		}
		for _, c := range pv.chunks {
			for _, e := range c {
				if !hit(e) {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// prepare confines a read's filter (nil: every record) to the caller's
// tenant and returns it with the tenant and the ids it pins; ok is false
// when nothing can match. Errors: EINVALID for an id operand no record
// can hold (a NUL byte), checked before the store sees it.
func prepare(ctx context.Context, f *Filter) (_ *Filter, _ memory.Tenant, subject string, scope memory.Scope, ok bool, err error) {
	if f == nil {
		f = And()
	}
	if err := f.checkIDs(); err != nil {
		return nil, memory.Tenant{}, "", memory.Scope{}, false, err
	}
	tenant := memory.TenantOf(ctx)
	f = confine(f, tenant)
	subject, scope, ok = f.Pinned()
	return f, tenant, subject, scope, ok, nil
}

// asRecord fills r with what the entry holds, for a filter to test.
func (e *entry) asRecord(r *memory.Record) *memory.Record {
	r.ID, r.SubjectID, r.Layer, r.Scope, r.Summary = e.ID, e.SubjectID, e.Layer, e.Scope, e.Summary
	r.CreatedAt, r.ActivatedAt = e.CreatedAt, e.ActivatedAt
	return r
}

// activeRecord loads the record of an entry from the snapshot the entry
// was read with (an aligned part's, or the snapshot's own index): it is
// active there (doc.go, invariant 1), or the index is out of step with the
// store, which is a bug reported as an internal error.
func activeRecord(sn storeapi.Snapshot, e *entry) (*memory.Record, error) {
	r, err := sn.Record(e.ID)
	switch {
	case memory.ErrorCode(err) == memory.ENOTFOUND:
		return nil, fmt.Errorf("search: the index of active records names %s, which the store does not hold", e.ID)
	case err != nil:
		return nil, fmt.Errorf("search: load %s: %w", e.ID, err)
	case r.Status != memory.StatusActive || r.SubjectID != e.SubjectID:
		return nil, fmt.Errorf("search: the index of active records names %s of %q, which the store holds as %s of %q",
			e.ID, e.SubjectID, r.Status, r.SubjectID)
	}
	return r, nil
}

// bestOf returns the n first of cands in the order cmp defines, in that
// order, without sorting them all.
func bestOf(cands []docScore, n int, cmp func(a, b docScore) int) []docScore {
	best := make([]docScore, 0, min(n, len(cands))+1)
	for _, c := range cands {
		if len(best) == n && cmp(c, best[n-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(best, c, cmp)
		best = slices.Insert(best, i, c)
		if len(best) > n {
			best = best[:n]
		}
	}
	return best
}

// newerEntry is newer on entries, which hold their records' times.
func newerEntry(a, b *entry) bool {
	ta, tb := a.ActivatedAt, b.ActivatedAt
	if ta.IsZero() {
		ta = a.CreatedAt
	}
	if tb.IsZero() {
		tb = b.CreatedAt
	}
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.ID > b.ID
}

// Newer orders records newest first by UpdatedAt (ids are ULIDs, so they
// break ties).
func Newer(a, b *memory.Record) bool {
	ta, tb := UpdatedAt(a), UpdatedAt(b)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.ID > b.ID
}

var _ memory.ActiveLister = (*Index)(nil)

// ListActive is List for a native query (memory.ListFilter): the
// governor's List reads through it (memory.Options.Active).
func (x *Index) ListActive(ctx context.Context, f memory.ListFilter) ([]*memory.Record, error) {
	flt, err := FromList(f)
	if err != nil {
		return nil, err
	}
	return x.ListAfter(ctx, flt, f.After, f.Limit)
}
