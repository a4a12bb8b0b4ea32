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
// are ordered by their update times.
func (h *Handler) search(ctx context.Context, p searchParams) ([]memoryJSON, error) {
	out := []memoryJSON{}
	if p.topK <= 0 {
		return out, nil
	}
	terms := uniq(tokenize(p.query))
	onIndex := p.filter.indexable()
	err := h.gov.ViewActive(ctx, func(v memory.ActiveView) error {
		c := newBM25Corpus(terms)
		var ids []string
		var recs []*memory.Record                            // loaded records, by document; nil until needed
		entry := &memory.Record{Status: memory.StatusActive} // what the index holds, tested in place of the record
		err := v.Scan(memory.ListFilter{Scope: p.filter.scope()}, func(e memory.ActiveEntry) (bool, error) {
			var r *memory.Record
			if onIndex {
				entry.ID, entry.SubjectID, entry.Layer, entry.Scope, entry.Summary = e.ID, e.SubjectID, e.Layer, e.Scope, e.Summary
				if !p.filter.match(entry) {
					return true, nil
				}
			} else {
				var err error
				if r, err = v.Record(e.ID); err != nil {
					return false, err
				}
				if r.Status != memory.StatusActive || !p.filter.match(r) {
					return true, nil
				}
			}
			c.addText(e.Summary)
			ids = append(ids, e.ID)
			recs = append(recs, r)
			return true, nil
		})
		if err != nil {
			return err
		}
		raw, rel := c.scores()
		// Drop what is under the threshold, keep the topK best and those
		// tied with the last of them, then load and order these only.
		var cands []int
		for i := range ids {
			if rel[i] >= p.threshold {
				cands = append(cands, i)
			}
		}
		slices.SortFunc(cands, func(a, b int) int { return cmp.Compare(raw[b], raw[a]) })
		if len(cands) > p.topK {
			last := raw[cands[p.topK-1]]
			n := p.topK
			for n < len(cands) && raw[cands[n]] == last {
				n++ // ties with the last place: their update times decide
			}
			cands = cands[:n]
		}
		for _, i := range cands {
			if recs[i] == nil {
				if recs[i], err = v.Record(ids[i]); err != nil {
					return err
				}
			}
		}
		slices.SortFunc(cands, func(a, b int) int {
			switch {
			case a == b:
				return 0
			case raw[a] != raw[b]:
				return cmp.Compare(raw[b], raw[a])
			case newer(recs[a], recs[b]):
				return -1
			}
			return 1
		})
		for _, i := range cands[:min(len(cands), p.topK)] {
			m := toMemory(recs[i])
			score := rel[i]
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
