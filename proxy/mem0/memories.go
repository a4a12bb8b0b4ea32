package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

func errMemoryNotFound(id string) error {
	return memory.Errorf(memory.ENOTFOUND, "Memory not found! (%s)", clean(id, 80))
}

// versionsOf returns a memory's slot id and its versions, oldest first,
// given the memory id (its slot id) or the record id of one of its
// versions. Errors: ENOTFOUND.
func (h *Handler) versionsOf(ctx context.Context, id string) (string, []*memory.Record, error) {
	if len(id) > memory.MaxIDLen {
		return "", nil, errMemoryNotFound(id)
	}
	versions, err := h.gov.History(ctx, id)
	if err == nil {
		return id, versions, nil
	} else if memory.ErrorCode(err) != memory.ENOTFOUND {
		return "", nil, err
	}
	rec, err := h.gov.Get(ctx, id)
	if memory.ErrorCode(err) == memory.ENOTFOUND {
		return "", nil, errMemoryNotFound(id)
	} else if err != nil {
		return "", nil, err
	}
	versions, err = h.gov.History(ctx, rec.SlotID)
	return rec.SlotID, versions, err
}

// active returns a memory's active version. Errors: ENOTFOUND (also for a
// memory deleted, or only pending review).
func (h *Handler) active(ctx context.Context, id string) (*memory.Record, error) {
	_, versions, err := h.versionsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := len(versions) - 1; i >= 0; i-- {
		if versions[i].Status == memory.StatusActive {
			return versions[i], nil
		}
	}
	return nil, errMemoryNotFound(id)
}

// list returns the active records the filter lets through, of the
// caller's tenant, newest first.
func (h *Handler) list(ctx context.Context, f *filter) ([]*memory.Record, error) {
	var out []*memory.Record
	var err error
	if h.index != nil {
		out, err = h.index.List(ctx, f.ast, 0)
	} else { // no index: list through the governor, then filter
		if out, err = h.gov.List(ctx, memory.ListFilter{Scope: f.scope()}); err == nil {
			out, err = search.Select(ctx, f.ast, out)
		}
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return search.Newer(out[i], out[j]) })
	return out, nil
}

func toMemories(recs []*memory.Record) []memoryJSON {
	out := make([]memoryJSON, len(recs))
	for i, r := range recs {
		out[i] = toMemory(r)
	}
	return out
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	rec, err := h.active(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toMemory(rec))
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	slotID, versions, err := h.versionsOf(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toHistory(slotID, versions))
}

// changeAnswer answers an update or a delete: the memory as it now reads
// (for an applied update), and the governance outcome.
type changeAnswer struct {
	*memoryJSON
	ID      string `json:"id"`
	Message string `json:"message"`
	Status  string `json:"status"`
	EventID string `json:"event_id"`
	Event   string `json:"event"`
	// Results has the change's PENDING_REVIEW entry when it waits.
	Results []resultJSON `json:"results,omitempty"`
}

// actorScope is who an update or delete comes from: entity ids in the
// query when the client sends them, else the memory's own scope.
func actorScope(r *http.Request, memScope memory.Scope) memory.Scope {
	q := r.URL.Query()
	s := memory.Scope{UserID: q.Get("user_id"), AgentID: q.Get("agent_id"), AppID: q.Get("app_id"), RunID: q.Get("run_id")}
	if s == (memory.Scope{}) {
		return memScope
	}
	return s
}

// change submits an update or a delete of one memory and answers it. A
// write policy refuses outright is a 422: the client named this change.
func (h *Handler) change(w http.ResponseWriter, r *http.Request, typ string, c memory.Candidate, cur *memory.Record, payload []byte, doneMsg string) {
	if err := validate([]memory.Candidate{c}); err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.write(r.Context(), typ, []memory.Candidate{c}, payload)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ans := changeAnswer{ID: cur.SlotID, Status: res.status(), EventID: res.event.ID, Event: typ, Message: doneMsg}
	switch {
	case len(res.refused) > 0:
		h.refused(w, res.refused[0])
		return
	case len(res.parked) > 0:
		ans.Message, ans.Results = res.waiting[0].Memory, res.waiting
	case len(res.unchanged) > 0:
		ans.Event, ans.Message = eventNone, res.message()
		m := toMemory(cur)
		ans.memoryJSON = &m
	case len(res.applied) > 0 && typ != eventDelete:
		m := toMemory(res.applied[0])
		ans.memoryJSON, ans.ID = &m, m.ID
	}
	writeJSON(w, http.StatusOK, ans)
}

// update writes a new version of a memory (PUT): a governed write like any
// other, which may wait for review.
func (h *Handler) update(w http.ResponseWriter, r *http.Request) {
	h.updateWith(w, r, "Memory updated successfully!")
}

func (h *Handler) updateWith(w http.ResponseWriter, r *http.Request, doneMsg string) {
	cur, err := h.active(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req, err := decodeUpdate(body)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	text, hasText := req.newText()
	if !hasText && req.Metadata == nil {
		h.fail(w, r, memory.Errorf(memory.EINVALID, "text is required (or metadata)"))
		return
	}
	if !hasText {
		text = cur.Summary
	}
	metadata := req.Metadata
	if metadata == nil {
		metadata = cur.Metadata
	}
	wr := h.writeRequest(r, actorScope(r, cur.Scope), metadata)
	c := wr.candidate(text, memory.SourceUser, text, "mem0:"+modeUpdate+":user#0")
	c.SlotID, c.Scope = cur.SlotID, cur.Scope
	h.change(w, r, eventUpdate, c, cur, body, doneMsg)
}

// decodeUpdate reads a PUT body: an object, or (open-source clients) the
// new text as a bare JSON string.
func decodeUpdate(body []byte) (*updateRequest, error) {
	var req updateRequest
	if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, `"`) {
		var s string
		if err := unmarshalPart([]byte(t), &s); err != nil {
			return nil, memory.Errorf(memory.EINVALID, "malformed JSON: %v", err)
		}
		req.Text = &s
		return &req, nil
	}
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	return &req, nil
}

