package proxy_test

// Fuzz targets for the native API's and the admin API's request decoders,
// driven through the real handlers on a governor over an in-memory Badger
// store. Run as tests they check the seeds; `go test -fuzz FuzzX ./proxy/`
// explores further. Whatever the body, an answer is JSON, never a 500,
// and an error carries the code its status stands for.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

var fuzzSrv struct {
	once         sync.Once
	agent, admin *http.ServeMux
	gov          *memory.Governor
	err          error
	n            atomic.Int64
}

func fuzzServers(t *testing.T) (agent, admin *http.ServeMux, gov *memory.Governor) {
	fuzzSrv.once.Do(func() {
		st, err := store.Open(store.Options{InMemory: true})
		if err != nil {
			fuzzSrv.err = err
			return
		}
		gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(parkPolicy)})
		agentMux, adminMux := http.NewServeMux(), http.NewServeMux()
		(&proxy.Native{Gov: gov, Search: search.New(st, search.Options{}), Log: discard()}).Register(agentMux)
		(&proxy.Admin{Gov: gov, Log: discard(), Token: token,
			Replay: func(_ context.Context, files map[string]string) (any, error) {
				return map[string]int{"files": len(files)}, nil
			}}).Register(adminMux)
		fuzzSrv.agent, fuzzSrv.admin, fuzzSrv.gov = agentMux, adminMux, gov
	})
	if fuzzSrv.err != nil {
		t.Fatal(fuzzSrv.err)
	}
	return fuzzSrv.agent, fuzzSrv.admin, fuzzSrv.gov
}

// codeOfStatus is the error code each error status must carry.
var codeOfStatus = map[int][]string{
	http.StatusBadRequest:            {memory.EINVALID},
	http.StatusNotFound:              {memory.ENOTFOUND},
	http.StatusConflict:              {memory.ESTALE, memory.EDECIDED, memory.ECONFLICT},
	http.StatusRequestEntityTooLarge: {memory.ETOOLARGE},
	http.StatusUnprocessableEntity:   {memory.EREJECTED},
}

// serve sends one request to mux and checks the answer's shape; it
// returns the status and the decoded body.
func serve(t *testing.T, mux *http.ServeMux, method, target string, body []byte, allowed ...int) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s %q: answer %d is not a JSON object: %q", method, target, body, rec.Code, rec.Body.Bytes())
	}
	if !slices.Contains(allowed, rec.Code) {
		t.Fatalf("%s %s %q: status %d (%v), want one of %v", method, target, body, rec.Code, out, allowed)
	}
	if rec.Code >= 400 {
		if code := errCode(out); !slices.Contains(codeOfStatus[rec.Code], code) {
			t.Fatalf("%s %s %q: status %d with error code %q", method, target, body, rec.Code, code)
		}
	}
	return rec.Code, out
}

