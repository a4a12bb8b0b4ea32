package main

// Process-level tests: the real binary, on a temporary data directory,
// driven over real HTTP on loopback, killed with SIGKILL and restarted.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/bench/sidecar"
)

// proc is one running sidecar process, started through bench/sidecar as
// the benchmark and crash tools start it.
type proc struct {
	*sidecar.Process
	t *testing.T
}

const testToken = "test-admin-token"

func startSidecar(t *testing.T, dataDir string, extraEnv ...string) *proc {
	t.Helper()
	return startWith(t, sidecar.Options{DataDir: dataDir, Env: extraEnv})
}

// startWith starts the built sidecar with o, its Binary this package's
// build and its Token testToken; it is killed when the test ends.
func startWith(t *testing.T, o sidecar.Options) *proc {
	t.Helper()
	o.Binary, o.Token = sidecarBin.Path(t), testToken
	p, err := sidecar.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill) // SIGKILL: no shutdown hook runs, as in a crash
	return &proc{Process: p, t: t}
}

// waitLog returns the process's logs once they hold substr, or after
// timeout whatever they hold.
func (p *proc) waitLog(substr string, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.Logs(), substr) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return p.Logs()
}

// do sends a JSON request and decodes the JSON answer; it returns the status.
func (p *proc) do(method, url string, body any, out any) int {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(url, p.Admin) {
		req.Header.Set("Authorization", "Bearer "+p.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.t.Fatalf("%s %s: decoding %q: %v", method, url, data, err)
		}
	}
	return resp.StatusCode
}

type wireRecord struct {
	ID           string `json:"id"`
	SlotID       string `json:"slotId"`
	Status       string `json:"status"`
	Summary      string `json:"summary"`
	ExpectedHead string `json:"expectedHead"`
	Review       *struct {
		Outcome string `json:"outcome"`
		By      string `json:"by"`
	} `json:"review"`
}

func TestRestartAfterSIGKILLKeepsEverythingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startSidecar(t, dataDir)

	type ack struct {
		id, status string
	}
	var acked []ack
	// Task checkpoints apply at once (201); strategy constraints park (202).
	for i := range 20 {
		var r wireRecord
		code := p.do("POST", p.Agent+"/api/v1/memories", map[string]any{
			"layer": "checkpoint", "subjectId": "task-7", "factType": fmt.Sprintf("step.%d", i),
			"summary": fmt.Sprintf("step %d of the migration is done", i),
			"actor":   map[string]string{"agentId": "agent-1", "runId": "run-1"},
		}, &r)
		if code != http.StatusCreated || r.Status != "active" {
			t.Fatalf("checkpoint write: %d %+v", code, r)
		}
		acked = append(acked, ack{r.ID, "active"})
	}
	var parked []wireRecord
	for _, s := range []string{"auto-publish is disabled for project alpha", "deploys to production need manual confirmation", "only the data team may modify the billing tables"} {
		var r wireRecord
		code := p.do("POST", p.Agent+"/api/v1/memories", map[string]any{
			"layer": "policy", "subjectId": "project-alpha", "summary": s,
			"actor": map[string]string{"agentId": "agent-1", "runId": "run-1"},
		}, &r)
		if code != http.StatusAccepted || r.Status != "pending_review" {
			t.Fatalf("policy write: %d %+v\n%s", code, r, p.Logs())
		}
		parked = append(parked, r)
	}
	var approved, rejected wireRecord
	if code := p.do("POST", p.Admin+"/admin/v1/reviews/"+parked[0].ID+"/approve", map[string]string{"note": "ok"}, &approved); code != 200 || approved.Status != "active" {
		t.Fatalf("approve: %d %+v", code, approved)
	}
	if code := p.do("POST", p.Admin+"/admin/v1/reviews/"+parked[1].ID+"/reject", map[string]string{"reason": "no"}, &rejected); code != 200 || rejected.Status != "rejected" {
		t.Fatalf("reject: %d %+v", code, rejected)
	}
	acked = append(acked, ack{parked[0].ID, "active"}, ack{parked[1].ID, "rejected"}, ack{parked[2].ID, "pending_review"})

	p.Kill()
	p = startSidecar(t, dataDir)

	for _, a := range acked {
		var r wireRecord
		if code := p.do("GET", p.Admin+"/admin/v1/memories/"+a.id, nil, &r); code != 200 || r.Status != a.status {
			t.Fatalf("after SIGKILL and restart %s is %d %q, want %q", a.id, code, r.Status, a.status)
		}
	}
	var q struct {
		Reviews []struct{ Record wireRecord } `json:"reviews"`
	}
	p.do("GET", p.Admin+"/admin/v1/reviews", nil, &q)
	if len(q.Reviews) != 1 || q.Reviews[0].Record.ID != parked[2].ID {
		t.Fatalf("review queue after restart: %+v, want only %s", q.Reviews, parked[2].ID)
	}
	var r wireRecord
	p.do("GET", p.Admin+"/admin/v1/memories/"+parked[0].ID, nil, &r)
	if r.Review == nil || r.Review.Outcome != "approved" {
		t.Fatalf("approval decision lost: %+v", r.Review)
	}
	var list struct {
		Count int `json:"count"`
	}
	p.do("GET", p.Agent+"/api/v1/memories?subjectId=task-7", nil, &list)
	if list.Count != 20 {
		t.Fatalf("%d active checkpoints after restart, want 20", list.Count)
	}
}

