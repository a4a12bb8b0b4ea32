package mem0

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// tenantEnv serves the Mem0 routes with two tenant-bound keys (alice's and
// bob's) and one unbound key (ops).
func tenantEnv(t *testing.T) *env {
	t.Helper()
	keys, err := proxy.ParseAgentKeys("ka@user=alice, kb@user=bob, kops")
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, func(o *Options) { o.Keys = proxy.NewAgentKeys(keys) })
}

var (
	asAlice = []string{"Authorization", "Token ka"}
	asBob   = []string{"Authorization", "Token kb"}
	asOps   = []string{"X-API-Key", "kops"}
)

// Each way the issue found to cross tenants, tried by bob against alice's
// memory: none reads, changes or deletes it.
func TestMem0TenantsCannotCross(t *testing.T) {
	e := tenantEnv(t)
	add := func(text, user string, who []string) map[string]any {
		body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "infer": false}
		if user != "" {
			body["user_id"] = user
		}
		return e.call("POST", "/v3/memories/add/", body, http.StatusOK, who...).obj()
	}
	ans := add("I keep bees on the roof", "alice", asAlice)
	aliceID := ans["results"].([]any)[0].(map[string]any)["id"].(string)
	aliceEvent := ans["event_id"].(string)
	add("I keep goats", "", asBob) // no user_id: the key's user is filled in

	if got := e.record(aliceID); got.Scope.UserID != "alice" {
		t.Fatalf("alice's memory has scope %+v", got.Scope)
	}
	// Reads by id, history, event: not found, as if the ids did not exist.
	for _, path := range []string{"/v1/memories/" + aliceID + "/", "/v1/memories/" + aliceID + "/history/",
		"/memories/" + aliceID, "/v1/event/" + aliceEvent + "/"} {
		wantErrorShape(t, e.do("GET", path, nil, asBob...), http.StatusNotFound, memory.ENOTFOUND)
	}
	// Lists and searches: alice's id, a wildcard, an OR over both users.
	bobOnly := func(what string, items []any) {
		t.Helper()
		for _, it := range items {
			m := it.(map[string]any)
			if strings.Contains(fmt.Sprint(m["memory"]), "bees") || m["user_id"] == "alice" {
				t.Fatalf("%s shows bob alice's memory: %v", what, m)
			}
		}
	}
	bobOnly("GET ?user_id=alice", e.call("GET", "/v1/memories/?user_id=alice", nil, http.StatusOK, asBob...).arr())
	bobOnly("oss list", e.call("GET", "/memories?user_id=alice", nil, http.StatusOK, asBob...).obj()["results"].([]any))
	for _, filters := range []string{`{"user_id": "*"}`, `{"user_id": "alice"}`,
		`{"OR": [{"user_id": "alice"}, {"user_id": "bob"}]}`, `{"NOT": [{"user_id": "bob"}]}`} {
		body := `{"query": "what does the user keep", "filters": ` + filters + `}`
		res := e.do("POST", "/v2/memories/search/", []byte(body), asBob...)
		if res.status == http.StatusOK {
			bobOnly("search "+filters, res.arr())
		} else if res.status != http.StatusBadRequest {
			t.Fatalf("search %s: %d %s", filters, res.status, res.raw)
		}
		res = e.do("POST", "/v2/memories/", []byte(`{"filters": `+filters+`}`), asBob...)
		if res.status == http.StatusOK {
			bobOnly("v2 list "+filters, res.arr())
		}
	}
	// Writes: bob cannot update or delete alice's memory, even naming
	// himself, nor write for alice; bulk deletes take no wildcard.
	wantErrorShape(t, e.do("DELETE", "/v1/memories/"+aliceID+"/?user_id=bob", nil, asBob...), http.StatusNotFound, memory.ENOTFOUND)
	wantErrorShape(t, e.do("PUT", "/v1/memories/"+aliceID+"/", []byte(`{"text": "alice keeps no bees"}`), asBob...), http.StatusNotFound, memory.ENOTFOUND)
	wantErrorShape(t, e.do("POST", "/v3/memories/add/", []byte(`{"messages": "I hate bees", "user_id": "alice", "infer": false}`), asBob...),
		http.StatusForbidden, memory.EFORBIDDEN)
	for _, q := range []string{"user_id=*", "agent_id=*", "user_id=al*"} {
		wantErrorShape(t, e.do("DELETE", "/v1/memories/?"+q, nil, asOps...), http.StatusBadRequest, memory.EINVALID)
	}
	del := e.call("DELETE", "/v1/memories/?user_id=alice", nil, http.StatusOK, asBob...).obj()
	if del["deleted"].(float64) != 0 {
		t.Fatalf("bob's bulk delete of alice deleted %v", del["deleted"])
	}
	// Events: bob lists only his own.
	evs := e.call("GET", "/v1/events/", nil, http.StatusOK, asBob...).obj()["results"].([]any)
	for _, ev := range evs {
		if ev.(map[string]any)["id"] == aliceEvent {
			t.Fatal("bob lists alice's event")
		}
	}
	// Alice's memory is untouched, and she (and the unbound key) read it.
	if r := e.record(aliceID); r.Status != memory.StatusActive || !strings.Contains(r.Summary, "bees") {
		t.Fatalf("alice's memory after bob's attempts: %s %q", r.Status, r.Summary)
	}
	e.call("GET", "/v1/memories/"+aliceID+"/", nil, http.StatusOK, asAlice...)
	e.call("GET", "/v1/event/"+aliceEvent+"/", nil, http.StatusOK, asAlice...)
	e.call("GET", "/v1/memories/"+aliceID+"/", nil, http.StatusOK, asOps...)
}