// delete deletes a memory: a governed write, parked like any other
// high-risk change (e.g. the deletion of a policy).
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	h.deleteWith(w, r, "Memory deleted successfully!")
}

func (h *Handler) deleteWith(w http.ResponseWriter, r *http.Request, doneMsg string) {
	cur, err := h.active(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	wr := h.writeRequest(r, actorScope(r, cur.Scope), nil)
	c := wr.candidate("", memory.SourceTool, "", "mem0:"+modeDelete+":tool#0")
	c.Op, c.SlotID, c.Scope = memory.OpDelete, cur.SlotID, cur.Scope
	payload, _ := json.Marshal(map[string]string{"memory_id": cur.SlotID})
	h.change(w, r, eventDelete, c, cur, payload, doneMsg)
}

// entityQuery reads entity ids from query parameters.
func entityQuery(r *http.Request) memory.Scope {
	q := r.URL.Query()
	return memory.Scope{UserID: q.Get("user_id"), AgentID: q.Get("agent_id"), AppID: q.Get("app_id"), RunID: q.Get("run_id")}
}

// deleteAllAnswer answers a delete by entity.
type deleteAllAnswer struct {
	Message string `json:"message"`
	Status  string `json:"status"`
	EventID string `json:"event_id"`
	Deleted int    `json:"deleted"`
	Pending int    `json:"pending"`
	Refused int    `json:"refused"`
}

// deleteByEntity deletes every active memory of an entity (DELETE
// /v1/memories/?user_id=...; never "*").
// Each deletion is governed on its own.
func (h *Handler) deleteByEntity(w http.ResponseWriter, r *http.Request) {
	h.deleteAllWith(w, r, "Memories deleted successfully!")
}

func (h *Handler) deleteAllWith(w http.ResponseWriter, r *http.Request, doneMsg string) {
	scope := entityQuery(r)
	if scope == (memory.Scope{}) {
		h.fail(w, r, memory.Errorf(memory.EINVALID, "At least one filter is required: user_id, agent_id, app_id or run_id."))
		return
	}
	for _, id := range []string{scope.UserID, scope.AgentID, scope.AppID, scope.RunID} {
		if strings.Contains(id, "*") {
			// A wildcard would reach every entity's memories at once.
			h.fail(w, r, memory.Errorf(memory.EINVALID, "A bulk delete names its entities: \"*\" is not accepted in user_id, agent_id, app_id or run_id."))
			return
		}
	}
	if h.erase != nil {
		h.eraseEntity(w, r, scope)
		return
	}
	recs, err := h.list(r.Context(), entityFilter(scope))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	wr := h.writeRequest(r, scope, nil)
	cands := make([]memory.Candidate, 0, len(recs))
	for _, rec := range recs {
		c := wr.candidate("", memory.SourceTool, "", "mem0:"+modeDelete+":tool#0")
		c.Op, c.SlotID, c.Scope = memory.OpDelete, rec.SlotID, rec.Scope
		cands = append(cands, c)
	}
	if err := validate(cands); err != nil {
		h.fail(w, r, err)
		return
	}
	payload, _ := json.Marshal(map[string]string{"user_id": scope.UserID, "agent_id": scope.AgentID,
		"app_id": scope.AppID, "run_id": scope.RunID})
	res, err := h.write(r.Context(), eventDelete, cands, payload)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	msg := doneMsg
	if len(res.parked)+len(res.refused) > 0 || len(cands) == 0 {
		msg = res.message()
	}
	if len(res.parked) > 0 {
		msg += fmt.Sprintf(". NOT DELETED YET: %d of %d deletions wait for a human reviewer; those memories stay until approved. Status: event_id %s.",
			len(res.parked), len(cands), res.event.ID)
	}
	writeJSON(w, http.StatusOK, deleteAllAnswer{Message: msg, Status: res.status(), EventID: res.event.ID,
		Deleted: len(res.applied), Pending: len(res.parked), Refused: len(res.refused)})
}

// eraseEntity answers a delete by entity as an erasure (Options.Erase):
// the scope is confined to the caller's tenant and matched on records'
// scope only.
func (h *Handler) eraseEntity(w http.ResponseWriter, r *http.Request, scope memory.Scope) {
	confined, err := memory.TenantOf(r.Context()).Confine(scope)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req := memory.ErasureRequest{Scope: memory.ErasureScope{UserID: confined.UserID, AgentID: confined.AgentID,
		AppID: confined.AppID, RunID: confined.RunID, ScopeOnly: true}, Reason: "Mem0 delete by entity", By: "agent"}
	counts, err := h.erase(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deleteAllAnswer{Message: fmt.Sprintf("Memories erased: %d (%d pending withdrawn).", counts.Records, counts.Pending),
		Status: "SUCCEEDED", Deleted: counts.Records})
}
