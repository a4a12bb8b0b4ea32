package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

func TestMem0ToolsLifecycle(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("mem0-client", nil)

	var add writeAnswer
	decode(t, mustOK(t, cs, "add_memory", map[string]any{"text": "Alice prefers green tea", "user_id": "alice",
		"metadata": map[string]any{"source": "chat"}}), &add)
	if add.Status != statusSucceeded || len(add.Results) != 1 || add.Results[0].Event != "ADD" || add.EventID == "" {
		t.Fatalf("add: %+v", add)
	}
	id := add.Results[0].ID

	var got mem0Memory
	decode(t, mustOK(t, cs, "get_memory", map[string]any{"memory_id": id}), &got)
	if got.ID != id || got.Memory != "Alice prefers green tea" || got.UserID != "alice" || got.Metadata["source"] != "chat" {
		t.Fatalf("get: %+v", got)
	}

	// Search finds by words, scoped to the user; other users' memories stay out.
	mustOK(t, cs, "add_memory", map[string]any{"text": "Bob prefers coffee", "user_id": "bob"})
	var found searchAnswer
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "what tea does she prefer?",
		"filters": map[string]any{"AND": []any{map[string]any{"user_id": "alice"}}}}), &found)
	if len(found.Results) != 1 || found.Results[0].ID != id || found.Results[0].Score <= 0 {
		t.Fatalf("search: %+v", found)
	}

	var upd writeAnswer
	decode(t, mustOK(t, cs, "update_memory", map[string]any{"memory_id": id, "text": "Alice prefers jasmine tea"}), &upd)
	if upd.Status != statusSucceeded || upd.Results[0].ID != id || upd.Results[0].Event != "UPDATE" {
		t.Fatalf("update: %+v", upd)
	}
	decode(t, mustOK(t, cs, "get_memory", map[string]any{"memory_id": id}), &got)
	if got.Memory != "Alice prefers jasmine tea" {
		t.Fatalf("after update: %+v", got)
	}
	// The first version's event succeeded; asking for its memory by that
	// version's id gives the memory as it is now.
	var ev eventAnswer
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != statusSucceeded || ev.EventType != "ADD" || ev.MemoryID != id {
		t.Fatalf("event: %+v", ev)
	}
	decode(t, mustOK(t, cs, "get_memory", map[string]any{"memory_id": add.EventID}), &got)
	if got.Memory != "Alice prefers jasmine tea" {
		t.Fatalf("get by an old version's id: %+v", got)
	}

	var del writeAnswer
	decode(t, mustOK(t, cs, "delete_memory", map[string]any{"memory_id": id}), &del)
	if del.Status != statusSucceeded || del.Message != "Memory deleted successfully!" {
		t.Fatalf("delete: %+v", del)
	}
	if res := call(t, cs, "get_memory", map[string]any{"memory_id": id}); !res.IsError || !strings.Contains(text(res), "not found") {
		t.Fatalf("deleted memory still readable: %s", text(res))
	}
}

func TestMem0ParkedWriteIsPendingUntilDecided(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("mem0-client", nil)
	ctx := context.Background()

	res := call(t, cs, "add_memory", map[string]any{"text": "Never publish without a human check", "agent_id": "writer"})
	var add writeAnswer
	decode(t, res, &add)
	if res.IsError || add.Status != statusPending || add.EventID == "" || len(add.Results) != 1 ||
		add.Results[0].Event != proxy.EventPendingReview || !strings.HasPrefix(add.Message, "NOT SAVED YET: ") ||
		!strings.Contains(add.Message, "human reviewer") {
		t.Fatalf("parked add: error=%v %+v", res.IsError, add)
	}
	var found searchAnswer
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "publish", "agent_id": "writer"}), &found)
	if len(found.Results) != 0 {
		t.Fatalf("pending memory found: %+v", found)
	}
	if r := call(t, cs, "get_memory", map[string]any{"memory_id": add.EventID}); !r.IsError {
		t.Fatalf("pending memory readable by its id: %s", text(r))
	}

	var ev eventAnswer
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != statusPending {
		t.Fatalf("event before review: %+v", ev)
	}
	if _, err := e.gov.Approve(ctx, add.EventID, memory.Review{By: "rev", Route: "slack"}); err != nil {
		t.Fatal(err)
	}
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != statusSucceeded || len(ev.Results) != 1 {
		t.Fatalf("event after approval: %+v", ev)
	}
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "publish", "agent_id": "writer"}), &found)
	if len(found.Results) != 1 || found.Results[0].Layer != "policy" {
		t.Fatalf("approved memory not found: %+v", found)
	}

	// A reviewer's rejection makes the event FAILED, with the reviewer's note.
	decode(t, call(t, cs, "add_memory", map[string]any{"text": "Auto-publish every draft", "agent_id": "writer"}), &add)
	if _, err := e.gov.Reject(ctx, add.EventID, memory.Review{By: "rev", Note: "not our policy"}); err != nil {
		t.Fatal(err)
	}
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != statusFailed || ev.Error != "rejected by a reviewer: not our policy" {
		t.Fatalf("event after rejection: %+v", ev)
	}

	// A policy rejection answers FAILED at once, as an error, with the reason.
	res = call(t, cs, "add_memory", map[string]any{"text": "my password is swordfish"})
	decode(t, res, &add)
	if !res.IsError || add.Status != statusFailed || !strings.Contains(add.Message, "secrets are never remembered") {
		t.Fatalf("rejected add: error=%v %+v", res.IsError, add)
	}
}