// Every route, native and Mem0, needs a key once keys are configured.
func TestEveryAgentRouteNeedsAKey(t *testing.T) {
	e := tenantEnv(t)
	mux := http.NewServeMux()
	(&proxy.Native{Gov: e.gov, Search: e.h.index, Keys: e.h.keys}).Register(mux)
	e.h.Register(mux)
	e.srv.Config.Handler = mux
	routes := []struct{ method, path string }{
		{"GET", "/api/v1/memories?userId=alice"}, {"POST", "/api/v1/memories"}, {"GET", "/api/v1/memories/x"},
		{"DELETE", "/api/v1/memories/x"}, {"GET", "/api/v1/subjects/s/facts/f/history"},
		{"GET", "/v1/ping/"}, {"POST", "/v3/memories/add/"}, {"POST", "/v1/memories/"}, {"GET", "/v1/memories/"},
		{"DELETE", "/v1/memories/?user_id=alice"}, {"POST", "/v3/memories/search/"}, {"POST", "/v2/memories/search/"},
		{"POST", "/v1/memories/search/"}, {"POST", "/v3/memories/"}, {"POST", "/v2/memories/"},
		{"GET", "/v1/memories/x/"}, {"PUT", "/v1/memories/x/"}, {"DELETE", "/v1/memories/x/"},
		{"GET", "/v1/memories/x/history/"}, {"GET", "/v1/events/"}, {"GET", "/v1/event/x/"}, {"GET", "/v1/entities/"},
		{"POST", "/memories"}, {"GET", "/memories?user_id=alice"}, {"DELETE", "/memories?user_id=alice"},
		{"GET", "/memories/x"}, {"PUT", "/memories/x"}, {"DELETE", "/memories/x"}, {"GET", "/memories/x/history"},
		{"POST", "/search"},
	}
	for _, rt := range routes {
		for _, who := range [][]string{nil, {"Authorization", "Token wrong"}, {"Authorization", "Basic ka"}} {
			resp := e.do(rt.method, rt.path, []byte(`{}`), who...)
			if resp.status != http.StatusUnauthorized {
				t.Fatalf("%s %s with %v: %d, want 401: %s", rt.method, rt.path, who, resp.status, resp.raw)
			}
		}
	}
}
