package main

import (
	"net/http"
	"slices"
	"testing"

	"github.com/memgate/memgate/bench/sidecar"
	"github.com/memgate/memgate/internal/pgtest"
)

// TestMem0EventsAcrossSidecarsOnOnePostgres runs two sidecar processes on
// one PostgreSQL database: a Mem0 add answered by one is polled on the
// other, a parked one turns SUCCEEDED there once approved through the
// first's admin API, and both list the same events.
func TestMem0EventsAcrossSidecarsOnOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	url := pgtest.New(t)
	start := func() *proc {
		t.Helper()
		return startWith(t, sidecar.Options{DataDir: t.TempDir(), Store: url})
	}
	a, b := start(), start()

	add := func(p *proc, text string) string {
		t.Helper()
		var ans struct {
			EventID string `json:"event_id"`
		}
		body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "user_id": "alice", "infer": false}
		if code := p.do("POST", p.Agent+"/v3/memories/add/", body, &ans); code != http.StatusOK || ans.EventID == "" {
			t.Fatalf("add on %s: %d %+v\n%s", p.Agent, code, ans, p.Logs())
		}
		return ans.EventID
	}
	type event struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	poll := func(p *proc, id string) event {
		t.Helper()
		var ev event
		if code := p.do("GET", p.Agent+"/v1/event/"+id+"/", nil, &ev); code != http.StatusOK || ev.ID != id {
			t.Fatalf("event %s on %s: %d %+v\n%s", id, p.Agent, code, ev, p.Logs())
		}
		return ev
	}

	applied := add(a, "alice drinks green tea")
	if ev := poll(b, applied); ev.Status != "SUCCEEDED" {
		t.Fatalf("A's applied add polled on B: %+v", ev)
	}
	parked := add(b, "Never auto-publish posts for project alpha without my approval")
	if ev := poll(a, parked); ev.Status != "PENDING" {
		t.Fatalf("B's parked add polled on A: %+v", ev)
	}
	var queue struct {
		Reviews []struct {
			Record struct{ ID string } `json:"record"`
		} `json:"reviews"`
	}
	if code := a.do("GET", a.Admin+"/admin/v1/reviews", nil, &queue); code != http.StatusOK || len(queue.Reviews) != 1 {
		t.Fatalf("review queue on A: %d %+v", code, queue)
	}
	id := queue.Reviews[0].Record.ID
	if code := a.do("POST", a.Admin+"/admin/v1/reviews/"+id+"/approve", map[string]string{"by": "carol"}, nil); code != http.StatusOK {
		t.Fatalf("approve on A: %d\n%s", code, a.Logs())
	}
	if ev := poll(b, parked); ev.Status != "SUCCEEDED" {
		t.Fatalf("B's parked add after A's approval: %+v", ev)
	}
	var lists [2][]string
	for i, p := range []*proc{a, b} {
		var page struct {
			Count   int     `json:"count"`
			Results []event `json:"results"`
		}
		if code := p.do("GET", p.Agent+"/v1/events/?page=1&page_size=10", nil, &page); code != http.StatusOK || page.Count != 2 {
			t.Fatalf("events on %s: %d %+v", p.Agent, code, page)
		}
		for _, ev := range page.Results {
			lists[i] = append(lists[i], ev.ID)
		}
	}
	if !slices.Equal(lists[0], lists[1]) || !slices.Contains(lists[0], applied) || !slices.Contains(lists[0], parked) {
		t.Fatalf("A lists %v, B %v; want both events on both", lists[0], lists[1])
	}
}