// TestMem0AddSurvivesSIGKILLUnderGroupCommit: the binary runs group commit
// by default, and a Mem0 add makes two commits, the governor's and its event
// log's, both durable before the add answers. Concurrent adds (so commits
// share syncs), then SIGKILL: every answered add has its memory and its
// event after the restart. (SIGKILL keeps the page cache, so this proves
// the writes reached Badger's log, not the disk; store's tests prove every
// write path syncs before it returns.)
func TestMem0AddSurvivesSIGKILLUnderGroupCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startSidecar(t, dataDir)
	// The startup line is written as /readyz turns 200 and reaches the
	// log buffer through a pipe: wait for it rather than race it.
	if logs := p.waitLog("memgate ready", 10*time.Second); !strings.Contains(logs, "durability=group-commit") {
		t.Fatalf("the binary does not run group commit by default:\n%s", logs)
	}

	type added struct{ event, memory string }
	const writers, each = 8, 5
	acked := make([][]added, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				body, _ := json.Marshal(map[string]any{"user_id": fmt.Sprintf("user-%d", w), "infer": false,
					"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("I keep plant number %d on the windowsill", i)}}})
				resp, err := http.Post(p.Agent+"/v3/memories/add/", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				var ans struct {
					Status  string `json:"status"`
					EventID string `json:"event_id"`
					Results []struct {
						ID string `json:"id"`
					} `json:"results"`
				}
				err = json.NewDecoder(resp.Body).Decode(&ans)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || ans.Status != "SUCCEEDED" || ans.EventID == "" || len(ans.Results) != 1 {
					t.Errorf("mem0 add: %d %+v %v", resp.StatusCode, ans, err)
					return
				}
				acked[w] = append(acked[w], added{ans.EventID, ans.Results[0].ID})
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	p.Kill()
	p = startSidecar(t, dataDir)

	for _, as := range acked {
		for _, a := range as {
			var ev struct {
				Status string `json:"status"`
			}
			if code := p.do("GET", p.Agent+"/v1/event/"+a.event+"/", nil, &ev); code != 200 || ev.Status != "SUCCEEDED" {
				t.Errorf("after SIGKILL and restart event %s is %d %q, want 200 SUCCEEDED", a.event, code, ev.Status)
			}
			var m struct {
				ID string `json:"id"`
			}
			if code := p.do("GET", p.Agent+"/v1/memories/"+a.memory+"/", nil, &m); code != 200 || m.ID != a.memory {
				t.Errorf("after SIGKILL and restart memory %s is %d %+v", a.memory, code, m)
			}
		}
	}
}

func TestAgentListenerCannotGovern(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p := startSidecar(t, t.TempDir())
	var r wireRecord
	p.do("POST", p.Agent+"/api/v1/memories", map[string]any{"layer": "policy", "subjectId": "project-alpha",
		"summary": "auto-publish is enabled for project alpha"}, &r)
	if r.Status != "pending_review" {
		t.Fatalf("policy write is %q, want pending_review", r.Status)
	}
	// None of the admin routes exist on the agent listener, with or without a token.
	for _, c := range []struct{ method, path string }{
		{"GET", "/admin/v1/reviews"},
		{"POST", "/admin/v1/reviews/" + r.ID + "/approve"},
		{"POST", "/admin/v1/reviews/" + r.ID + "/reject"},
		{"POST", "/admin/v1/memories/" + r.ID + "/rollback"},
		{"POST", "/admin/v1/quarantine"},
	} {
		req, _ := http.NewRequest(c.method, p.Agent+c.path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("agent listener answered %s %s with %d", c.method, c.path, resp.StatusCode)
		}
	}
	// The admin listener needs the token.
	req, _ := http.NewRequest("POST", p.Admin+"/admin/v1/reviews/"+r.ID+"/approve", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("approve with a wrong token: %d, want 401", resp.StatusCode)
	}
	var after wireRecord // the agent listener shows active records only (rule 7): ask the admin one
	p.do("GET", p.Admin+"/admin/v1/memories/"+r.ID, nil, &after)
	if after.Status != "pending_review" {
		t.Fatalf("the write was decided through a refused call: %q", after.Status)
	}
}

func TestPolicyDirReloadsWithoutRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	policyDir := t.TempDir()
	writePolicy := func(action string) {
		t.Helper()
		mod := fmt.Sprintf("package memgate\n\ndecision := {\"risk\": \"low\", \"categories\": [], \"action\": %q, \"affects\": [],\n"+
			"\t\"reasons\": [{\"rule\": \"everything_%s\", \"message\": \"test policy\"}]}\n", action, action)
		if err := os.WriteFile(filepath.Join(policyDir, "policy.rego"), []byte(mod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy("apply")
	p := startSidecar(t, t.TempDir(), "MEMGATE_POLICY_DIR="+policyDir)
	// Each write names a subject of its own: a repeat of an active memory
	// is a no-op that asks no policy (one fact per memory).
	n := 0
	write := func() wireRecord {
		var r wireRecord
		n++
		p.do("POST", p.Agent+"/api/v1/memories", map[string]any{"layer": "policy", "subjectId": fmt.Sprint("project-", n), "summary": "auto-publish is enabled"}, &r)
		return r
	}
	if r := write(); r.Status != "active" {
		t.Fatalf("under the apply-everything policy a write is %q", r.Status)
	}
	writePolicy("review")
	deadline := time.Now().Add(15 * time.Second)
	for write().Status != "pending_review" {
		if time.Now().After(deadline) {
			t.Fatalf("the changed policy was not picked up:\n%s", p.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A broken change is refused and the previous policy stays in force.
	if err := os.WriteFile(filepath.Join(policyDir, "policy.rego"), []byte("package memgate\n\ndecision := {"), 0o644); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(p.Logs(), "policy refused") {
		if time.Now().After(deadline) {
			t.Fatalf("the broken policy was not refused:\n%s", p.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := write(); r.Status != "pending_review" {
		t.Fatalf("after a broken reload a write is %q, want the previous policy (review)", r.Status)
	}
	resp, err := http.Get(p.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `memgate_policy_reloads_total{result="failure"} 1`) {
		t.Fatalf("/metrics does not count the refused reload:\n%s", grepLines(string(body), "memgate_policy_reloads_total"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
