package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/proxy/mem0"
)

// TestMem0ToolsLifecycle runs on Badger and on PostgreSQL.
func TestMem0ToolsLifecycle(t *testing.T) {
	onEachStore(t, testMem0ToolsLifecycle)
}

func testMem0ToolsLifecycle(t *testing.T, e *env) {
	cs := e.connect("mem0-client", nil)

	var add writeAnswer
	decode(t, mustOK(t, cs, "add_memory", map[string]any{"text": "Alice prefers green tea", "user_id": "alice",
		"metadata": map[string]any{"source": "chat"}}), &add)
	if add.Status != mem0.StatusSucceeded || len(add.Results) != 1 || add.Results[0].Event != "ADD" || add.EventID == "" {
		t.Fatalf("add: %+v", add)
	}
	id, firstVersion := add.Results[0].ID, add.Results[0].RecordID

	var got mem0.Memory
	decode(t, mustOK(t, cs, "get_memory", map[string]any{"memory_id": id}), &got)
	if got.ID != id || got.Memory != "Alice prefers green tea" || got.UserID == nil || *got.UserID != "alice" ||
		got.Metadata["source"] != "chat" || len(got.Categories) != 1 || got.Categories[0] != string(got.Memgate.Layer) {
		t.Fatalf("get: %+v", got)
	}

	// Search finds by words, scoped to the user; other users' memories stay out.
	mustOK(t, cs, "add_memory", map[string]any{"text": "Bob prefers green tea", "user_id": "bob"})
	var found searchAnswer
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "what tea does she prefer?",
		"filters": map[string]any{"AND": []any{map[string]any{"user_id": "alice"}}}}), &found)
	if len(found.Results) != 1 || found.Results[0].ID != id || found.Results[0].Score == nil || *found.Results[0].Score <= 0 {
		t.Fatalf("search: %+v", found)
	}
	// Filters are Mem0's whole language: OR over users, a category.
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "green tea",
		"filters": map[string]any{"OR": []any{map[string]any{"user_id": "alice"}, map[string]any{"user_id": "bob"}},
			"categories": map[string]any{"in": []any{string(got.Memgate.Layer)}}}}), &found)
	if len(found.Results) != 2 {
		t.Fatalf("search over two users: %+v", found)
	}

	var upd writeAnswer
	decode(t, mustOK(t, cs, "update_memory", map[string]any{"memory_id": id, "text": "Alice prefers jasmine tea"}), &upd)
	if upd.Status != mem0.StatusSucceeded || upd.Results[0].ID != id || upd.Results[0].Event != "UPDATE" {
		t.Fatalf("update: %+v", upd)
	}
	decode(t, mustOK(t, cs, "get_memory", map[string]any{"memory_id": id}), &got)
	if got.Memory != "Alice prefers jasmine tea" || got.Metadata["source"] != "chat" || got.UserID == nil || *got.UserID != "alice" {
		t.Fatalf("after update (keeps its scope and metadata): %+v", got)
	}
	// The first write's event succeeded; asking for the memory by the
	// first version's id gives the memory as it is now.
	var ev mem0.EventView
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != mem0.StatusSucceeded || ev.EventType != "ADD" || len(ev.Results) != 1 || ev.Results[0].ID != id {
		t.Fatalf("event: %+v", ev)
	}
	decode(t, mustOK(t, cs, "get_memory", map[string]any{"memory_id": firstVersion}), &got)
	if got.Memory != "Alice prefers jasmine tea" {
		t.Fatalf("get by an old version's id: %+v", got)
	}

	var list listAnswer
	decode(t, mustOK(t, cs, "get_memories", map[string]any{"user_id": "alice"}), &list)
	if list.Count != 1 || len(list.Results) != 1 || list.Results[0].ID != id {
		t.Fatalf("list: %+v", list)
	}

	var del writeAnswer
	decode(t, mustOK(t, cs, "delete_memory", map[string]any{"memory_id": id}), &del)
	if del.Status != mem0.StatusSucceeded || del.Message != "Memory deleted successfully!" || del.Results[0].Event != "DELETE" {
		t.Fatalf("delete: %+v", del)
	}
	if res := call(t, cs, "get_memory", map[string]any{"memory_id": id}); !res.IsError || !strings.Contains(text(res), "not found") {
		t.Fatalf("deleted memory still readable: %s", text(res))
	}
	var hist historyAnswer
	decode(t, mustOK(t, cs, "get_memory_history", map[string]any{"memory_id": id}), &hist)
	var events []string
	for _, h := range hist.Results {
		events = append(events, h.Event)
	}
	if strings.Join(events, ",") != "ADD,UPDATE,DELETE" || *hist.Results[1].OldMemory != "Alice prefers green tea" {
		t.Fatalf("history: %+v", hist)
	}
}