func TestMem0DefaultScope(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("mem0-client", nil)
	var add writeAnswer
	decode(t, mustOK(t, cs, "add_memory", map[string]any{"text": "the sky is blue"}), &add)
	rec, err := e.gov.Get(context.Background(), add.EventID)
	if err != nil || rec.Scope.UserID != "mem0-mcp" || rec.SubjectID != "mem0-mcp" {
		t.Fatalf("default scope: %v %+v", err, rec)
	}
	var found searchAnswer
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "sky"}), &found)
	if len(found.Results) != 1 {
		t.Fatalf("search in the default scope: %+v", found)
	}

	// A session that names its user writes and reads as that user.
	frank := e.connect("mem0-client", map[string]string{HeaderUserID: "frank"})
	decode(t, mustOK(t, frank, "add_memory", map[string]any{"text": "the sky is grey"}), &add)
	if rec, _ := e.gov.Get(context.Background(), add.EventID); rec.Scope.UserID != "frank" {
		t.Fatalf("session user scope: %+v", rec.Scope)
	}
	decode(t, mustOK(t, frank, "search_memories", map[string]any{"query": "sky"}), &found)
	if len(found.Results) != 1 || found.Results[0].Memory != "the sky is grey" {
		t.Fatalf("search as frank: %+v", found)
	}
}

func TestParseFilters(t *testing.T) {
	tests := []struct {
		name    string
		filters map[string]any
		want    memory.Scope
		wantErr string
	}{
		{"none", nil, memory.Scope{}, ""},
		{"flat", map[string]any{"user_id": "a", "agent_id": "b"}, memory.Scope{UserID: "a", AgentID: "b"}, ""},
		{"and", map[string]any{"AND": []any{map[string]any{"user_id": "a"}, map[string]any{"run_id": "r"}}},
			memory.Scope{UserID: "a", RunID: "r"}, ""},
		{"wildcard", map[string]any{"user_id": "*", "app_id": "x"}, memory.Scope{AppID: "x"}, ""},
		{"same twice", map[string]any{"user_id": "a", "AND": []any{map[string]any{"user_id": "a"}}}, memory.Scope{UserID: "a"}, ""},
		{"contradiction", map[string]any{"user_id": "a", "AND": []any{map[string]any{"user_id": "b"}}}, memory.Scope{}, "two different user_id"},
		{"or", map[string]any{"OR": []any{}}, memory.Scope{}, `filter "OR" is not supported`},
		{"operator", map[string]any{"user_id": map[string]any{"in": []any{"a"}}}, memory.Scope{}, "must be a string"},
		{"date", map[string]any{"created_at": map[string]any{"gte": "2024-01-01"}}, memory.Scope{}, "not supported"},
		{"and not a list", map[string]any{"AND": "x"}, memory.Scope{}, "must be a list"},
		{"control char", map[string]any{"user_id": "a\x00"}, memory.Scope{}, "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFilters(tt.filters)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestEventStatus(t *testing.T) {
	for s, want := range map[memory.Status]string{
		memory.StatusPending: statusPending, memory.StatusActive: statusSucceeded, memory.StatusSuperseded: statusSucceeded,
		memory.StatusDeleted: statusSucceeded, memory.StatusRejected: statusFailed, memory.StatusRolledBack: statusFailed,
	} {
		if got := eventStatus(s); got != want {
			t.Errorf("eventStatus(%s) = %s, want %s", s, got, want)
		}
	}
}
