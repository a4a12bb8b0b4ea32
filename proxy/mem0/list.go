package mem0

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/memgate/memgate/memory"
)

// page is a slice of a listing.
type page struct{ number, size int }

func (p page) of(n int) (lo, hi int) {
	lo = min((p.number-1)*p.size, n)
	return lo, min(lo+p.size, n)
}

// envelope is Mem0's paginated answer.
type envelope struct {
	Count    int     `json:"count"`
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  any     `json:"results"`
}

// pageURL is the URL of another page of the same listing.
func pageURL(r *http.Request, number, size int) *string {
	u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	q := r.URL.Query()
	q.Set("page", strconv.Itoa(number))
	q.Set("page_size", strconv.Itoa(size))
	u.RawQuery = q.Encode()
	s := u.String()
	return &s
}

func newEnvelope(r *http.Request, p page, total int, results any) envelope {
	env := envelope{Count: total, Results: results}
	if p.number*p.size < total {
		env.Next = pageURL(r, p.number+1, p.size)
	}
	if p.number > 1 {
		env.Previous = pageURL(r, p.number-1, p.size)
	}
	return env
}

// readPage reads page and page_size: the query parameters win over the
// body's, as Mem0 documents.
func readPage(r *http.Request, bodyPage, bodySize *float64, maxSize int) (page, error) {
	qp, err := queryInt(r, "page")
	if err != nil {
		return page{}, err
	}
	qs, err := queryInt(r, "page_size")
	if err != nil {
		return page{}, err
	}
	if qp == nil {
		qp = bodyPage
	}
	if qs == nil {
		qs = bodySize
	}
	var p page
	if p.number, err = intParam("page", qp, 1, 1, 1_000_000); err != nil {
		return p, err
	}
	p.size, err = intParam("page_size", qs, 100, 1, maxSize)
	return p, err
}

// queryPage reads a GET list's page from its query: page and page_size,
// limit standing for page_size when that is not given, at most maxSize.
func queryPage(r *http.Request, maxSize int) (page, error) {
	limit, err := queryInt(r, "limit")
	if err != nil {
		return page{}, err
	}
	return readPage(r, nil, limit, maxSize)
}

// readList decodes a v2/v3 list body into its filter and page.
func (h *Handler) readList(w http.ResponseWriter, r *http.Request, maxSize int) (*filter, page, []string, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, page{}, nil, err
	}
	var req listRequest
	if err := decodeObject(body, &req); err != nil {
		return nil, page{}, nil, err
	}
	f, err := parseFilters(req.Filters)
	if err != nil {
		return nil, page{}, nil, err
	}
	extra, err := listExtras(req.StartDate, req.EndDate, req.Keywords, req.Categories)
	if err != nil {
		return nil, page{}, nil, err
	}
	f = all(f, entityFilter(memory.Scope{UserID: req.UserID, AgentID: req.AgentID, AppID: req.AppID, RunID: req.RunID}), extra)
	if !f.scoped() {
		return nil, page{}, nil, errUnscoped
	}
	p, err := readPage(r, req.Page, req.PageSize, maxSize)
	return f, p, req.Fields, err
}

// listExtras compiles the date range, keywords and categories a list may
// carry beside its filters.
func listExtras(start, end, keywords string, categories []string) (*filter, error) {
	doc := map[string]any{}
	dates := map[string]any{}
	if s := strings.TrimSpace(start); s != "" {
		dates["gte"] = s
	}
	if s := strings.TrimSpace(end); s != "" {
		dates["lte"] = s
	}
	if len(dates) > 0 {
		doc["created_at"] = dates
	}
	if k := strings.TrimSpace(keywords); k != "" {
		doc["keywords"] = map[string]any{"icontains": k}
	}
	p := &filterParser{}
	f, err := p.object(doc, 0)
	if err != nil {
		return nil, memory.Errorf(memory.EINVALID, "%s", err.Error())
	}
	cats, err := extraFilter(categories, nil)
	if err != nil {
		return nil, err
	}
	return all(f, cats), nil
}

// listV3 answers POST /v3/memories/: a paginated envelope.
func (h *Handler) listV3(w http.ResponseWriter, r *http.Request) { h.listBody(w, r, 200, true) }

// listV2 answers POST /v2/memories/: one page as a bare array.
func (h *Handler) listV2(w http.ResponseWriter, r *http.Request) { h.listBody(w, r, 1000, false) }

// listBody answers a list whose filter and page the JSON body gives
// (pages of at most maxSize), paged in an envelope or as a bare array.
func (h *Handler) listBody(w http.ResponseWriter, r *http.Request, maxSize int, paged bool) {
	f, p, fields, err := h.readList(w, r, maxSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerList(w, r, f, p, fields, paged)
}

// listV1 answers the deprecated GET /v1/memories/?user_id=...: a bare
// array, or an envelope when both page and page_size are given.
func (h *Handler) listV1(w http.ResponseWriter, r *http.Request) {
	scope := memory.TenantOf(r.Context()).Fill(entityQuery(r)) // a key bound to alice need not name alice
	if scope == (memory.Scope{}) {
		h.fail(w, r, errUnscoped)
		return
	}
	q := r.URL.Query()
	extra, err := listExtras(q.Get("start_date"), q.Get("end_date"), q.Get("keywords"), q["categories"])
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := queryPage(r, 200)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerList(w, r, all(entityFilter(scope), extra), p, q["fields"], q.Has("page") && q.Has("page_size"))
}

// ossList answers the open-source server's GET /memories: {"results": [...]}.
func (h *Handler) ossList(w http.ResponseWriter, r *http.Request) {
	scope := memory.TenantOf(r.Context()).Fill(entityQuery(r)) // a key bound to alice need not name alice
	if scope == (memory.Scope{}) {
		h.fail(w, r, memory.Errorf(memory.EINVALID, "At least one identifier is required."))
		return
	}
	p, err := queryPage(r, 1000)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	recs, err := h.list(r.Context(), entityFilter(scope))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	lo, hi := p.of(len(recs))
	writeJSON(w, http.StatusOK, map[string]any{"results": toMemories(recs[lo:hi])})
}

func (h *Handler) answerList(w http.ResponseWriter, r *http.Request, f *filter, p page, fields []string, paged bool) {
	recs, err := h.list(r.Context(), f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	lo, hi := p.of(len(recs))
	var items any = toMemories(recs[lo:hi])
	if len(fields) > 0 {
		if items, err = project(toMemories(recs[lo:hi]), fields); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if paged {
		writeJSON(w, http.StatusOK, newEnvelope(r, p, len(recs), items))
		return
	}
	writeJSON(w, http.StatusOK, items)
}
