package proxy

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

// Native serves memgate's own REST dialect on the agent listener. It can
// write (always through the governor) and read the active layer; it has no
// route that approves, rejects, rolls back or lists reviews.
type Native struct {
	Gov *memory.Governor
	// Search reads the active layer for the list route: the index the
	// sidecar shares between dialects. Nil: the governor's List, which
	// scans the store.
	Search *search.Index
	Log    *slog.Logger
	// Keys, when it holds any, are required on every route, and confine
	// each caller to its key's tenant.
	Keys *AgentKeys
}

// Register adds the native routes to mux.
func (n *Native) Register(mux *http.ServeMux) {
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="memgate"`)
		WriteError(w, r, n.Log, err)
	}
	for pattern, fn := range map[string]http.HandlerFunc{
		"POST /api/v1/memories":                                     n.create,
		"GET /api/v1/memories":                                      n.list,
		"GET /api/v1/memories/{id}":                                 n.get,
		"DELETE /api/v1/memories/{id}":                              n.delete,
		"GET /api/v1/subjects/{subjectId}/facts/{factType}/history": n.history,
	} {
		mux.Handle(pattern, n.Keys.Require(fn, fail))
	}
}

// statusOfOutcome maps a submit outcome to the native HTTP status.
var statusOfOutcome = map[memory.Outcome]int{
	memory.OutcomeApplied:   http.StatusCreated,
	memory.OutcomeParked:    http.StatusAccepted,
	memory.OutcomeUnchanged: http.StatusOK,
}

func (n *Native) create(w http.ResponseWriter, r *http.Request) {
	var c memory.Candidate
	if err := DecodeJSON(w, r, &c); err != nil {
		WriteError(w, r, n.Log, err)
		return
	}
	if c.SubjectID == "" && c.SlotID == "" && c.Scope.Entity() == "" {
		WriteError(w, r, n.Log, memory.Errorf(memory.EINVALID, "subjectId is required (or a scope: userId, agentId, appId or runId)"))
		return
	}
	c.Actor.Dialect, c.Actor.RemoteAddr = "native", remoteIP(r)
	n.submit(w, r, c)
}

func (n *Native) delete(w http.ResponseWriter, r *http.Request) {
	c := memory.Candidate{Op: memory.OpDelete, SlotID: r.PathValue("id"), CandidateSource: memory.SourceTool,
		Actor: memory.Actor{Dialect: "native", RemoteAddr: remoteIP(r),
			AgentID: r.Header.Get("X-Memgate-Agent-Id"), RunID: r.Header.Get("X-Memgate-Run-Id")}}
	if rec, err := n.Gov.Get(r.Context(), c.SlotID); err == nil {
		c.SlotID = rec.SlotID // accept a record id as well as a memory (slot) id
	}
	n.submit(w, r, c)
}

func (n *Native) submit(w http.ResponseWriter, r *http.Request, c memory.Candidate) {
	res, err := n.Gov.Submit(r.Context(), c)
	if err != nil {
		WriteError(w, r, n.Log, err)
		return
	}
	if res.Outcome == memory.OutcomeRefused {
		body := ErrorBody{Record: res.Record}
		body.Error.Code = memory.EREJECTED
		body.Error.Message = "policy rejected this memory"
		if d := res.Record.Decision; d != nil && len(d.Reasons) > 0 {
			msgs := make([]string, len(d.Reasons))
			for i, r := range d.Reasons {
				msgs[i] = r.Rule + ": " + r.Message
			}
			body.Error.Message += " (" + strings.Join(msgs, "; ") + ")"
		}
		WriteJSON(w, http.StatusUnprocessableEntity, body)
		return
	}
	WriteJSON(w, statusOfOutcome[res.Outcome], res.Record)
}

// listParams are the query parameters of GET /api/v1/memories; any other is
// refused, so a misspelt or unsupported one is not silently ignored.
var listParams = []string{"subjectId", "layer", "q", "userId", "agentId", "appId", "runId", "limit", "after"}

// Paging of GET /api/v1/memories: a page holds at most limit records
// (default ListDefaultLimit, at most ListMaxLimit); when more follow, the
// answer's next is the cursor to pass as after for the next page.
const (
	ListDefaultLimit = 100
	ListMaxLimit     = 1000
)

// listPage is the answer of GET /api/v1/memories: the records of one page
// (count is how many it holds) and, when more follow, the next page's
// cursor. Clients that read only memories and count keep working; one
// that needs every record follows next.
type listPage struct {
	Memories []*memory.Record `json:"memories"`
	Count    int              `json:"count"`
	Next     string           `json:"next,omitempty"`
}

func (n *Native) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains(listParams, k) {
			WriteError(w, r, n.Log, memory.Errorf(memory.EINVALID, "unknown query parameter %q (known: %s)", k, strings.Join(listParams, ", ")))
			return
		}
	}
	f := memory.ListFilter{SubjectID: q.Get("subjectId"), Layer: memory.Layer(q.Get("layer")), Query: q.Get("q"),
		Scope: memory.Scope{UserID: q.Get("userId"), AgentID: q.Get("agentId"), AppID: q.Get("appId"), RunID: q.Get("runId")}}
	limit, err := listLimit(q.Get("limit"), q.Has("limit"))
	if err != nil {
		WriteError(w, r, n.Log, err)
		return
	}
	if f.After, err = decodeCursor(q.Get("after")); err != nil {
		WriteError(w, r, n.Log, err)
		return
	}
	f.Limit = limit + 1 // one more tells whether a next page exists
	recs, err := n.listActive(r.Context(), f)
	if err != nil {
		WriteError(w, r, n.Log, err)
		return
	}
	page := listPage{Memories: recs}
	if len(recs) > limit {
		page.Memories = recs[:limit]
		page.Next = encodeCursor(memory.PositionOf(recs[limit-1]))
	}
	page.Count = len(page.Memories)
	WriteJSON(w, http.StatusOK, page)
}

// listLimit reads the limit parameter.
func listLimit(v string, given bool) (int, error) {
	if !given {
		return ListDefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > ListMaxLimit {
		return 0, memory.Errorf(memory.EINVALID, "limit must be a whole number from 1 to %d, not %.40q", ListMaxLimit, v)
	}
	return n, nil
}

// A cursor is the place of a page's last record in list order (subject,
// record id), opaque to clients: base64url of subject NUL id.
func encodeCursor(p memory.Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(p.SubjectID + "\x00" + p.ID))
}

func decodeCursor(v string) (memory.Position, error) {
	if v == "" {
		return memory.Position{}, nil
	}
	bad := memory.Errorf(memory.EINVALID, "after is not a cursor a list answered as next")
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return memory.Position{}, bad
	}
	subject, id, ok := strings.Cut(string(raw), "\x00")
	if !ok || id == "" {
		return memory.Position{}, bad
	}
	return memory.Position{SubjectID: subject, ID: id}, nil
}

// listActive reads the active layer through the search index when there
// is one.
func (n *Native) listActive(ctx context.Context, f memory.ListFilter) ([]*memory.Record, error) {
	if n.Search == nil {
		return n.Gov.List(ctx, f)
	}
	sf, err := search.FromList(f)
	if err != nil {
		return nil, err
	}
	return n.Search.ListAfter(ctx, sf, f.After, f.Limit)
}

func (n *Native) get(w http.ResponseWriter, r *http.Request) {
	// Reads see the active layer (rule 7): a pending or replaced version
	// by id is not found here; its history route shows every version.
	rec, err := n.Gov.GetActive(r.Context(), r.PathValue("id"))
	if err != nil {
		WriteError(w, r, n.Log, err)
		return
	}
	WriteJSON(w, http.StatusOK, rec)
}

func (n *Native) history(w http.ResponseWriter, r *http.Request) {
	// Slots are named by folded ids (see memory.FoldID).
	subject, err1 := memory.FoldID(r.PathValue("subjectId"))
	factType, err2 := memory.FoldID(r.PathValue("factType"))
	if err := errors.Join(err1, err2); err != nil {
		WriteError(w, r, n.Log, memory.Errorf(memory.EINVALID, "%v", err))
		return
	}
	slot := n.Gov.SlotID(r.Context(), subject, factType)
	recs, err := n.Gov.History(r.Context(), slot)
	if err != nil {
		WriteError(w, r, n.Log, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"slotId": slot, "versions": recs})
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
