package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/proxy/mem0"
)

// Mem0-style tools. They translate tool calls into calls of the Mem0
// dialect's Go API (mem0.Handler), so a memory, a search, a history and an
// event answer here exactly as over Mem0's REST API: the same record shape
// (mem0.Memory), the same filters and ranking, the same event log and
// statuses. What is MCP's own: default scopes, argument names, the write
// answer ({results, event_id, status, message}, FAILED and isError when
// policy refuses) and the outcomes in _meta.

// writeAnswer is what add_memory, update_memory and delete_memory return:
// Mem0's asynchronous shape, with the results a Mem0 add answers.
type writeAnswer struct {
	Results []mem0.Result `json:"results"`
	EventID string        `json:"event_id,omitempty"`
	Status  string        `json:"status"` // SUCCEEDED, PENDING; FAILED when policy refused the write
	Message string        `json:"message"`
}

type searchAnswer struct {
	Results []mem0.Memory `json:"results"`
}

// listAnswer is Mem0's paginated list without the page URLs.
type listAnswer struct {
	Count   int           `json:"count"`
	Results []mem0.Memory `json:"results"`
}

type historyAnswer struct {
	Results []mem0.HistoryEntry `json:"results"`
}

// memoryShape documents, in the tools' descriptions, the memory every
// reading tool answers.
const memoryShape = " A memory is Mem0's shape, as memgate's Mem0 REST API answers it: id (the memory's stable id; an edit is a new version behind it), " +
	"memory (its text), user_id, agent_id, app_id, run_id, session_id, metadata, categories ([its layer]), created_at and updated_at (RFC 3339, UTC), " +
	"score (searches), and memgate {record_id, layer, status, risk_level}."

// mem0Tool declares a tool answering Out.
func mem0Tool[Out any](name, title, description string, readOnly, destructive, idempotent bool) *mcp.Tool {
	return &mcp.Tool{Name: name, Title: title, Description: description, Annotations: hints(readOnly, destructive, idempotent),
		OutputSchema: outputSchema[Out]()}
}

func (s *Server) addMem0Tools() {
	scoped := " (default: the session's user, else " + s.defaultUser + ")"
	mcp.AddTool(s.srv, mem0Tool[writeAnswer]("add_memory", "Add Memory",
		"Store a new preference, fact, or conversation snippet. Scoped by user_id, agent_id, app_id or run_id"+scoped+
			". Answers {results, event_id, status, message}: results as a Mem0 add answers them (ADD or UPDATE, or PENDING_REVIEW while a human decides), "+
			"status SUCCEEDED, PENDING, or FAILED when policy refused it."+governedNote, false, false, false), s.addMemory)
	mcp.AddTool(s.srv, mem0Tool[searchAnswer]("search_memories", "Search Memories",
		"Search active memories by words, as Mem0's search ranks them (best first, relevance score from 0 to 1, at least threshold, default "+
			fmt.Sprint(mem0.DefaultThreshold)+"). filters are Mem0's (AND, OR, NOT over user_id, agent_id, app_id, run_id, created_at, updated_at, "+
			"categories, keywords, metadata, with in, nin, eq, ne, gt, gte, lt, lte, contains, icontains, *); when neither filters nor arguments name an entity, "+
			"the search is scoped"+scoped+". Answers {results: [memory]}."+memoryShape, true, false, true), s.searchMemories)
	mcp.AddTool(s.srv, mem0Tool[listAnswer]("get_memories", "Get Memories",
		"List active memories, newest first, one page at a time; filters as in search_memories."+
			" Answers {count (all that match), results: [memory]}."+memoryShape, true, false, true), s.getMemories)
	mcp.AddTool(s.srv, mem0Tool[mem0.Memory]("get_memory", "Get Memory",
		"Fetch a single active memory by its memory_id."+memoryShape, true, false, true), s.getMemory)
	mcp.AddTool(s.srv, mem0Tool[historyAnswer]("get_memory_history", "Get Memory History",
		"The applied versions of a memory, oldest first, as Mem0's history answers them: {results: [{id, memory_id, old_memory, new_memory, event, "+
			"categories, created_at, updated_at, is_deleted, status, ...}]}.", true, false, true), s.getMemoryHistory)
	mcp.AddTool(s.srv, mem0Tool[writeAnswer]("update_memory", "Update Memory",
		"Overwrite an existing memory's text (the previous version stays in its history). Answers as add_memory."+governedNote,
		false, true, false), s.updateMemory)
	mcp.AddTool(s.srv, mem0Tool[writeAnswer]("delete_memory", "Delete Memory",
		"Delete one memory by its memory_id. Answers as add_memory."+governedNote, false, true, true), s.deleteMemory)
	mcp.AddTool(s.srv, mem0Tool[mem0.EventView]("get_event_status", "Get Event Status",
		"Status of a write by the event_id it returned (or the record id a knowledge-graph tool gave), as Mem0's event answers it: "+
			"{id, event_type, status, results, metadata {applied, pending, failed, unchanged, refused, records}, error, created_at, updated_at, completed_at, ...}. "+
			"status is PENDING while a write waits for human review, SUCCEEDED once applied (or when nothing needed to change), FAILED if rejected or rolled back.",
		true, false, true), s.getEventStatus)
}

