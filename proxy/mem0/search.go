package mem0

import (
	"context"
	"net/http"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

// searchParams is a search as every route asks for it.
type searchParams struct {
	query     string
	filter    *filter
	topK      int
	threshold float64
}

// search ranks the active layer (search.Index.Search): records the filter
// lets through, of the caller's tenant (reads never see pending,
// superseded or rejected versions), best first, at most topK, those under
// the threshold left out. A handler without an index lists through the
// governor and ranks what it listed (search.Rank).
func (h *Handler) search(ctx context.Context, p searchParams) ([]memoryJSON, error) {
	q := search.Query{Text: p.query, TopK: p.topK, Threshold: p.threshold}
	var scope memory.Scope
	if p.filter != nil {
		q.Filter, scope = p.filter.ast, p.filter.scope()
	}
	if h.index == nil {
		if err := search.CheckQuery(q.Text); err != nil {
			return nil, err
		}
		recs, err := h.gov.List(ctx, memory.ListFilter{Scope: scope})
		if err != nil {
			return nil, err
		}
		if recs, err = search.Select(ctx, q.Filter, recs); err != nil {
			return nil, err
		}
		q.Filter = nil // tested
		return toHits(search.Rank(recs, q)), nil
	}
	hits, err := h.index.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	return toHits(hits), nil
}

// toHits shapes search hits, each with its score.
func toHits(hits []search.Hit) []memoryJSON {
	out := make([]memoryJSON, len(hits))
	for i, hit := range hits {
		out[i] = toMemory(hit.Record)
		score := hit.Score
		out[i].Score = &score
	}
	return out
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
		leaf, err := search.Leaf("categories", "in", items)
		if err != nil {
			return nil, memory.Errorf(memory.EINVALID, "%s", err.Error())
		}
		out.ast.Kids = append(out.ast.Kids, leaf)
	}
	if len(metadata) > 0 {
		p := &filterParser{}
		leaves, err := p.field("metadata", metadata, 0)
		if err != nil {
			return nil, memory.Errorf(memory.EINVALID, "metadata: %s", err.Error())
		}
		out.ast.Kids = append(out.ast.Kids, leaves...)
	}
	return out, nil
}

// searchRoute answers a search route: the request's search, with threshold
// the route's default, in an envelope or as a bare array.
func (h *Handler) searchRoute(w http.ResponseWriter, r *http.Request, threshold float64, envelope bool) {
	p, fields, err := h.readSearch(w, r, threshold)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerSearch(w, r, p, fields, envelope)
}

func (h *Handler) searchV3(w http.ResponseWriter, r *http.Request) {
	h.searchRoute(w, r, thresholdV3, true)
}

func (h *Handler) searchV2(w http.ResponseWriter, r *http.Request) {
	h.searchRoute(w, r, thresholdV2, false)
}

// searchV1 is the deprecated v1 search: entity ids at the top level, a
// bare array back.
func (h *Handler) searchV1(w http.ResponseWriter, r *http.Request) { h.searchV2(w, r) }

func (h *Handler) ossSearch(w http.ResponseWriter, r *http.Request) {
	h.searchRoute(w, r, thresholdOSS, true)
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
