// Package mem0 serves the Mem0 dialect on the agent listener: the Mem0
// Platform REST API (v1/v2/v3, as the mem0ai SDKs and the OpenClaw
// @mem0/openclaw-mem0 plugin call it) and the Mem0 open-source REST server's
// routes. It is a thin translator: each add, update and delete becomes
// memory candidates for the one governor, and each answer is shaped the way
// Mem0 clients parse it. A parked write answers {event_id, status:
// "PENDING"}; the event turns SUCCEEDED or FAILED when a reviewer decides,
// because its status is computed from the records it produced.
package mem0

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/search"
)

// Dialect is the name memgate records as the actor's dialect.
const Dialect = "mem0"

// Options configure a Handler. Gov and Events are required.
type Options struct {
	Gov *memory.Governor
	// Events keeps Mem0 events (what each write produced) durably.
	Events *EventLog
	Logger *slog.Logger
	// Keys are the agent listener's keys ("Authorization: Token <key>",
	// "X-API-Key: <key>" or "Authorization: Bearer <key>"), each confining
	// its caller to its tenant. None: no key is required, for a listener
	// bound to loopback.
	Keys *proxy.AgentKeys
	// APIKeys are plain keys, unconfined; used when Keys is nil.
	APIKeys []string
	// Extractor, if set, turns conversations added with infer=true into
	// facts, as Mem0's LLM does; without it each message is a candidate.
	Extractor Extractor
	// Search reads the active layer: the index the sidecar shares between
	// dialects (search.New). Nil: reads list through Gov and rank what
	// they listed (search.Rank).
	Search *search.Index
	Now    func() time.Time
	NewID  func() string
	// Erase, when set (the operator's --mem0-delete-erases), makes a
	// delete by entity (DELETE /v1/memories/?user_id=…, OSS DELETE
	// /memories) an erasure of that scope, confined to the caller's
	// tenant, instead of governed deletions of its active memories.
	Erase func(ctx context.Context, req memory.ErasureRequest) (memory.ErasureCounts, error)
}

// Handler serves the Mem0 routes.
type Handler struct {
	gov       *memory.Governor
	index     *search.Index
	events    *EventLog
	log       *slog.Logger
	keys      *proxy.AgentKeys
	erase     func(ctx context.Context, req memory.ErasureRequest) (memory.ErasureCounts, error)
	extractor Extractor
	now       func() time.Time
	newID     func() string
}

// New returns a Handler with defaults filled in.
func New(o Options) *Handler {
	h := &Handler{gov: o.Gov, index: o.Search, events: o.Events, log: o.Logger, keys: keysOf(o),
		extractor: o.Extractor, now: o.Now, newID: o.NewID, erase: o.Erase}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = func() time.Time { return time.Now().UTC() }
	}
	if h.newID == nil {
		h.newID = memory.NewULIDSource()
	}
	return h
}

// Register adds the Mem0 routes to mux (the agent listener's). Platform
// routes live under /v1/, /v2/ and /v3/; the open-source server's under
// /memories and /search. Mem0 spells its paths with a trailing slash; both
// spellings are served.
func (h *Handler) Register(mux *http.ServeMux) {
	both := func(method, path string, fn http.HandlerFunc) {
		hd := h.auth(fn)
		mux.Handle(method+" "+path+"/{$}", hd)
		mux.Handle(method+" "+path, hd)
	}
	// Mem0 Platform.
	both("GET", "/v1/ping", h.ping)
	both("POST", "/v3/memories/add", h.addV3)
	both("POST", "/v1/memories", h.addV1)
	both("GET", "/v1/memories", h.listV1)
	both("DELETE", "/v1/memories", h.deleteByEntity)
	both("POST", "/v3/memories/search", h.searchV3)
	both("POST", "/v2/memories/search", h.searchV2)
	both("POST", "/v1/memories/search", h.searchV1)
	both("POST", "/v3/memories", h.listV3)
	both("POST", "/v2/memories", h.listV2)
	both("GET", "/v1/memories/{id}", h.get)
	both("PUT", "/v1/memories/{id}", h.update)
	both("DELETE", "/v1/memories/{id}", h.delete)
	both("GET", "/v1/memories/{id}/history", h.history)
	both("GET", "/v1/events", h.listEvents)
	both("GET", "/v1/event/{id}", h.getEvent)
	for _, prefix := range []string{"/v1/", "/v2/", "/v3/"} {
		mux.Handle(prefix, h.auth(http.HandlerFunc(h.notFound)))
	}
	// Mem0 open-source REST server.
	both("POST", "/memories", h.ossAdd)
	both("GET", "/memories", h.ossList)
	both("DELETE", "/memories", h.ossDeleteAll)
	both("GET", "/memories/{id}", h.ossGet)
	both("PUT", "/memories/{id}", h.ossUpdate)
	both("DELETE", "/memories/{id}", h.ossDelete)
	both("GET", "/memories/{id}/history", h.ossHistory)
	both("POST", "/search", h.ossSearch)
}

func (h *Handler) ping(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "org_id": "memgate", "project_id": "memgate",
		"user_email": nil, "message": "memgate governs this memory; writes may wait for human review"})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, memory.Errorf(memory.ENOTFOUND, "memgate does not serve %s %s (Mem0 routes served: add, search, list, get, update, delete, history, events, ping)",
		r.Method, r.URL.Path))
}
