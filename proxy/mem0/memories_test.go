package mem0

import (
	"net/http"
	"slices"
	"testing"

	"github.com/memgate/memgate/memory"
)

func TestGetAnswersTheActiveVersionByMemoryOrRecordID(t *testing.T) {
	e := newEnv(t)
	ans := e.add("I collect vinyl records", "agent_id", "dj")
	res := ans["results"].([]any)[0].(map[string]any)
	id, recordID := res["id"].(string), res["record_id"].(string)
	for _, path := range []string{"/v1/memories/" + id + "/", "/v1/memories/" + id, "/memories/" + id, "/v1/memories/" + recordID + "/"} {
		m := e.call("GET", path, nil, http.StatusOK).obj()
		if m["id"] != id || m["memory"] != "I collect vinyl records" || m["user_id"] != "alice" || m["agent_id"] != "dj" ||
			m["app_id"] != nil || m["lifecycle_state"] != "active" || m["created_at"] == "" {
			t.Fatalf("GET %s: %v", path, m)
		}
	}
	wantErrorShape(t, e.do("GET", "/v1/memories/no-such-memory/", nil), http.StatusNotFound, memory.ENOTFOUND)
}

func TestUpdateAppliesANewVersionBehindTheSameID(t *testing.T) {
	e := newEnv(t)
	id := e.addApplied("I love hiking in the Alps", "metadata", map[string]any{"topic": "outdoors"})
	ans := e.call("PUT", "/v1/memories/"+id+"/", map[string]any{"text": "I love hiking in the Dolomites"}, http.StatusOK).obj()
	if ans["id"] != id || ans["memory"] != "I love hiking in the Dolomites" || ans["event"] != eventUpdate ||
		ans["status"] != statusSucceeded || ans["event_id"] == "" {
		t.Fatalf("update answer: %v", ans)
	}
	got := e.call("GET", "/v1/memories/"+id+"/", nil, http.StatusOK).obj()
	if got["memory"] != "I love hiking in the Dolomites" || got["metadata"].(map[string]any)["topic"] != "outdoors" {
		t.Fatalf("the memory reads the new text and keeps its metadata: %v", got)
	}
	hist := e.call("GET", "/v1/memories/"+id+"/history/", nil, http.StatusOK).arr()
	if len(hist) != 2 {
		t.Fatalf("want two history entries, got %v", hist)
	}
	first, second := hist[0].(map[string]any), hist[1].(map[string]any)
	if first["event"] != eventAdd || first["old_memory"] != nil || first["new_memory"] != "I love hiking in the Alps" ||
		second["event"] != eventUpdate || second["old_memory"] != "I love hiking in the Alps" ||
		second["new_memory"] != "I love hiking in the Dolomites" || second["memory_id"] != id {
		t.Fatalf("history: %v", hist)
	}
	rec := e.record(second["id"].(string))
	if rec.Status != memory.StatusActive || rec.Actor.Dialect != "mem0" || rec.Evidence.SourceRef != "mem0:update:user#0" {
		t.Fatalf("the new version: %+v", rec)
	}
}

func TestUpdateOfAPolicyWaitsAndTheOldTextStaysReadable(t *testing.T) {
	e := newEnv(t)
	e.add("Never auto-publish posts on Fridays")
	e.approveAll()
	id := e.active()[0].SlotID
	ans := e.call("PUT", "/v1/memories/"+id+"/", map[string]any{"text": "Never auto-publish posts on weekends"}, http.StatusOK).obj()
	if ans["status"] != statusPending || ans["event_id"] == "" || ans["memory"] != nil {
		t.Fatalf("a parked update answers PENDING: %v", ans)
	}
	if got := e.call("GET", "/v1/memories/"+id+"/", nil, http.StatusOK).obj(); got["memory"] != "Never auto-publish posts on Fridays" {
		t.Fatalf("the agent still reads the approved text: %v", got)
	}
	e.approveAll()
	if got := e.call("GET", "/v1/memories/"+id+"/", nil, http.StatusOK).obj(); got["memory"] != "Never auto-publish posts on weekends" {
		t.Fatalf("after approval the new text is read: %v", got)
	}
}

func TestUpdateRefusedOrBadIsAnErrorAndChangesNothing(t *testing.T) {
	e := newEnv(t)
	id := e.addApplied("I bike to work")
	resp := e.do("PUT", "/v1/memories/"+id+"/", []byte(`{"text": "my password is hunter2"}`))
	wantErrorShape(t, resp, http.StatusUnprocessableEntity, memory.EREJECTED)
	if got := e.call("GET", "/v1/memories/"+id+"/", nil, http.StatusOK).obj(); got["memory"] != "I bike to work" {
		t.Fatalf("a refused update changes nothing: %v", got)
	}
	wantErrorShape(t, e.do("PUT", "/v1/memories/"+id+"/", []byte(`{}`)), http.StatusBadRequest, memory.EINVALID)
	wantErrorShape(t, e.do("PUT", "/v1/memories/nope/", []byte(`{"text": "x"}`)), http.StatusNotFound, memory.ENOTFOUND)
	// The open-source server's clients may send the text as a bare string.
	ans := e.call("PUT", "/memories/"+id, "I bike to work every day", http.StatusOK).obj()
	if ans["message"] != "Memory updated successfully!" || ans["memory"] != "I bike to work every day" {
		t.Fatalf("open-source update: %v", ans)
	}
}