// TestMem0ParkedWriteIsPendingUntilDecided runs on Badger and on
// PostgreSQL, whose KV area holds the event log.
func TestMem0ParkedWriteIsPendingUntilDecided(t *testing.T) {
	onEachStore(t, testMem0ParkedWriteIsPendingUntilDecided)
}

func testMem0ParkedWriteIsPendingUntilDecided(t *testing.T, e *env) {
	cs := e.connect("mem0-client", nil)
	ctx := context.Background()

	res := call(t, cs, "add_memory", map[string]any{"text": "Never publish without a human check", "agent_id": "writer"})
	var add writeAnswer
	decode(t, res, &add)
	if res.IsError || add.Status != mem0.StatusPending || add.EventID == "" || len(add.Results) != 1 ||
		add.Results[0].Event != proxy.EventPendingReview || !strings.HasPrefix(add.Message, "NOT SAVED YET: ") ||
		!strings.Contains(add.Message, "human reviewer") || !strings.Contains(add.Message, "get_event_status with event_id "+add.EventID) {
		t.Fatalf("parked add: error=%v %+v", res.IsError, add)
	}
	parked := add.Results[0].RecordID
	var found searchAnswer
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "publish", "agent_id": "writer"}), &found)
	if len(found.Results) != 0 {
		t.Fatalf("pending memory found: %+v", found)
	}
	if r := call(t, cs, "get_memory", map[string]any{"memory_id": parked}); !r.IsError {
		t.Fatalf("pending memory readable by its id: %s", text(r))
	}

	var ev mem0.EventView
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != mem0.StatusPending || ev.Metadata.Pending != 1 {
		t.Fatalf("event before review: %+v", ev)
	}
	if _, err := e.gov.Approve(ctx, parked, memory.Review{By: "rev", Route: "slack"}); err != nil {
		t.Fatal(err)
	}
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != mem0.StatusSucceeded || len(ev.Results) != 1 || ev.CompletedAt == nil {
		t.Fatalf("event after approval: %+v", ev)
	}
	decode(t, mustOK(t, cs, "search_memories", map[string]any{"query": "publish", "agent_id": "writer"}), &found)
	if len(found.Results) != 1 || found.Results[0].Memgate.Layer != memory.LayerPolicy || found.Results[0].Categories[0] != "policy" {
		t.Fatalf("approved memory not found: %+v", found)
	}

	// A reviewer's rejection makes the event FAILED, with the reviewer's note.
	decode(t, call(t, cs, "add_memory", map[string]any{"text": "Auto-publish every draft", "agent_id": "writer"}), &add)
	if _, err := e.gov.Reject(ctx, add.Results[0].RecordID, memory.Review{By: "rev", Note: "not our policy"}); err != nil {
		t.Fatal(err)
	}
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != mem0.StatusFailed || ev.Error == nil || *ev.Error != "rejected by rev: not our policy" {
		t.Fatalf("event after rejection: %+v", ev)
	}

	// A policy rejection answers FAILED at once, as an error, with the reason.
	res = call(t, cs, "add_memory", map[string]any{"text": "my password is swordfish"})
	decode(t, res, &add)
	if !res.IsError || add.Status != mem0.StatusFailed || !strings.Contains(add.Message, "secrets are never remembered") ||
		strings.Contains(text(res), "swordfish") {
		t.Fatalf("rejected add: error=%v %+v", res.IsError, add)
	}
}

