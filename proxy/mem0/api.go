package mem0

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// The Mem0 memory model as Go calls, for the other dialects that offer it
// (the MCP server's Mem0 tools). Each call runs the very functions the
// REST routes run — the filter compiler, the ranking, the record and event
// shapes, the event log — so a memory reads the same in every dialect: the
// same ids, text, categories ([layer]), RFC 3339 timestamps, scores and
// event statuses. Authentication is the caller's; tenants ride in ctx
// (memory.WithTenant), where the governor confines every call.

// Memory is a memory as every Mem0 dialect answers it: its id is the
// slot's stable id, categories hold its layer, times are RFC 3339 (UTC,
// nanoseconds), score is set by a search.
type Memory = memoryJSON

// Result is one entry of a write's or an event's results: an applied
// change (ADD, UPDATE, DELETE) or a write that did not apply
// (proxy.EventPendingReview, proxy.EventRefused).
type Result = resultJSON

// HistoryEntry is one applied version of a memory.
type HistoryEntry = historyJSON

// EventView is an event as Mem0 answers it, its status computed from its
// records as they are now.
type EventView = eventJSON

// Event statuses, as every Mem0 answer spells them.
const (
	StatusPending   = statusPending
	StatusSucceeded = statusSucceeded
	StatusFailed    = statusFailed
)

// Search and list bounds, as the REST routes have them.
const (
	DefaultThreshold = thresholdV3 // the newest platform route's
	DefaultTopK      = 10
	MaxTopK          = 1000
	MaxPageSize      = 200 // v3's
)

// SearchRequest is a search. Scope holds the entity ids given beside the
// filters ("*": any value), ANDed with them. When neither names an entity,
// Default is ANDed in; without one the search is refused, as Mem0 refuses
// an unscoped read.
type SearchRequest struct {
	Query     string
	Filters   json.RawMessage // Mem0's filters document; nil: none
	Scope     memory.Scope
	Default   memory.Scope
	TopK      int      // 0: DefaultTopK
	Threshold *float64 // nil: DefaultThreshold
}

// Search ranks the active memories the filters let through against the
// query, best first. Errors: EINVALID.
func (h *Handler) Search(ctx context.Context, req SearchRequest) ([]Memory, error) {
	p := searchParams{query: req.Query, threshold: DefaultThreshold}
	if strings.TrimSpace(req.Query) == "" { // as readSearch
		return nil, memory.Errorf(memory.EINVALID, "query is required: a non-empty string")
	}
	var err error
	if p.filter, err = scopedFilter(req.Filters, req.Scope, req.Default); err != nil {
		return nil, err
	}
	if p.topK, err = intParam("top_k", orNil(req.TopK), DefaultTopK, 1, MaxTopK); err != nil {
		return nil, err
	}
	if t := req.Threshold; t != nil {
		if *t < 0 || *t > 1 {
			return nil, memory.Errorf(memory.EINVALID, "threshold must be from 0 to 1")
		}
		p.threshold = *t
	}
	return h.search(ctx, p)
}

// ListRequest is a listing: filters and entity ids as in SearchRequest,
// and a page (1-based; 0: the first) of PageSize (0: 100) memories.
type ListRequest struct {
	Filters        json.RawMessage
	Scope, Default memory.Scope
	Page, PageSize int
}

