package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/search"
)

const token = "s3cret"

// parkPolicy parks policy-layer writes, rejects "password", applies the rest.
func parkPolicy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	switch {
	case strings.Contains(in.Candidate.Summary, "password"):
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReject, Reasons: []memory.Reason{{Rule: "secret", Message: "credentials are never remembered"}}}, nil
	case in.Candidate.Layer == memory.LayerPolicy:
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{"strategy"}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
}

type servers struct {
	agent, admin *httptest.Server
	gov          *memory.Governor
}

func newServers(t *testing.T) *servers {
	t.Helper()
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(parkPolicy)})
	agentMux, adminMux := http.NewServeMux(), http.NewServeMux()
	(&proxy.Native{Gov: gov, Search: search.New(st, search.Options{}), Log: discard()}).Register(agentMux)
	(&proxy.Admin{Gov: gov, Log: discard(), Token: token}).Register(adminMux)
	s := &servers{agent: httptest.NewServer(agentMux), admin: httptest.NewServer(adminMux), gov: gov}
	t.Cleanup(s.agent.Close)
	t.Cleanup(s.admin.Close)
	return s
}

func call(t *testing.T, method, url, tok, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s answered non-JSON %q", method, url, data)
	}
	return resp.StatusCode, out
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func TestNativeBadInputWritesNothing(t *testing.T) {
	s := newServers(t)
	cases := []struct {
		name, body string
		status     int
		code, msg  string
	}{
		{"malformed", `{"layer":`, 400, "invalid", "malformed JSON"},
		{"not an object", `[1,2]`, 400, "invalid", "malformed JSON"},
		{"trailing data", `{"subjectId":"s","summary":"x"} {}`, 400, "invalid", "after the object"},
		{"unknown field", `{"subjectId":"s","summary":"x","riskLevel":"low"}`, 400, "invalid", "riskLevel"},
		{"unknown layer", `{"layer":"vibes","subjectId":"s","summary":"x"}`, 400, "invalid", "unknown layer"},
		{"missing subject", `{"layer":"state","summary":"x"}`, 400, "invalid", "subjectId is required"},
		{"empty summary", `{"layer":"state","subjectId":"s","summary":""}`, 400, "invalid", "summary is required"},
		{"wrong type", `{"layer":"state","subjectId":7,"summary":"x"}`, 400, "invalid", "subjectId"},
		{"oversized field", `{"layer":"state","subjectId":"s","summary":"` + strings.Repeat("x", memory.MaxSummaryBytes+1) + `"}`, 400, "invalid", "summary is"},
		{"oversized body", `{"layer":"state","subjectId":"s","summary":"` + strings.Repeat("x", proxy.MaxBodyBytes) + `"}`, 413, "too_large", "larger than"},
		{"empty body", ``, 400, "invalid", "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := call(t, "POST", s.agent.URL+"/api/v1/memories", "", tc.body)
			msg, _ := body["error"].(map[string]any)["message"].(string)
			if status != tc.status || errCode(body) != tc.code || !strings.Contains(msg, tc.msg) {
				t.Fatalf("got %d %s %q, want %d %s containing %q", status, errCode(body), msg, tc.status, tc.code, tc.msg)
			}
		})
	}
	evs, err := s.gov.Events(context.Background(), "", 0)
	if err != nil || len(evs) != 0 {
		t.Fatalf("bad requests wrote %d events (%v)", len(evs), err)
	}
}