// The knowledge-graph tools name record ids; get_event_status answers a
// record id as an event of one version, with the statuses of a logged one.
func TestEventStatusOfARecordID(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("graph-client", nil)
	res := call(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{
		"name": "project-alpha", "entityType": "project", "observations": []string{"publish nightly"}}}})
	var rec string
	for _, w := range writesOf(t, res) {
		if w.Outcome == outParked {
			rec = w.RecordID
		}
	}
	if rec == "" || !strings.Contains(text(res), "get_event_status") {
		t.Fatalf("no parked write to follow: %s", text(res))
	}
	var ev mem0.EventView
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": rec}), &ev)
	if ev.ID != rec || ev.Status != mem0.StatusPending {
		t.Fatalf("pending version: %+v", ev)
	}
	if _, err := e.gov.Reject(context.Background(), rec, memory.Review{By: "rev"}); err != nil {
		t.Fatal(err)
	}
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": rec}), &ev)
	if ev.Status != mem0.StatusFailed || ev.Metadata.Failed != 1 {
		t.Fatalf("rejected version: %+v", ev)
	}
}

// A server built without the Mem0 Handler keeps no event log: the event
// of a write is its version, and its status still follows the review.
func TestMem0ToolsWithoutEventLog(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy)})
	srv := NewServer(gov, Options{})
	mux := http.NewServeMux()
	srv.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	cs := (&env{t: t, gov: gov, srv: srv, http: hs}).connect("mem0-client", nil)

	var add writeAnswer
	decode(t, mustOK(t, cs, "add_memory", map[string]any{"text": "publish on Mondays", "user_id": "alice"}), &add)
	if add.Status != mem0.StatusPending || add.EventID != add.Results[0].RecordID {
		t.Fatalf("parked add without a log: %+v", add)
	}
	var ev mem0.EventView
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != mem0.StatusPending {
		t.Fatalf("event: %+v", ev)
	}
	if _, err := gov.Approve(context.Background(), add.EventID, memory.Review{By: "rev"}); err != nil {
		t.Fatal(err)
	}
	decode(t, mustOK(t, cs, "get_event_status", map[string]any{"event_id": add.EventID}), &ev)
	if ev.Status != mem0.StatusSucceeded || len(ev.Results) != 1 || ev.Results[0].ID != add.Results[0].ID {
		t.Fatalf("event after approval: %+v", ev)
	}
}

func TestMem0DefaultScope(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("mem0-client", nil)
	var add writeAnswer
	decode(t, mustOK(t, cs, "add_memory", map[string]any{"text": "the sky is blue"}), &add)
	rec, err := e.gov.Get(context.Background(), add.Results[0].RecordID)
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
	if rec, _ := e.gov.Get(context.Background(), add.Results[0].RecordID); rec.Scope.UserID != "frank" {
		t.Fatalf("session user scope: %+v", rec.Scope)
	}
	decode(t, mustOK(t, frank, "search_memories", map[string]any{"query": "sky"}), &found)
	if len(found.Results) != 1 || found.Results[0].Memory != "the sky is grey" {
		t.Fatalf("search as frank: %+v", found)
	}
	// Filters that name an entity replace the default.
	decode(t, mustOK(t, frank, "search_memories", map[string]any{"query": "sky", "filters": map[string]any{"user_id": "mem0-mcp"}}), &found)
	if len(found.Results) != 1 || found.Results[0].Memory != "the sky is blue" {
		t.Fatalf("search with a user filter: %+v", found)
	}
}