// outputSchema is the output schema of a tool answering T, inferred from
// T as the SDK does, except for what Go's types say wrongly about Mem0's
// JSON: metadata (a map) is null when a memory has none, and an event's
// payload (json.RawMessage) is any JSON value, not an array of bytes.
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[map[string]any]():  {Types: []string{"null", "object"}},
		reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
	}})
	if err != nil {
		panic(fmt.Sprintf("mcp: output schema of %T: %v", *new(T), err))
	}
	return s
}

// defaultScope applies a default user when a write names no entity, as
// Mem0's MCP server does (an agent or run id alone is enough): the user
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

// readScope is the entity ids of a read: those the arguments name (with
// the tenant's), and the default scope for when neither they nor the
// filters name any.
func (s *Server) readScope(ctx context.Context, a scopeArgs, actor memory.Actor) (given, def memory.Scope) {
	return memory.TenantOf(ctx).Fill(a.scope()), s.defaultScope(ctx, memory.Scope{}, actor)
}

// writeOptions keep the call's arguments with the event and word the
// pending notice for MCP.
func writeOptions(req *mcp.CallToolRequest) mem0.WriteOptions {
	var payload []byte
	if req.Params != nil {
		payload = req.Params.Arguments
	}
	return mem0.WriteOptions{Payload: payload, Poll: func(id string) string { return "get_event_status with event_id " + id }}
}

// answerWrite turns a Mem0 write into the tool's answer; a parked write is
// PENDING (not an error), a refused one FAILED and an error result. done
// is what an applied write says.
func answerWrite(what string, w *mem0.WriteResult, done string) (*mcp.CallToolResult, writeAnswer) {
	out := writeAnswer{Results: w.Results, EventID: w.EventID, Status: w.Status, Message: done}
	if out.Results == nil {
		out.Results = []mem0.Result{}
	}
	rep := &report{}
	add := func(recs []*memory.Record, outcome string) {
		for _, r := range recs {
			wr := writeResult{What: what, Outcome: outcome, RecordID: r.ID, MemoryID: r.SlotID}
			switch outcome {
			case outUnchanged:
				wr.RecordID = ""
			case outParked:
				wr.Reason = reasonOf(r)
			case outRejected:
				// A refused write's text is not repeated: it may hold a
				// secret, and memgate keeps none of it either.
				wr.What, wr.Reason = proxy.Withheld, reasonOf(r)
			}
			rep.writes = append(rep.writes, wr)
		}
	}
	add(w.Applied, outApplied)
	add(w.Unchanged, outUnchanged)
	add(w.Parked, outParked)
	add(w.Refused, outRejected)
	switch {
	case len(w.Refused) > 0:
		out.Status, out.Message = mem0.StatusFailed, proxy.RefusedNotice(w.Refused[0])
	case len(w.Parked) > 0:
		for _, r := range out.Results {
			if r.Event == proxy.EventPendingReview {
				out.Message = r.Memory // the notice, in MCP's words
			}
		}
	case len(w.Unchanged) > 0:
		out.Message = "Nothing changed: the memory already says this."
	}
	return rep.result(indentJSON(out)), out
}

func (s *Server) addMemory(ctx context.Context, req *mcp.CallToolRequest, in addMemoryArgs) (*mcp.CallToolResult, writeAnswer, error) {
	if err := in.check(); err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	actor := actorOf(req)
	c := memory.Candidate{Summary: in.text(), Scope: s.defaultScope(ctx, in.scope(), actor), Metadata: in.Metadata,
		Actor: actor, CandidateSource: memory.SourceTool, Evidence: memory.Evidence{Excerpt: in.conversation()}}
	if c.Evidence.Excerpt != "" {
		// The conversation is the memory's context, not a statement of its
		// own: policy reads it for injection patterns only
		// (memgate_config.features.context_sources).
		c.Evidence.SourceRef = ConversationSource
	}
	w, err := s.mem0.Add(ctx, c, writeOptions(req))
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	r, out := answerWrite(fmt.Sprintf("memory %q", c.Summary), w, "Memory processed successfully.")
	return r, out, nil
}

