package mem0

import (
	"net/http"
	"strings"

	"github.com/memgate/memgate/memory"
)

// addAnswer is the answer of the v3 add and of the open-source server's
// add: the applied changes and an entry per write that did not apply
// (PENDING_REVIEW, REFUSED) as results, and the event to poll when anything
// waits for review.
type addAnswer struct {
	Message string        `json:"message"`
	Status  string        `json:"status"`
	EventID string        `json:"event_id"`
	Results []resultJSON  `json:"results"`
	Pending int           `json:"pending"`
	Refused []refusalJSON `json:"refused"`
}

func newAddAnswer(res *writeResult) addAnswer {
	return addAnswer{Message: res.message(), Status: res.status(), EventID: res.event.ID, Results: res.all(),
		Pending: len(res.parked), Refused: res.refusals()}
}

// pendingJSON is the v1 entry of writes that wait: Mem0's queued answer.
type pendingJSON struct {
	Message string `json:"message"`
	Status  string `json:"status"`
	EventID string `json:"event_id"`
}

func (h *Handler) addV3(w http.ResponseWriter, r *http.Request) {
	res, _, ok := h.add(w, r, false)
	if ok {
		writeJSON(w, http.StatusOK, newAddAnswer(res))
	}
}

func (h *Handler) ossAdd(w http.ResponseWriter, r *http.Request) {
	res, _, ok := h.add(w, r, true)
	if ok {
		writeJSON(w, http.StatusOK, newAddAnswer(res))
	}
}

// addV1 answers as the v1 route does: a bare array (output_format v1.0,
// the default) or {"results": [...], "relations": []} (v1.1), holding the
// applied changes, an entry per write that did not apply and, when
// anything waits for review, Mem0's queued entry {message, status:
// "PENDING", event_id}.
func (h *Handler) addV1(w http.ResponseWriter, r *http.Request) {
	res, req, ok := h.add(w, r, false)
	if !ok {
		return
	}
	items := make([]any, 0, len(res.results)+len(res.waiting)+1)
	for _, it := range res.all() {
		items = append(items, it)
	}
	if len(res.parked) > 0 {
		items = append(items, pendingJSON{Message: res.message(), Status: statusPending, EventID: res.event.ID})
	}
	if req.OutputFormat == "v1.1" {
		writeJSON(w, http.StatusOK, map[string]any{"results": items, "relations": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, items)
}

// add decodes an add, turns it into candidates and writes them. It answers
// errors itself; ok is false when it did.
func (h *Handler) add(w http.ResponseWriter, r *http.Request, oss bool) (*writeResult, *addRequest, bool) {
	body, err := readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return nil, nil, false
	}
	var req addRequest
	if err := decodeObject(body, &req); err != nil {
		h.fail(w, r, err)
		return nil, nil, false
	}
	msgs, err := parseMessages(req.Messages)
	if err != nil {
		h.fail(w, r, err)
		return nil, nil, false
	}
	if len(msgs) == 0 && req.Text != nil {
		msgs = []Message{{Role: "user", Content: strings.TrimSpace(*req.Text)}}
	}
	if !hasText(msgs) && len(req.DeducedMemories) == 0 {
		h.fail(w, r, memory.Errorf(memory.EINVALID, "messages is required: a non-empty array of {role, content} objects with text"))
		return nil, nil, false
	}
	if len(req.DeducedMemories) > maxMessages {
		h.fail(w, r, memory.Errorf(memory.EINVALID, "deduced_memories has %d items, more than the %d allowed in one add", len(req.DeducedMemories), maxMessages))
		return nil, nil, false
	}
	scope := memory.TenantOf(r.Context()).Fill(req.scope()) // a key bound to alice need not name alice
	if scope == (memory.Scope{}) {
		msg := "At least one of user_id, agent_id, app_id or run_id is required, so the memory is scoped."
		if oss {
			msg = "At least one identifier (user_id, agent_id, run_id) is required."
		}
		h.fail(w, r, memory.Errorf(memory.EINVALID, "%s", msg))
		return nil, nil, false
	}
	expires, err := req.expiresAt()
	if err != nil {
		h.fail(w, r, err)
		return nil, nil, false
	}
	cands := h.addCandidates(r.Context(), h.writeRequest(r, scope, req.Metadata), &req, msgs)
	for i := range cands {
		cands[i].ExpiresAt = expires
	}
	if err := r.Context().Err(); err != nil {
		return nil, nil, false // the client went away during extraction; nothing was written
	}
	if err := validate(cands); err != nil {
		h.fail(w, r, err)
		return nil, nil, false
	}
	res, err := h.write(r.Context(), eventAdd, cands, body)
	if err != nil {
		h.fail(w, r, err)
		return nil, nil, false
	}
	return res, &req, true
}

func hasText(msgs []Message) bool {
	for _, m := range msgs {
		if m.Content != "" {
			return true
		}
	}
	return false
}