func TestNativeWriteFlow(t *testing.T) {
	s := newServers(t)
	status, rec := call(t, "POST", s.agent.URL+"/api/v1/memories", "", `{"layer":"checkpoint","subjectId":"task-1","factType":"step","summary":"step 1 done"}`)
	if status != 201 || rec["status"] != "active" {
		t.Fatalf("low-risk write: %d %v", status, rec)
	}
	status, parked := call(t, "POST", s.agent.URL+"/api/v1/memories", "", `{"layer":"policy","subjectId":"p","factType":"publish.auto","summary":"auto-publish is on"}`)
	if status != 202 || parked["status"] != "pending_review" {
		t.Fatalf("policy write: %d %v", status, parked)
	}
	status, rej := call(t, "POST", s.agent.URL+"/api/v1/memories", "", `{"layer":"knowledge","subjectId":"p","summary":"the password is hunter2"}`)
	if status != 422 || errCode(rej) != "rejected" || rej["record"] == nil {
		t.Fatalf("secret write: %d %v", status, rej)
	}
	_, list := call(t, "GET", s.agent.URL+"/api/v1/memories?subjectId=p", "", "")
	if list["count"].(float64) != 0 {
		t.Fatalf("agent reads pending/rejected records: %v", list)
	}
	status, _ = call(t, "GET", s.agent.URL+"/api/v1/memories?layer=nope", "", "")
	if status != 400 {
		t.Fatalf("unknown layer filter: %d", status)
	}
	id := parked["id"].(string)
	if status, _ := call(t, "POST", s.admin.URL+"/admin/v1/reviews/"+id+"/approve", "", `{}`); status != 401 {
		t.Fatalf("approve without token: %d", status)
	}
	if status, out := call(t, "POST", s.admin.URL+"/admin/v1/reviews/"+id+"/approve", token, `{"mode":"override","note":"ok"}`); status != 200 || out["status"] != "active" {
		t.Fatalf("approve: %d %v", status, out)
	}
	if status, out := call(t, "POST", s.admin.URL+"/admin/v1/reviews/"+id+"/approve", token, ``); status != 409 || errCode(out) != "already_decided" {
		t.Fatalf("second approve: %d %v", status, out)
	}
	_, hist := call(t, "GET", s.agent.URL+"/api/v1/subjects/p/facts/publish.auto/history", "", "")
	if v, _ := hist["versions"].([]any); len(v) != 1 {
		t.Fatalf("history: %v", hist)
	}
	status, ex := call(t, "GET", s.admin.URL+"/admin/v1/memories/"+id+"/explain", token, "")
	if status != 200 || ex["review"] == nil || ex["rollbackPoint"] == nil {
		t.Fatalf("explain: %d %v", status, ex)
	}
	status, rb := call(t, "POST", s.admin.URL+"/admin/v1/memories/"+id+"/rollback", token, `{"reason":"wrong"}`)
	if status != 200 || len(rb["rolledBack"].([]any)) != 1 {
		t.Fatalf("rollback: %d %v", status, rb)
	}
	if status, out := call(t, "POST", s.admin.URL+"/admin/v1/memories/nope/rollback", token, `{}`); status != 404 || errCode(out) != "not_found" {
		t.Fatalf("rollback unknown: %d %v", status, out)
	}
	if status, out := call(t, "POST", s.admin.URL+"/admin/v1/quarantine", token, `{"runId":"a","actorId":"b"}`); status != 400 {
		t.Fatalf("quarantine with both ids: %d %v", status, out)
	}
	if status, out := call(t, "POST", s.admin.URL+"/admin/v1/restore", token, `{"subjectId":"p"}`); status != 400 {
		t.Fatalf("restore without time: %d %v", status, out)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestNativeScopeNamesTheSubject: free text with only a scope is written
// about the scope's entity, as the Mem0 and MCP dialects write it.
func TestNativeScopeNamesTheSubject(t *testing.T) {
	s := newServers(t)
	status, body := call(t, "POST", s.agent.URL+"/api/v1/memories", "", `{"summary":"The Berlin office opens at 9","scope":{"userId":"alice"}}`)
	if status != 201 || body["subjectId"] != "alice" || body["status"] != "active" {
		t.Fatalf("%d %v, want 201 with subjectId alice", status, body)
	}
}

// TestNativeListRefusesUnknownParameters: a parameter the list does not
// take is a 400 naming it, not silently ignored.
func TestNativeListRefusesUnknownParameters(t *testing.T) {
	s := newServers(t)
	status, body := call(t, "GET", s.agent.URL+"/api/v1/memories?subjectId=s&offset=5", "", "")
	if msg, _ := body["error"].(map[string]any)["message"].(string); status != 400 || !strings.Contains(msg, `"offset"`) {
		t.Fatalf("%d %v, want 400 naming offset", status, body)
	}
	if status, _ := call(t, "GET", s.agent.URL+"/api/v1/memories?subjectId=s&q=x", "", ""); status != 200 {
		t.Fatalf("known parameters: %d", status)
	}
}
