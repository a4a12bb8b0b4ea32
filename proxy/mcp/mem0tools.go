package mcp

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// Mem0-style tools: a memory's id is its slot's stable id (an edit is a new
// version in the slot), and an event id is the id of the version a write
// submitted, whose status turns from PENDING to SUCCEEDED or FAILED when a
// reviewer decides.

// mem0Memory is a memory as Mem0's API shows it.
type mem0Memory struct {
	ID         string         `json:"id"`
	Memory     string         `json:"memory"`
	UserID     string         `json:"user_id,omitempty"`
	AgentID    string         `json:"agent_id,omitempty"`
	AppID      string         `json:"app_id,omitempty"`
	RunID      string         `json:"run_id,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Categories []string       `json:"categories,omitempty"`
	Layer      string         `json:"layer"`
	CreatedAt  string         `json:"created_at"`
	UpdatedAt  string         `json:"updated_at"`
	Score      float64        `json:"score,omitempty"`
}

func mem0View(r *memory.Record) mem0Memory {
	m := mem0Memory{ID: r.SlotID, Memory: r.Summary, UserID: r.Scope.UserID, AgentID: r.Scope.AgentID,
		AppID: r.Scope.AppID, RunID: r.Scope.RunID, Metadata: r.Metadata, Layer: string(r.Layer),
		CreatedAt: stamp(r.CreatedAt), UpdatedAt: stamp(r.ActivatedAt)}
	if m.Memory == "" {
		m.Memory = string(r.Value)
	}
	if r.FactType != "" {
		m.Categories = []string{r.FactType}
	}
	if m.UpdatedAt == "" {
		m.UpdatedAt = m.CreatedAt
	}
	return m
}

// stampLayout has a fixed width, so stamps compare as strings.
const stampLayout = "2006-01-02T15:04:05.000000Z"

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(stampLayout)
}

// mem0Event is one memory a write touched, as Mem0's add answers it.
type mem0Event struct {
	ID     string `json:"id"`
	Memory string `json:"memory"`
	Event  string `json:"event"` // ADD, UPDATE, DELETE, NONE; PENDING_REVIEW, REFUSED
}

// writeAnswer is what add_memory, update_memory and delete_memory return:
// Mem0's asynchronous shape ({event_id, status}), with the results when the
// write applied at once.
type writeAnswer struct {
	Results []mem0Event `json:"results"`
	EventID string      `json:"event_id,omitempty"`
	Status  string      `json:"status"` // SUCCEEDED, PENDING, FAILED
	Message string      `json:"message"`
}

type searchAnswer struct {
	Results []mem0Memory `json:"results"`
}

type eventAnswer struct {
	ID        string      `json:"id"`
	EventType string      `json:"event_type"` // ADD, UPDATE, DELETE
	Status    string      `json:"status"`     // PENDING, SUCCEEDED, FAILED
	MemoryID  string      `json:"memory_id"`
	Memory    string      `json:"memory"`
	Results   []mem0Event `json:"results"`
	Error     string      `json:"error,omitempty"`
	CreatedAt string      `json:"created_at"`
	UpdatedAt string      `json:"updated_at"`
}

// Mem0 event statuses.
const (
	statusPending   = "PENDING"
	statusSucceeded = "SUCCEEDED"
	statusFailed    = "FAILED"
)

// eventStatus maps a version's status to its event's.
func eventStatus(s memory.Status) string {
	switch s {
	case memory.StatusPending:
		return statusPending
	case memory.StatusActive, memory.StatusSuperseded, memory.StatusDeleted:
		return statusSucceeded
	}
	return statusFailed // rejected, rolled back
}

func eventType(r *memory.Record) string {
	switch {
	case r.Op == memory.OpDelete:
		return "DELETE"
	case r.Supersedes != "" || r.ExpectedHead != "":
		return "UPDATE"
	}
	return "ADD"
}

func mem0Tool(name, title, description string, readOnly, destructive, idempotent bool) *mcp.Tool {
	return &mcp.Tool{Name: name, Title: title, Description: description, Annotations: hints(readOnly, destructive, idempotent)}
}

func (s *Server) addMem0Tools() {
	mcp.AddTool(s.srv, mem0Tool("add_memory", "Add Memory",
		"Store a new preference, fact, or conversation snippet. Scoped by user_id, agent_id, app_id or run_id (default: the session's user, else "+
			s.defaultUser+")."+governedNote, false, false, false), s.addMemory)
	mcp.AddTool(s.srv, mem0Tool("search_memories", "Search Memories",
		"Search active memories by words; filters narrow by user_id, agent_id, app_id or run_id (default: the session's user, else "+
			s.defaultUser+").", true, false, true), s.searchMemories)
	mcp.AddTool(s.srv, mem0Tool("get_memory", "Get Memory",
		"Fetch a single active memory by its memory_id.", true, false, true), s.getMemory)
	mcp.AddTool(s.srv, mem0Tool("update_memory", "Update Memory",
		"Overwrite an existing memory's text (the previous version stays in its history)."+governedNote, false, true, false), s.updateMemory)
	mcp.AddTool(s.srv, mem0Tool("delete_memory", "Delete Memory",
		"Delete one memory by its memory_id."+governedNote, false, true, true), s.deleteMemory)
	mcp.AddTool(s.srv, mem0Tool("get_event_status", "Get Event Status",
		"Status of a write by the event_id it returned: PENDING while it waits for human review, SUCCEEDED once applied, FAILED if rejected or rolled back.",
		true, false, true), s.getEventStatus)
}

// defaultScope applies a default user when a write or read names no entity,
// as Mem0's MCP server does (an agent or run id alone is enough): the user
// the session names in X-Memgate-User-Id, else Options.DefaultUserID.
func (s *Server) defaultScope(ctx context.Context, sc memory.Scope, actor memory.Actor) memory.Scope {
	sc = memory.TenantOf(ctx).Fill(sc) // a tenant-bound key names its entity ids itself
	if sc.UserID == "" && sc.AgentID == "" && sc.RunID == "" {
		sc.UserID = actor.UserID
		if sc.UserID == "" {
			sc.UserID = s.defaultUser
		}
	}
	return sc
}

// answerWrite turns one governed write into Mem0's answer; a parked write
// is PENDING (not an error), a rejection is FAILED and an error result.
func answerWrite(rep *report, res *memory.SubmitResult, event string) (*mcp.CallToolResult, writeAnswer) {
	out := writeAnswer{Results: []mem0Event{}}
	w := rep.writes[len(rep.writes)-1]
	out.EventID = w.RecordID
	switch w.Outcome {
	case outApplied, outUnchanged:
		out.Status, out.Message = statusSucceeded, "Memory processed successfully."
		if w.Outcome == outUnchanged {
			event = "NONE"
			out.Message = "Nothing changed: the memory already says this."
		} else if event == "ADD" && res.Replaced != nil {
			event = "UPDATE"
		}
		out.Results = append(out.Results, mem0Event{ID: res.Record.SlotID, Memory: res.Record.Summary, Event: event})
	case outParked:
		change := map[string]proxy.Change{"UPDATE": proxy.ChangeUpdate, "DELETE": proxy.ChangeDelete}[event]
		out.Status = statusPending
		out.Message = proxy.PendingNotice(change, w.MemoryID, res.Record.Summary, "get_event_status with event_id "+w.RecordID)
		out.Results = append(out.Results, mem0Event{ID: w.MemoryID, Memory: out.Message, Event: proxy.EventPendingReview})
	case outRejected:
		out.Status = statusFailed
		out.Message = proxy.RefusedNotice(res.Record)
		out.Results = append(out.Results, mem0Event{ID: w.RecordID, Memory: out.Message, Event: proxy.EventRefused})
	default:
		out.Status = statusFailed
		out.Message = "NOT SAVED: " + orUnknown(w.Reason)
	}
	return rep.result(indentJSON(out)), out
}

func (s *Server) addMemory(ctx context.Context, req *mcp.CallToolRequest, in addMemoryArgs) (*mcp.CallToolResult, writeAnswer, error) {
	if err := in.check(); err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	actor := actorOf(req)
	c := memory.Candidate{Summary: in.text(), Scope: s.defaultScope(ctx, in.scope(), actor), Metadata: in.Metadata,
		Evidence: memory.Evidence{Excerpt: in.conversation()}}
	rep := &report{}
	res, err := s.submit(ctx, rep, actor, fmt.Sprintf("memory %q", c.Summary), c)
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	r, out := answerWrite(rep, res, "ADD")
	return r, out, nil
}

// activeMemory resolves a Mem0 memory id (a slot id, or the id of one of its
// versions) to the slot's active version. What is not active is not found:
// an agent never reads a parked or undone version this way.
func (s *Server) activeMemory(ctx context.Context, id string) (*memory.Record, error) {
	if checkName("memory_id", id) != nil {
		return nil, memory.Errorf(memory.ENOTFOUND, "memory %q not found", id)
	}
	r, err := s.gov.Get(ctx, id)
	if err != nil || r.Status == memory.StatusActive {
		return r, err
	}
	// A version that is not active: the memory is its slot's active version.
	// (A slot of its own has its first version's id, which Get finds first.)
	versions, err := s.gov.History(ctx, r.SlotID)
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		if v.Status == memory.StatusActive {
			return v, nil
		}
	}
	return nil, memory.Errorf(memory.ENOTFOUND, "memory %s not found", id)
}

func (s *Server) getMemory(ctx context.Context, _ *mcp.CallToolRequest, in memoryIDArgs) (*mcp.CallToolResult, mem0Memory, error) {
	r, err := s.activeMemory(ctx, in.MemoryID)
	if err != nil {
		return nil, mem0Memory{}, toolError(s.log, err)
	}
	m := mem0View(r)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: indentJSON(m)}}}, m, nil
}

func (s *Server) searchMemories(ctx context.Context, req *mcp.CallToolRequest, in searchMemoriesArgs) (*mcp.CallToolResult, searchAnswer, error) {
	out := searchAnswer{Results: []mem0Memory{}}
	if err := in.scopeArgs.check(); err != nil {
		return nil, out, toolError(s.log, err)
	}
	limit, err := in.limit()
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	fromFilters, err := parseFilters(in.Filters)
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	sc, err := mergeScope(in.scope(), fromFilters)
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	recs, err := s.gov.List(ctx, memory.ListFilter{Scope: s.defaultScope(ctx, sc, actorOf(req))})
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	words := queryWords(in.Query)
	for _, r := range recs {
		if sc := score(r.Summary, words); sc > 0 {
			m := mem0View(r)
			m.Score = sc
			out.Results = append(out.Results, m)
		}
	}
	// Best match first, then the newest.
	sort.SliceStable(out.Results, func(i, j int) bool {
		a, b := out.Results[i], out.Results[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.UpdatedAt > b.UpdatedAt
	})
	if len(out.Results) > limit {
		out.Results = out.Results[:limit]
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: indentJSON(out)}}}, out, nil
}

func (s *Server) updateMemory(ctx context.Context, req *mcp.CallToolRequest, in updateMemoryArgs) (*mcp.CallToolResult, writeAnswer, error) {
	cur, err := s.activeMemory(ctx, in.MemoryID)
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	rep := &report{}
	c := memory.Candidate{SlotID: cur.SlotID, Summary: in.Text}
	res, err := s.submit(ctx, rep, actorOf(req), fmt.Sprintf("update of memory %s to %q", cur.SlotID, in.Text), c)
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	r, out := answerWrite(rep, res, "UPDATE")
	return r, out, nil
}

func (s *Server) deleteMemory(ctx context.Context, req *mcp.CallToolRequest, in memoryIDArgs) (*mcp.CallToolResult, writeAnswer, error) {
	cur, err := s.activeMemory(ctx, in.MemoryID)
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	rep := &report{}
	c := memory.Candidate{Op: memory.OpDelete, SlotID: cur.SlotID, Summary: cur.Summary}
	res, err := s.submit(ctx, rep, actorOf(req), fmt.Sprintf("deletion of memory %s (%q)", cur.SlotID, cur.Summary), c)
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	r, out := answerWrite(rep, res, "DELETE")
	if out.Status == statusSucceeded {
		out.Message = "Memory deleted successfully!"
		r = rep.result(indentJSON(out))
	}
	return r, out, nil
}

func (s *Server) getEventStatus(ctx context.Context, _ *mcp.CallToolRequest, in eventIDArgs) (*mcp.CallToolResult, eventAnswer, error) {
	if checkName("event_id", in.EventID) != nil {
		return nil, eventAnswer{}, toolError(s.log, memory.Errorf(memory.ENOTFOUND, "event %q not found", in.EventID))
	}
	r, err := s.gov.Get(ctx, in.EventID)
	if err == nil && r.ID != in.EventID {
		err = memory.Errorf(memory.ENOTFOUND, "event %s not found (that is a memory id; events are the ids writes return)", in.EventID)
	}
	if err != nil {
		return nil, eventAnswer{}, toolError(s.log, err)
	}
	out := eventAnswer{ID: r.ID, EventType: eventType(r), Status: eventStatus(r.Status), MemoryID: r.SlotID,
		Memory: r.Summary, Results: []mem0Event{}, CreatedAt: stamp(r.CreatedAt), UpdatedAt: stamp(r.CreatedAt)}
	for _, t := range []time.Time{r.DecidedAt, r.ActivatedAt, r.SupersededAt, r.RolledBackAt} {
		if !t.IsZero() && stamp(t) > out.UpdatedAt {
			out.UpdatedAt = stamp(t)
		}
	}
	switch out.Status {
	case statusSucceeded:
		out.Results = append(out.Results, mem0Event{ID: r.SlotID, Memory: r.Summary, Event: out.EventType})
	case statusFailed:
		out.Error = failure(r)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: indentJSON(out)}}}, out, nil
}

// failure says why a version never applied or was undone.
func failure(r *memory.Record) string {
	switch {
	case r.Status == memory.StatusRolledBack:
		return "rolled back: " + orUnknown(r.RollbackReason)
	case r.Review != nil && r.Review.Outcome == memory.OutcomeRejected:
		return "rejected by a reviewer: " + orUnknown(r.Review.Note)
	}
	return "rejected by policy: " + orUnknown(reasonOf(r))
}
