package mem0

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/memgate/memgate/memory"
)

// searchParams is a search as every route asks for it.
type searchParams struct {
	query     string
	filter    *filter
	topK      int
	threshold float64
}

// search ranks the active layer lexically: records the filter lets through
// (reads never see pending, superseded or rejected versions) are scored by
// BM25 against the query; those at or above the threshold come back, best
// first (newest first among equal scores), at most topK. With threshold 0
// nothing is filtered out.
//
// It scores what the index of active records holds (scope, layer, summary)
// when the filter tests nothing else, and loads only the records it may
// return: those that score above the topK-th and those tied with it, which
// are ordered by their update times. When the filter selects exactly one
// entity id, the store's cache of the index hands over that entity's
// entries with their terms counted by earlier queries (searchpart.go).
func (h *Handler) search(ctx context.Context, p searchParams) ([]memoryJSON, error) {
	out := []memoryJSON{}
	if p.topK <= 0 {
		return out, nil
	}
	terms := uniq(tokenize(p.query))
	err := h.gov.ViewActive(ctx, func(v memory.ActiveView) error {
		docs, recs, scored, err := h.score(v, p, terms)
		if err != nil {
			return err
		}
		// Drop what is under the threshold, then load the best: the topK
		// and those tied with the last of them, whose update times order
		// them. A cached entry may name a record this snapshot does not
		// hold as active (a commit in flight): it is passed over.
		var cands []docScore
		for _, s := range scored {
			if s.rel >= p.threshold {
				cands = append(cands, s)
			}
		}
		if p.threshold <= 0 && len(cands) < p.topK && len(scored) < len(docs) {
			// Documents sharing no term score 0 and pass too: all tie
			// for the places left.
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
		// Where the index holds every candidate's update time, the order
		// is known before loading: the best topK are picked and loaded,
		// unless one of them is no longer active. Otherwise all are
		// sorted by score and the topK loaded with those tied with the
		// last of them, whose update times order them.
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
		load := func(d int) (*memory.Record, error) { // nil: not active in this snapshot
			if recs != nil {
				return recs[d], nil
			}
			if r, ok := loaded[d]; ok {
				return r, nil
			}
			r, err := v.Active(docs[d].ID)
			loaded[d] = r
			return r, err
		}
		var kept []docScore
		if timed {
			kept = bestOf(cands, p.topK, better)
			for _, c := range kept {
				if r, err := load(c.doc); err != nil {
					return err
				} else if r == nil {
					kept = nil // a commit in flight: the slow way
					break
				}
			}
		}
		if kept == nil {
			slices.SortFunc(cands, better)
			for _, c := range cands {
				if len(kept) >= p.topK && (timed || c.raw != kept[len(kept)-1].raw) {
					break
				}
				if r, err := load(c.doc); err != nil {
					return err
				} else if r != nil {
					kept = append(kept, c)
				}
			}
		}
		for _, c := range kept {
			loaded[c.doc], _ = load(c.doc)
		}
		slices.SortFunc(kept, func(a, b docScore) int {
			switch {
			case a.doc == b.doc:
				return 0
			case a.raw != b.raw:
				return cmp.Compare(b.raw, a.raw)
			case newer(loaded[a.doc], loaded[b.doc]):
				return -1
			}
			return 1
		})
		for _, c := range kept[:min(len(kept), p.topK)] {
			m := toMemory(loaded[c.doc])
			score := c.rel
			m.Score = &score
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// score scores the documents of a search: the entries of the records the
// filter lets through, their records too when the filter tests fields the
// index does not hold (recs, by document; nil otherwise), and the scores
// of those holding a query term, in document order.
func (h *Handler) score(v memory.ActiveView, p searchParams, terms []string) (docs []*memory.ActiveEntry, recs []*memory.Record, scored []docScore, err error) {
	onIndex := p.filter.indexable()
	scope := p.filter.scope()
	part, whole, err := v.Part(memory.ListFilter{Scope: scope})
	if err != nil {
		return nil, nil, nil, err
	}
	if whole && onIndex && selectsScope(p.filter, scope) {
		// The filter lets the part's entries through and nothing else.
		pt := partTermsOf(part)
		return pt.docs, nil, pt.score(terms, p.threshold), nil
	}
	c := newBM25Corpus(terms)
	entry := &memory.Record{Status: memory.StatusActive} // what the index holds, tested in place of the record
	err = v.ScanEntries(memory.ListFilter{Scope: scope}, func(e *memory.ActiveEntry) (bool, error) {
		var r *memory.Record
		if onIndex {
			entry.ID, entry.SubjectID, entry.Layer, entry.Scope, entry.Summary = e.ID, e.SubjectID, e.Layer, e.Scope, e.Summary
			if !p.filter.match(entry) {
				return true, nil
			}
		} else {
			var err error
			if r, err = v.Active(e.ID); err != nil {
				return false, err
			}
			if r == nil || !p.filter.match(r) {
				return true, nil
			}
			recs = append(recs, r)
		}
		c.addEntry(e)
		docs = append(docs, e)
		return true, nil
	})
	if err != nil {
		return nil, nil, nil, err
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

// newerEntry is newer on the index entries of records, which hold their
// times.
func newerEntry(a, b *memory.ActiveEntry) bool {
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

// newer orders records newest first (ids are ULIDs, so they break ties).
func newer(a, b *memory.Record) bool {
	ta, tb := updatedAt(a), updatedAt(b)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.ID > b.ID
}

// Default thresholds: v3's and v2's, as Mem0 documents them; the
// open-source server filters nothing unless asked.
const (
	thresholdV3  = 0.1
	thresholdV2  = 0.3
	thresholdOSS = 0
)

// readSearch decodes a search body into params. Entity ids given at the
// top level (v1, open-source) are ANDed with the filters.
func (h *Handler) readSearch(w http.ResponseWriter, r *http.Request, defThreshold float64) (searchParams, []string, error) {
	var p searchParams
	body, err := readBody(w, r)
	if err != nil {
		return p, nil, err
	}
	var req searchRequest
	if err := decodeObject(body, &req); err != nil {
		return p, nil, err
	}
	if req.Query == nil || strings.TrimSpace(*req.Query) == "" {
		return p, nil, memory.Errorf(memory.EINVALID, "query is required: a non-empty string")
	}
	p.query = *req.Query
	f, err := parseFilters(req.Filters)
	if err != nil {
		return p, nil, err
	}
	extra, err := extraFilter(req.Categories, req.Metadata)
	if err != nil {
		return p, nil, err
	}
	p.filter = all(f, entityFilter(memory.Scope{UserID: req.UserID, AgentID: req.AgentID, AppID: req.AppID, RunID: req.RunID}), extra)
	if !p.filter.scoped() {
		return p, nil, errUnscoped
	}
	topK := req.TopK
	if topK == nil {
		topK = req.Limit
	}
	if p.topK, err = intParam("top_k", topK, 10, 1, 1000); err != nil {
		return p, nil, err
	}
	p.threshold = defThreshold
	if req.Threshold != nil {
		if t := *req.Threshold; t < 0 || t > 1 {
			return p, nil, memory.Errorf(memory.EINVALID, "threshold must be from 0 to 1")
		}
		p.threshold = *req.Threshold
	}
	return p, req.Fields, nil
}

var errUnscoped = memory.Errorf(memory.EINVALID,
	"filters must name at least one of user_id, agent_id, app_id or run_id (One of the filters: app_id, user_id, agent_id, run_id is required!)")

// extraFilter compiles the categories and metadata conditions some bodies
// carry beside filters.
func extraFilter(categories []string, metadata map[string]any) (*filter, error) {
	out := all()
	if len(categories) > 0 {
		items := make([]any, len(categories))
		for i, c := range categories {
			items[i] = c
		}
		test, err := categoriesCond("in", items)
		if err != nil {
			return nil, memory.Errorf(memory.EINVALID, "categories: %s", err.Error())
		}
		out.kids = append(out.kids, &filter{kind: kindLeaf, test: test, field: "categories"})
	}
	if len(metadata) > 0 {
		p := &filterParser{}
		leaves, err := p.field("metadata", metadata, 0)
		if err != nil {
			return nil, memory.Errorf(memory.EINVALID, "metadata: %s", err.Error())
		}
		out.kids = append(out.kids, leaves...)
	}
	return out, nil
}

func (h *Handler) searchV3(w http.ResponseWriter, r *http.Request) {
	p, fields, err := h.readSearch(w, r, thresholdV3)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerSearch(w, r, p, fields, true)
}

func (h *Handler) searchV2(w http.ResponseWriter, r *http.Request) {
	p, fields, err := h.readSearch(w, r, thresholdV2)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerSearch(w, r, p, fields, false)
}

// searchV1 is the deprecated v1 search: entity ids at the top level, a
// bare array back.
func (h *Handler) searchV1(w http.ResponseWriter, r *http.Request) { h.searchV2(w, r) }

func (h *Handler) ossSearch(w http.ResponseWriter, r *http.Request) {
	p, fields, err := h.readSearch(w, r, thresholdOSS)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerSearch(w, r, p, fields, true)
}

// answerSearch answers {"results": [...]} (wrapped) or a bare array.
func (h *Handler) answerSearch(w http.ResponseWriter, r *http.Request, p searchParams, fields []string, wrapped bool) {
	found, err := h.search(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var items any = found
	if len(fields) > 0 {
		if items, err = project(found, fields); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if wrapped {
		writeJSON(w, http.StatusOK, map[string]any{"results": items})
		return
	}
	writeJSON(w, http.StatusOK, items)
}