func TestDeleteIsGovernedAndReadsStopSeeingTheMemory(t *testing.T) {
	e := newEnv(t)
	id := e.addApplied("I own a cat named Miso")
	ans := e.call("DELETE", "/v1/memories/"+id+"/", nil, http.StatusOK).obj()
	if ans["message"] != "Memory deleted successfully!" || ans["status"] != statusSucceeded || ans["event_id"] == "" {
		t.Fatalf("delete answer: %v", ans)
	}
	wantErrorShape(t, e.do("GET", "/v1/memories/"+id+"/", nil), http.StatusNotFound, memory.ENOTFOUND)
	hist := e.call("GET", "/v1/memories/"+id+"/history/", nil, http.StatusOK).arr()
	last := hist[len(hist)-1].(map[string]any)
	if last["event"] != eventDelete || last["old_memory"] != "I own a cat named Miso" || last["new_memory"] != nil || last["is_deleted"] != true {
		t.Fatalf("history ends with the deletion: %v", hist)
	}
	wantErrorShape(t, e.do("DELETE", "/v1/memories/"+id+"/", nil), http.StatusNotFound, memory.ENOTFOUND)
}

func TestDeleteOfAPolicyIsParked(t *testing.T) {
	e := newEnv(t)
	e.add("Never auto-publish posts for project alpha")
	e.approveAll()
	id := e.active()[0].SlotID
	ans := e.call("DELETE", "/v1/memories/"+id+"/", nil, http.StatusOK).obj()
	if ans["status"] != statusPending || ans["event_id"] == "" {
		t.Fatalf("deleting a policy waits for review: %v", ans)
	}
	if got := e.call("GET", "/v1/memories/"+id+"/", nil, http.StatusOK).obj(); got["memory"] != "Never auto-publish posts for project alpha" {
		t.Fatalf("the policy stays readable until a human decides: %v", got)
	}
	e.approveAll()
	wantErrorShape(t, e.do("GET", "/v1/memories/"+id+"/", nil), http.StatusNotFound, memory.ENOTFOUND)
}

func TestDeleteByEntity(t *testing.T) {
	e := newEnv(t)
	e.addApplied("I like tea")
	e.addApplied("I like coffee")
	e.call("POST", "/v3/memories/add/", map[string]any{"messages": "Bob likes juice", "user_id": "bob", "infer": false}, http.StatusOK)
	wantErrorShape(t, e.do("DELETE", "/v1/memories/", nil), http.StatusBadRequest, memory.EINVALID)
	ans := e.call("DELETE", "/v1/memories/?user_id=alice", nil, http.StatusOK).obj()
	if ans["deleted"] != 2.0 || ans["status"] != statusSucceeded || ans["event_id"] == "" {
		t.Fatalf("delete by entity: %v", ans)
	}
	if n := len(e.active()); n != 0 {
		t.Fatalf("alice has %d memories left", n)
	}
	bob := e.call("GET", "/memories?user_id=bob", nil, http.StatusOK).obj()["results"].([]any)
	if got := texts(bob, "memory"); !slices.Equal(got, []string{"Bob likes juice"}) {
		t.Fatalf("bob's memories are untouched: %q", got)
	}
	oss := e.call("DELETE", "/memories?user_id=bob", nil, http.StatusOK).obj()
	if oss["message"] != "All relevant memories deleted" || oss["deleted"] != 1.0 {
		t.Fatalf("open-source delete all: %v", oss)
	}
}

func TestListsPageNewestFirst(t *testing.T) {
	e := newEnv(t)
	for _, s := range []string{"fact one", "fact two", "fact three"} {
		e.addApplied(s)
	}
	env := e.call("POST", "/v3/memories/?page=1&page_size=2", map[string]any{"filters": map[string]any{"user_id": "alice"}}, http.StatusOK).obj()
	if env["count"] != 3.0 || env["previous"] != nil || env["next"] == nil {
		t.Fatalf("first page envelope: %v", env)
	}
	if got := texts(env["results"].([]any), "memory"); !slices.Equal(got, []string{"fact three", "fact two"}) {
		t.Fatalf("page 1: %q", got)
	}
	env = e.call("POST", "/v3/memories/", map[string]any{"filters": map[string]any{"user_id": "alice"}, "page": 2, "page_size": 2}, http.StatusOK).obj()
	if got := texts(env["results"].([]any), "memory"); !slices.Equal(got, []string{"fact one"}) || env["next"] != nil || env["previous"] == nil {
		t.Fatalf("page 2: %v", env)
	}
	v2 := e.call("POST", "/v2/memories/?page=1&page_size=100", map[string]any{"filters": map[string]any{"AND": []any{map[string]any{"user_id": "alice"}}}}, http.StatusOK).arr()
	if len(v2) != 3 {
		t.Fatalf("v2 answers a bare array: %v", v2)
	}
	v1 := e.call("GET", "/v1/memories/?user_id=alice&limit=2", nil, http.StatusOK).arr()
	if len(v1) != 2 {
		t.Fatalf("v1 GET honours limit: %v", v1)
	}
	fields := e.call("POST", "/v2/memories/", map[string]any{"filters": map[string]any{"user_id": "alice"}, "fields": []string{"memory"}}, http.StatusOK).arr()
	if m := fields[0].(map[string]any); len(m) != 2 || m["id"] == nil || m["memory"] == nil {
		t.Fatalf("fields keeps id and the named fields: %v", m)
	}
	wantErrorShape(t, e.do("POST", "/v3/memories/", []byte(`{"filters": {}}`)), http.StatusBadRequest, memory.EINVALID)
}