func (s *Server) updateMemory(ctx context.Context, req *mcp.CallToolRequest, in updateMemoryArgs) (*mcp.CallToolResult, writeAnswer, error) {
	c := memory.Candidate{Summary: in.Text, Actor: actorOf(req), CandidateSource: memory.SourceTool}
	w, err := s.mem0.Update(ctx, in.MemoryID, c, writeOptions(req))
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	r, out := answerWrite(fmt.Sprintf("update of memory %s to %q", in.MemoryID, in.Text), w, "Memory updated successfully!")
	return r, out, nil
}

func (s *Server) deleteMemory(ctx context.Context, req *mcp.CallToolRequest, in memoryIDArgs) (*mcp.CallToolResult, writeAnswer, error) {
	c := memory.Candidate{Actor: actorOf(req), CandidateSource: memory.SourceTool}
	w, err := s.mem0.Delete(ctx, in.MemoryID, c, writeOptions(req))
	if err != nil {
		return nil, writeAnswer{}, toolError(s.log, err)
	}
	r, out := answerWrite(fmt.Sprintf("deletion of memory %s", in.MemoryID), w, "Memory deleted successfully!")
	return r, out, nil
}

func (s *Server) getMemory(ctx context.Context, _ *mcp.CallToolRequest, in memoryIDArgs) (*mcp.CallToolResult, mem0.Memory, error) {
	m, err := s.mem0.Get(ctx, in.MemoryID)
	if err != nil {
		return nil, mem0.Memory{}, toolError(s.log, err)
	}
	return textResult(m), m, nil
}

func (s *Server) searchMemories(ctx context.Context, req *mcp.CallToolRequest, in searchMemoriesArgs) (*mcp.CallToolResult, searchAnswer, error) {
	out := searchAnswer{Results: []mem0.Memory{}}
	if err := in.scopeArgs.check(); err != nil {
		return nil, out, toolError(s.log, err)
	}
	limit, err := in.limit()
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	filters, err := in.Filters.raw()
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	given, def := s.readScope(ctx, in.scopeArgs, actorOf(req))
	found, err := s.mem0.Search(ctx, mem0.SearchRequest{Query: in.Query, Filters: filters, Scope: given, Default: def,
		TopK: limit, Threshold: in.Threshold})
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	out.Results = found
	return textResult(out), out, nil
}

func (s *Server) getMemories(ctx context.Context, req *mcp.CallToolRequest, in getMemoriesArgs) (*mcp.CallToolResult, listAnswer, error) {
	out := listAnswer{Results: []mem0.Memory{}}
	if err := in.scopeArgs.check(); err != nil {
		return nil, out, toolError(s.log, err)
	}
	filters, err := in.Filters.raw()
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	given, def := s.readScope(ctx, in.scopeArgs, actorOf(req))
	found, total, err := s.mem0.List(ctx, mem0.ListRequest{Filters: filters, Scope: given, Default: def,
		Page: in.Page, PageSize: in.PageSize})
	if err != nil {
		return nil, out, toolError(s.log, err)
	}
	out.Count, out.Results = total, found
	return textResult(out), out, nil
}

func (s *Server) getMemoryHistory(ctx context.Context, _ *mcp.CallToolRequest, in memoryIDArgs) (*mcp.CallToolResult, historyAnswer, error) {
	h, err := s.mem0.History(ctx, in.MemoryID)
	if err != nil {
		return nil, historyAnswer{}, toolError(s.log, err)
	}
	out := historyAnswer{Results: h}
	return textResult(out), out, nil
}

func (s *Server) getEventStatus(ctx context.Context, _ *mcp.CallToolRequest, in eventIDArgs) (*mcp.CallToolResult, mem0.EventView, error) {
	ev, err := s.mem0.Event(ctx, in.EventID)
	if err != nil {
		return nil, mem0.EventView{}, toolError(s.log, err)
	}
	return textResult(ev), ev, nil
}

// textResult shows v as indented JSON, as server-memory writes results.
func textResult(v any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: indentJSON(v)}}}
}