// write submits a candidate for a fuzz input of its own and returns its id.
func write(t *testing.T, gov *memory.Governor, layer memory.Layer) *memory.Record {
	t.Helper()
	n := fuzzSrv.n.Add(1)
	res, err := gov.Submit(context.Background(), memory.Candidate{Layer: layer, SubjectID: fmt.Sprintf("fuzz-%d", n),
		FactType: "f", Summary: fmt.Sprintf("fact %d", n), Actor: memory.Actor{RunID: fmt.Sprintf("run-%d", n)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Record
}

func FuzzNativeCreate(f *testing.F) {
	for _, s := range []string{
		`{"layer": "checkpoint", "subjectId": "task", "factType": "step", "summary": "done"}`,
		`{"layer": "policy", "subjectId": "p", "summary": "auto-publish is off", "value": {"enabled": false}}`,
		`{"subjectId": "p", "summary": "my password is hunter2"}`, `{"slotId": "nope", "summary": "x"}`,
		`{"subjectId": "p", "summary": "x", "actor": {"agentId": "a", "runId": "r"}, "evidence": {"excerpt": "e"}}`,
		`{"subjectId": "p", "summary": "x", "unknown": 1}`, `{"subjectId": "p", "summary": 5}`, `{"subjectId": "p"} {}`,
		`{"op": "delete", "subjectId": "p", "factType": "f"}`, `{"subjectId": "p", "summary": "x", "metadata": {"k": [null]}}`,
		``, `[]`, `null`, `{"subjectId": "p", "summary": "x", "scope": {"userId": "u"}}`, `{"subjectId": "\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		agent, _, _ := fuzzServers(t)
		status, out := serve(t, agent, http.MethodPost, "/api/v1/memories", body,
			http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusBadRequest, http.StatusNotFound,
			http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity)
		want := map[int]string{http.StatusCreated: "active", http.StatusAccepted: "pending_review", http.StatusOK: "active"}[status]
		if want != "" && out["status"] != want && !(status == http.StatusCreated && out["status"] == "deleted") {
			t.Fatalf("%d answer for %q has status %v", status, body, out["status"])
		}
	})
}

func FuzzNativeList(f *testing.F) {
	for _, s := range []string{"subjectId=p", "subjectId=p&layer=state&q=auto+publish", "layer=nope", "q=%00%ff",
		"userId=u&agentId=a&appId=x&runId=r", "subjectId=" + strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		agent, _, _ := fuzzServers(t)
		if strings.ContainsAny(query, " #\x7f") || strings.ContainsFunc(query, func(r rune) bool { return r < 0x20 }) {
			return // not a request line a client can send
		}
		status, out := serve(t, agent, http.MethodGet, "/api/v1/memories?"+query, nil, http.StatusOK, http.StatusBadRequest)
		if status == http.StatusOK {
			for _, m := range out["memories"].([]any) {
				if s := m.(map[string]any)["status"]; s != "active" {
					t.Fatalf("list %q shows a %v record", query, s)
				}
			}
		}
	})
}

func FuzzAdminDecision(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"mode": "override", "note": "ok"}`, `{"mode": "append"}`, `{"mode": "merge"}`,
		`{"reason": "no", "by": "alice"}`, `{"note": 1}`, `{"mode": "override"} x`, `[]`, `{"by": "` + strings.Repeat("b", 500) + `"}`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, approve bool) {
		_, admin, gov := fuzzServers(t)
		rec := write(t, gov, memory.LayerPolicy) // parked
		verb := "reject"
		if approve {
			verb = "approve"
		}
		status, out := serve(t, admin, http.MethodPost, "/admin/v1/reviews/"+rec.ID+"/"+verb, body,
			http.StatusOK, http.StatusBadRequest)
		want := map[bool]memory.Status{true: memory.StatusActive, false: memory.StatusRejected}[approve]
		if status == http.StatusOK && out["status"] != string(want) {
			t.Fatalf("%s %q answered 200 with status %v", verb, body, out["status"])
		}
		got, err := gov.Get(context.Background(), rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusOK {
			want = memory.StatusPending // a refused decision decides nothing
		}
		if got.Status != want {
			t.Fatalf("%s %q answered %d and left the write %s, want %s", verb, body, status, got.Status, want)
		}
	})
}

func FuzzAdminRollback(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"cascade": true, "reason": "bad"}`, `{"cascade": "yes"}`, `{"reason": null}`,
		`{"by": "ops", "reason": "x", "extra": 1}`, `{"reason": "x"}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, admin, gov := fuzzServers(t)
		rec := write(t, gov, memory.LayerCheckpoint)
		status, _ := serve(t, admin, http.MethodPost, "/admin/v1/memories/"+rec.ID+"/rollback", body,
			http.StatusOK, http.StatusBadRequest)
		got, err := gov.Get(context.Background(), rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]memory.Status{http.StatusOK: memory.StatusRolledBack, http.StatusBadRequest: memory.StatusActive}[status]; got.Status != want {
			t.Fatalf("rollback %q answered %d and left the record %s", body, status, got.Status)
		}
	})
}

func FuzzAdminQuarantine(f *testing.F) {
	for _, s := range []string{`{"runId": "run-1", "reason": "bad run"}`, `{"actorId": "agent-1"}`, `{"runId": "r", "actorId": "a"}`,
		`{}`, ``, `{"runId": 5}`, `{"runId": "\u0000"}`, `{"runId": "r", "reason": "x", "by": "ops"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, admin, _ := fuzzServers(t)
		serve(t, admin, http.MethodPost, "/admin/v1/quarantine", body, http.StatusOK, http.StatusBadRequest)
	})
}

func FuzzAdminRestore(f *testing.F) {
	for _, s := range []string{`{"subjectId": "fuzz-1", "at": "2026-12-02T10:00:00Z", "reason": "x"}`, `{"subjectId": "p"}`,
		`{"at": "2026-12-02T10:00:00Z"}`, `{"subjectId": "p", "at": "yesterday"}`, `{"subjectId": "p", "at": 0}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, admin, _ := fuzzServers(t)
		serve(t, admin, http.MethodPost, "/admin/v1/restore", body, http.StatusOK, http.StatusBadRequest)
	})
}

func FuzzAdminReplay(f *testing.F) {
	for _, s := range []string{`{"files": {"a.rego": "package memgate"}}`, `{"files": {}}`, `{"files": []}`, `{}`, ``,
		`{"files": {"a.rego": 1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, admin, _ := fuzzServers(t)
		serve(t, admin, http.MethodPost, "/admin/v1/policy/replay", body, http.StatusOK, http.StatusBadRequest)
	})
}

func FuzzAdminEvents(f *testing.F) {
	for _, s := range []string{"", "limit=5", "limit=0", "limit=10001", "limit=x", "after=01ZZZ&limit=1", "limit=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		_, admin, _ := fuzzServers(t)
		if strings.ContainsAny(query, " #\x7f") || strings.ContainsFunc(query, func(r rune) bool { return r < 0x20 }) {
			return
		}
		serve(t, admin, http.MethodGet, "/admin/v1/events?"+query, nil, http.StatusOK, http.StatusBadRequest)
	})
}
