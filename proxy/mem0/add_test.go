package mem0

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

func TestAddAppliedAnswersResultsAndRecordsTheActor(t *testing.T) {
	e := newEnv(t)
	ans := e.add("I love hiking in the Swiss Alps", "agent_id", "travel-bot", "run_id", "run-1", "app_id", "app-1",
		"metadata", map[string]any{"source": "chat"})
	if ans["status"] != statusSucceeded || ans["event_id"] == "" {
		t.Fatalf("want SUCCEEDED with an event id, got %v", ans)
	}
	res := ans["results"].([]any)[0].(map[string]any)
	if res["event"] != eventAdd || res["memory"] != "I love hiking in the Swiss Alps" ||
		res["data"].(map[string]any)["memory"] != "I love hiking in the Swiss Alps" {
		t.Fatalf("want an ADD result with the text, got %v", res)
	}
	rec := e.record(res["record_id"].(string))
	if rec.SlotID != res["id"] || rec.Status != memory.StatusActive {
		t.Fatalf("the memory id is the slot id of an active record, got %+v", rec)
	}
	wantActor := memory.Actor{UserID: "alice", AgentID: "travel-bot", RunID: "run-1", Dialect: "mem0", RemoteAddr: "127.0.0.1", Client: "test/1"}
	if rec.Actor != wantActor {
		t.Errorf("actor %+v, want %+v", rec.Actor, wantActor)
	}
	if want := (memory.Scope{UserID: "alice", AgentID: "travel-bot", AppID: "app-1", RunID: "run-1"}); rec.Scope != want {
		t.Errorf("scope %+v, want %+v", rec.Scope, want)
	}
	if rec.CandidateSource != memory.SourceUser || rec.Evidence.SourceRef != "mem0:verbatim:user#0" ||
		rec.Evidence.Excerpt != "I love hiking in the Swiss Alps" || rec.Metadata["source"] != "chat" {
		t.Errorf("source, evidence or metadata wrong: %+v", rec)
	}
}

func TestAddParkedAnswersPendingAndChangesNothingReadable(t *testing.T) {
	e := newEnv(t)
	ans := e.add("Never auto-publish posts for project alpha without my approval")
	if ans["status"] != statusPending || ans["event_id"] == "" || ans["pending"] != 1.0 {
		t.Fatalf("want {status: PENDING, event_id}, got %v", ans)
	}
	// One entry for the parked write: not ADD or UPDATE, so a client that
	// keeps those skips it, and words a model reads correctly.
	res := ans["results"].([]any)
	if len(res) != 1 {
		t.Fatalf("want one PENDING_REVIEW result, got %v", res)
	}
	it := res[0].(map[string]any)
	mem, _ := it["memory"].(string)
	if it["event"] != proxy.EventPendingReview || it["id"] == "" || it["record_id"] == "" ||
		!strings.HasPrefix(mem, "NOT SAVED YET: ") || !strings.Contains(mem, "human reviewer") || !strings.Contains(mem, ans["event_id"].(string)) {
		t.Fatalf("the parked entry: %v", it)
	}
	if q := e.pending(); len(q) != 1 || q[0].Record.Layer != memory.LayerPolicy {
		t.Fatalf("want one parked policy write, got %d", len(q))
	}
	if got := e.active(); len(got) != 0 {
		t.Fatalf("a parked write must not be readable, got %d active", len(got))
	}
	list := e.call("POST", "/v3/memories/", map[string]any{"filters": map[string]any{"user_id": "alice"}}, http.StatusOK).obj()
	if list["count"] != 0.0 {
		t.Fatalf("list shows a parked write: %v", list)
	}
}

