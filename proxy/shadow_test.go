package proxy_test

import (
	"net/http"
	"testing"
)

// TestAdminShadowMode drives shadow mode over real HTTP: the mode is
// switched with PUT /admin/v1/policy/mode, a write policy parks is
// applied (201) while it is on and listed by GET /admin/v1/shadow with its
// rules, and back in enforce mode the same kind of write parks (202)
// without a restart.
func TestAdminShadowMode(t *testing.T) {
	s := newServers(t)
	mode := func(method, body string) (int, map[string]any) {
		t.Helper()
		return call(t, method, s.admin.URL+"/admin/v1/policy/mode", token, body)
	}
	write := func(fact string) (int, map[string]any) {
		t.Helper()
		return call(t, "POST", s.agent.URL+"/api/v1/memories", "",
			`{"layer":"policy","subjectId":"p","factType":"`+fact+`","summary":"auto-publish is on"}`)
	}
	if status, body := mode("GET", ""); status != http.StatusOK || body["mode"] != "enforce" {
		t.Fatalf("GET mode: %d %v, want enforce", status, body)
	}
	if status, body := call(t, "PUT", s.admin.URL+"/admin/v1/policy/mode", "", `{"mode":"shadow"}`); status != http.StatusUnauthorized {
		t.Fatalf("PUT mode without a token: %d %v", status, body)
	}
	for _, bad := range []string{`{"mode":"audit"}`, `{}`, `{"mode":"shadow","x":1}`} {
		if status, body := mode("PUT", bad); status != http.StatusBadRequest {
			t.Errorf("PUT mode %s: %d %v, want 400", bad, status, body)
		}
	}
	if status, body := mode("PUT", `{"mode":"shadow"}`); status != http.StatusOK || body["mode"] != "shadow" {
		t.Fatalf("PUT shadow: %d %v", status, body)
	}
	status, rec := write("publish.auto")
	if status != http.StatusCreated || rec["status"] != "active" {
		t.Fatalf("a write policy parks, in shadow mode: %d %v, want 201 active", status, rec)
	}
	if dec, _ := rec["decision"].(map[string]any); dec["action"] != "review" || dec["shadow"] == nil {
		t.Errorf("the record's decision %v should keep review and carry the shadow", rec["decision"])
	}

	status, page := call(t, "GET", s.admin.URL+"/admin/v1/shadow?limit=10", token, "")
	items, _ := page["items"].([]any)
	if status != http.StatusOK || len(items) != 1 {
		t.Fatalf("GET shadow: %d %v, want one item", status, page)
	}
	it := items[0].(map[string]any)
	if it["recordId"] != rec["id"] || it["would"] != "review" || it["did"] != "apply" || it["summary"] != "auto-publish is on" {
		t.Errorf("shadow item %v for record %v", it, rec["id"])
	}
	for _, q := range []string{"?limit=0", "?order=sideways"} {
		if status, body := call(t, "GET", s.admin.URL+"/admin/v1/shadow"+q, token, ""); status != http.StatusBadRequest {
			t.Errorf("GET shadow%s: %d %v, want 400", q, status, body)
		}
	}

	if status, body := mode("PUT", `{"mode":"enforce"}`); status != http.StatusOK || body["mode"] != "enforce" {
		t.Fatalf("PUT enforce: %d %v", status, body)
	}
	if status, rec := write("publish.manual"); status != http.StatusAccepted || rec["status"] != "pending_review" {
		t.Errorf("back in enforce mode: %d %v, want 202 pending", status, rec)
	}
}