// List returns one page of the active memories the filters let through,
// newest first, and how many there are in all. Errors: EINVALID.
func (h *Handler) List(ctx context.Context, req ListRequest) ([]Memory, int, error) {
	f, err := scopedFilter(req.Filters, req.Scope, req.Default)
	if err != nil {
		return nil, 0, err
	}
	var p page
	if p.number, err = intParam("page", orNil(req.Page), 1, 1, 1_000_000); err != nil {
		return nil, 0, err
	}
	if p.size, err = intParam("page_size", orNil(req.PageSize), 100, 1, MaxPageSize); err != nil {
		return nil, 0, err
	}
	recs, err := h.list(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	lo, hi := p.of(len(recs))
	return toMemories(recs[lo:hi]), len(recs), nil
}

// Get returns a memory, given its id or the record id of one of its
// versions, as it reads now. Errors: ENOTFOUND (also for a memory deleted
// or only pending review).
func (h *Handler) Get(ctx context.Context, id string) (Memory, error) {
	rec, err := h.active(ctx, id)
	if err != nil {
		return Memory{}, err
	}
	return toMemory(rec), nil
}

// History returns a memory's applied versions, oldest first. Errors:
// ENOTFOUND.
func (h *Handler) History(ctx context.Context, id string) ([]HistoryEntry, error) {
	slotID, versions, err := h.versionsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	return toHistory(slotID, versions), nil
}

// Event returns an event by the id a write answered. Given the record id
// of a version (what the knowledge-graph tools name), it answers that
// version as an event of its own. Errors: ENOTFOUND.
func (h *Handler) Event(ctx context.Context, id string) (EventView, error) {
	notFound := memory.Errorf(memory.ENOTFOUND, "Event not found or you don't have permission to access it.")
	if err := memory.CheckLookupID("event id", id); err != nil {
		return EventView{}, err
	}
	if len(id) > memory.MaxIDLen {
		return EventView{}, notFound
	}
	if h.events != nil {
		ev, err := h.events.Get(ctx, id)
		if err == nil {
			return h.view(ctx, ev)
		} else if memory.ErrorCode(err) != memory.ENOTFOUND {
			return EventView{}, err
		}
	}
	rec, err := h.gov.Get(ctx, id)
	if memory.ErrorCode(err) == memory.ENOTFOUND || (err == nil && rec.ID != id) {
		return EventView{}, notFound // a memory id names no event
	} else if err != nil {
		return EventView{}, err
	}
	return h.view(ctx, versionEvent(rec))
}

// versionEvent is the event of one version written outside the Mem0 event
// log. A version policy refused on arrival counts as refused, as in a
// logged event (it changed nothing and failed nothing).
func versionEvent(rec *memory.Record) *Event {
	typ := changeOf(rec)
	if typ == eventAdd && rec.ExpectedHead != "" {
		typ = eventUpdate // parked over an active version: not activated yet
	}
	outcome := memory.OutcomeApplied
	switch {
	case rec.Status == memory.StatusPending:
		outcome = memory.OutcomeParked
	case rec.Status == memory.StatusRejected && rec.Review == nil:
		outcome = memory.OutcomeRefused
	}
	return &Event{ID: rec.ID, Type: typ, CreatedAt: rec.CreatedAt, Writes: []EventWrite{{RecordID: rec.ID, Outcome: outcome}}}
}

// WriteOptions say what a write's event keeps and how the answer tells a
// model to check on a parked write.
type WriteOptions struct {
	// Payload is the request as the dialect got it, kept (bounded, and
	// redacted if policy refuses) with the event.
	Payload []byte
	// Poll says how to check an event's status in the caller's dialect
	// (e.g. "get_event_status with event_id 01J…"); nil: the REST words.
	Poll func(eventID string) string
}

// WriteResult is what one write did: the event to poll (the record id of
// the version when the Handler keeps no event log), the event's status
// now (PENDING or SUCCEEDED), the results a Mem0 add answers, and the
// versions by outcome.
type WriteResult struct {
	EventID   string
	Status    string
	Results   []Result
	Applied   []*memory.Record
	Parked    []*memory.Record
	Refused   []*memory.Record
	Unchanged []*memory.Record
}

// Add writes one memory. The dialect builds the candidate (text, scope,
// actor, source, evidence, metadata); it is governed as a Mem0 add.
// Errors: EINVALID and the governor's.
func (h *Handler) Add(ctx context.Context, c memory.Candidate, o WriteOptions) (*WriteResult, error) {
	return h.writeOne(ctx, eventAdd, c, o)
}

// Update writes a new version of a memory with c's text and, when c has
// none, the memory's metadata; the memory keeps its scope. Errors:
// ENOTFOUND, EINVALID and the governor's.
func (h *Handler) Update(ctx context.Context, id string, c memory.Candidate, o WriteOptions) (*WriteResult, error) {
	cur, err := h.active(ctx, id)
	if err != nil {
		return nil, err
	}
	c.Op, c.SlotID, c.Scope = memory.OpWrite, cur.SlotID, cur.Scope
	if c.Metadata == nil {
		c.Metadata = cur.Metadata
	}
	return h.writeOne(ctx, eventUpdate, c, o)
}

// Delete deletes a memory; c names who asks. Like the REST route's, the
// deletion carries no text: policy reads the active version it would
// remove. Errors: ENOTFOUND and the governor's.
func (h *Handler) Delete(ctx context.Context, id string, c memory.Candidate, o WriteOptions) (*WriteResult, error) {
	cur, err := h.active(ctx, id)
	if err != nil {
		return nil, err
	}
	c.Op, c.SlotID, c.Scope, c.Summary, c.Value, c.Metadata = memory.OpDelete, cur.SlotID, cur.Scope, "", nil, nil
	return h.writeOne(ctx, eventDelete, c, o)
}

func (h *Handler) writeOne(ctx context.Context, typ string, c memory.Candidate, o WriteOptions) (*WriteResult, error) {
	cands := []memory.Candidate{c}
	if err := validate(cands); err != nil {
		return nil, err
	}
	res, err := h.write(ctx, typ, cands, o.Payload)
	if err != nil {
		return nil, err
	}
	out := &WriteResult{EventID: res.event.ID, Status: res.status(), Results: res.all(),
		Applied: res.applied, Parked: res.parked, Refused: res.refused, Unchanged: res.unchanged}
	if h.events == nil && len(res.event.Writes) == 1 {
		out.EventID = res.event.Writes[0].RecordID // Event finds the version
	}
	if o.Poll != nil && len(res.parked) == 1 {
		// Words for the caller's dialect, over the REST route's.
		change := map[string]proxy.Change{eventUpdate: proxy.ChangeUpdate, eventDelete: proxy.ChangeDelete}[typ]
		text := proxy.PendingNotice(change, res.parked[0].SlotID, c.Summary, o.Poll(out.EventID))
		for i := range out.Results {
			if out.Results[i].Event == proxy.EventPendingReview {
				out.Results[i].Memory, out.Results[i].Data.Memory = text, text
			}
		}
	}
	return out, nil
}

// scopedFilter compiles filters and the entity ids beside them, adding
// def when neither names an entity. Errors: EINVALID.
func scopedFilter(raw json.RawMessage, scope, def memory.Scope) (*filter, error) {
	f, err := parseFilters(raw)
	if err != nil {
		return nil, err
	}
	f = all(f, entityFilter(scope))
	if !f.scoped() && def != (memory.Scope{}) {
		f = all(f, entityFilter(def))
	}
	if !f.scoped() {
		return nil, errUnscoped
	}
	return f, nil
}

// orNil is n as intParam reads an optional number: 0 is absent.
func orNil(n int) *float64 {
	if n == 0 {
		return nil
	}
	f := float64(n)
	return &f
}