func TestAddInferSourcesMessagesByRoleAndDropsChitChat(t *testing.T) {
	e := newEnv(t)
	body := map[string]any{"user_id": "alice", "messages": []any{
		map[string]any{"role": "system", "content": "You are a helpful assistant."},
		map[string]any{"role": "user", "content": "Hi!"},
		map[string]any{"role": "user", "content": "My favourite food is ramen"},
		map[string]any{"role": "assistant", "content": "Noted: the user loves ramen."},
		map[string]any{"role": "assistant", "content": "Anything else you like?"},
		map[string]any{"role": "user", "content": "My favourite food is ramen"}, // repeated within the add
	}}
	ans := e.call("POST", "/v3/memories/add/", body, http.StatusOK).obj()
	if ans["status"] != statusSucceeded {
		t.Fatalf("refused chit-chat is not an error: %v", ans)
	}
	got := texts(ans["results"].([]any), "memory")
	want := []string{"My favourite food is ramen", "Noted: the user loves ramen."}
	if !slices.Equal(got, want) {
		t.Fatalf("results %q, want %q", got, want)
	}
	if n := len(ans["refused"].([]any)); n != 2 {
		t.Fatalf("want the greeting and the question refused, got %d: %v", n, ans)
	}
	recs := e.active()
	bySummary := map[string]*memory.Record{}
	for _, r := range recs {
		bySummary[r.Summary] = r
	}
	if r := bySummary["My favourite food is ramen"]; r == nil || r.CandidateSource != memory.SourceUser || r.Evidence.SourceRef != "mem0:infer:user#2" {
		t.Errorf("user message: %+v", r)
	}
	a := bySummary["Noted: the user loves ramen."]
	if a == nil || a.CandidateSource != memory.SourceInference || a.Evidence.Excerpt != "My favourite food is ramen" {
		t.Errorf("an assistant statement is a model inference resting on the user's message: %+v", a)
	}
}

func TestAddDeducedMemoriesAreInferencesWithTheConversationAsEvidence(t *testing.T) {
	e := newEnv(t)
	body := map[string]any{"user_id": "alice", "infer": false,
		"messages":         []any{map[string]any{"role": "user", "content": "I moved to Lisbon last month"}},
		"deduced_memories": []string{"User lives in Lisbon", "  "}}
	ans := e.call("POST", "/v3/memories/add/", body, http.StatusOK).obj()
	if got := texts(ans["results"].([]any), "memory"); !slices.Equal(got, []string{"User lives in Lisbon"}) {
		t.Fatalf("results %q", got)
	}
	r := e.active()[0]
	if r.CandidateSource != memory.SourceInference || r.Evidence.Excerpt != "user: I moved to Lisbon last month" ||
		r.Evidence.SourceRef != "mem0:deduced:model#0" {
		t.Fatalf("deduced memory: %+v", r)
	}
}

func TestAddAcceptsEveryMessageForm(t *testing.T) {
	tests := []struct {
		name     string
		messages any
		want     []string
	}{
		{"string", "I drink oat milk", []string{"I drink oat milk"}},
		{"one object", map[string]any{"role": "user", "content": "I drink oat milk"}, []string{"I drink oat milk"}},
		{"array of strings", []any{"I drink oat milk", "I run on Sundays"}, []string{"I drink oat milk", "I run on Sundays"}},
		{"content parts", []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "I drink oat milk"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "http://x/y.png"}}}}}, []string{"I drink oat milk"}},
		{"no role", []any{map[string]any{"content": "I drink oat milk"}}, []string{"I drink oat milk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ans := e.call("POST", "/v3/memories/add/", map[string]any{"messages": tt.messages, "user_id": "alice", "infer": false}, http.StatusOK).obj()
			if got := texts(ans["results"].([]any), "memory"); !slices.Equal(got, tt.want) {
				t.Fatalf("results %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAddV1Shapes(t *testing.T) {
	e := newEnv(t)
	msg := func(text string) map[string]any {
		return map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "user_id": "alice", "infer": false}
	}
	arr := e.call("POST", "/v1/memories/", msg("I like jazz"), http.StatusOK).arr()
	if len(arr) != 1 || arr[0].(map[string]any)["event"] != eventAdd {
		t.Fatalf("v1.0 answers a bare array of results, got %v", arr)
	}
	b := msg("Never auto-publish on Fridays")
	b["output_format"] = "v1.1"
	wrapped := e.call("POST", "/v1/memories", b, http.StatusOK).obj()
	items := wrapped["results"].([]any)
	if len(items) != 2 || wrapped["relations"] == nil {
		t.Fatalf("v1.1 answers {results, relations}, got %v", wrapped)
	}
	if it := items[0].(map[string]any); it["event"] != proxy.EventPendingReview {
		t.Fatalf("a parked v1 write has its PENDING_REVIEW entry first, got %v", it)
	}
	if it := items[1].(map[string]any); it["status"] != statusPending || it["event_id"] == "" || it["message"] == "" {
		t.Fatalf("a parked v1 write answers Mem0's queued entry, got %v", it)
	}
}

func TestAddRefusedSecretIsReportedNotStored(t *testing.T) {
	e := newEnv(t)
	ans := e.add("my password is hunter2")
	refused := ans["refused"].([]any)
	results := ans["results"].([]any)
	if ans["status"] != statusSucceeded || len(results) != 1 || len(refused) != 1 {
		t.Fatalf("want nothing added and one refusal, got %v", ans)
	}
	if it := results[0].(map[string]any); it["event"] != proxy.EventRefused ||
		!strings.HasPrefix(it["memory"].(string), "NOT SAVED: ") || strings.Contains(it["memory"].(string), "hunter2") {
		t.Fatalf("the refused entry says why, never the secret: %v", it)
	}
	if reasons := refused[0].(map[string]any)["reasons"].([]any); reasons[0].(map[string]any)["rule"] != "secret" {
		t.Fatalf("the refusal names the rule: %v", refused)
	}
	if len(e.active()) != 0 {
		t.Fatal("a refused write is not readable")
	}
	ev := e.call("GET", "/v1/event/"+ans["event_id"].(string)+"/", nil, http.StatusOK)
	if strings.Contains(string(ev.raw), "hunter2") || ev.obj()["payload"].(map[string]any)["redacted"] != true {
		t.Fatalf("the event must not keep a refused secret: %s", ev.raw)
	}
}

func TestAddRepeatIsUnchanged(t *testing.T) {
	e := newEnv(t)
	id := e.addApplied("I live in Porto")
	// A repeat of a free-text memory opens a slot of its own, as in Mem0;
	// a PUT of the same text to the same memory is what is unchanged.
	ans := e.call("PUT", "/v1/memories/"+id+"/", map[string]any{"text": "I live in Porto"}, http.StatusOK).obj()
	if ans["event"] != eventNone || ans["memory"] != "I live in Porto" {
		t.Fatalf("want an unchanged answer, got %v", ans)
	}
}

func TestAddOpenSourceRoute(t *testing.T) {
	e := newEnv(t)
	ans := e.call("POST", "/memories", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "I play the cello"}},
		"user_id": "alice", "infer": false}, http.StatusOK).obj()
	if got := texts(ans["results"].([]any), "memory"); !slices.Equal(got, []string{"I play the cello"}) {
		t.Fatalf("results %q", got)
	}
	resp := e.do("POST", "/memories", []byte(`{"messages": [{"role": "user", "content": "x"}]}`))
	wantErrorShape(t, resp, http.StatusBadRequest, memory.EINVALID)
	if resp.obj()["detail"] != "At least one identifier (user_id, agent_id, run_id) is required." {
		t.Fatalf("the open-source message: %s", resp.raw)
	}
}

// TestEveryAddAnswerListsWhatDidNotApply: v1 (both output formats), v3 and
// the open-source add, with infer on and off, sync or async_mode, answer a
// parked write with one PENDING_REVIEW entry and a refused one with a
// REFUSED entry, beside the ADD of what applied.
func TestEveryAddAnswerListsWhatDidNotApply(t *testing.T) {
	e := newPolicyEnv(t, defaultPolicy(t))
	n := 0
	for _, route := range []string{"/v1/memories/", "/v1/memories/?v1.1", "/v3/memories/add/", "/memories"} {
		for _, infer := range []bool{false, true} {
			for _, async := range []bool{false, true} {
				n++
				user := fmt.Sprintf("u%d", n)
				body := map[string]any{"messages": []any{
					map[string]any{"role": "user", "content": "I prefer tea in the morning"},
					map[string]any{"role": "user", "content": "Never deploy project alpha on Fridays"},
					map[string]any{"role": "user", "content": "The SMTP password for the mailer is Orchid-7741!"},
				}, "user_id": user, "infer": infer, "async_mode": async}
				path := route
				if strings.HasSuffix(route, "?v1.1") {
					path, body["output_format"] = "/v1/memories/", "v1.1"
				}
				resp := e.call("POST", path, body, http.StatusOK)
				var items []any
				switch {
				case route == "/v1/memories/":
					items = resp.arr()
				default:
					items = resp.obj()["results"].([]any)
				}
				events := map[string]int{}
				for _, it := range items {
					m := it.(map[string]any)
					if ev, ok := m["event"].(string); ok {
						events[ev]++
						if mem, _ := m["memory"].(string); strings.Contains(mem, "Orchid") {
							t.Errorf("%s: an entry echoes the secret: %v", route, m)
						}
					}
				}
				if events[eventAdd] != 1 || events[proxy.EventPendingReview] != 1 || events[proxy.EventRefused] != 1 {
					t.Errorf("%s infer=%v async=%v: events %v, want one ADD, one PENDING_REVIEW, one REFUSED: %s", route, infer, async, events, resp.raw)
				}
			}
		}
	}
}
