package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/store"
)

// eventsPage is the body of GET /admin/v1/events.
type eventsPage struct {
	Events []*memory.Event `json:"events"`
	Count  int             `json:"count"`
	Next   string          `json:"next"`
}

// TestAdminEventsPagesAreBoundedInBytes parks writes of 500 bytes in one
// slot and pages through the audit log: every page stays under its byte
// budget (or holds one event), next continues where the page stopped, and
// the pages together are the log, without gaps or repeats.
func TestAdminEventsPagesAreBoundedInBytes(t *testing.T) {
	ctx := context.Background()
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(parkPolicy)})
	const writes = 120
	for i := range writes {
		summary := fmt.Sprintf("write %d: %s", i, strings.Repeat("publishing needs a human. ", 20))[:500]
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha",
			FactType: "publish.auto", Summary: summary, Actor: memory.Actor{AgentID: "a", Dialect: "native"}})
		if err != nil || res.Outcome != memory.OutcomeParked {
			t.Fatalf("write %d: %v %v", i, res, err)
		}
	}
	all, err := gov.Events(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	total := 0
	for _, ev := range all {
		want = append(want, ev.ID)
		raw, _ := json.Marshal(ev)
		total += len(raw)
	}
	if len(want) != writes {
		t.Fatalf("%d events, want %d", len(want), writes)
	}

	cases := []struct {
		name   string
		budget int // Admin.EventPageBytes
		limit  int // 0: none given (100)
		pages  int // -1: more than one
	}{
		{"default budget holds the log", 0, 10000, 1},
		{"default limit", 0, 0, 2},
		{"limit", 0, 7, (writes + 6) / 7},
		{"budget of a few events", 16 << 10, 10000, -1},
		{"budget below one event", 1, 10000, writes},
		{"budget and limit", 32 << 10, 5, (writes + 4) / 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			(&proxy.Admin{Gov: gov, Log: discard(), Token: token, EventPageBytes: tc.budget}).Register(mux)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			budget := tc.budget
			if budget == 0 {
				budget = memory.EventPageBytes
			}
			var got []string
			after, pages := "", 0
			for {
				q := url.Values{}
				if after != "" {
					q.Set("after", after)
				}
				if tc.limit > 0 {
					q.Set("limit", fmt.Sprint(tc.limit))
				}
				body := getEvents(t, srv.URL+"/admin/v1/events?"+q.Encode())
				var page eventsPage
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatal(err)
				}
				pages++
				if page.Count != len(page.Events) || len(page.Events) == 0 && after == "" {
					t.Fatalf("page %d: count %d, %d events", pages, page.Count, len(page.Events))
				}
				if len(body) > budget && len(page.Events) > 1 {
					t.Fatalf("page %d: %d bytes for %d events, over the budget of %d", pages, len(body), len(page.Events), budget)
				}
				if tc.limit > 0 && len(page.Events) > tc.limit {
					t.Fatalf("page %d: %d events, limit %d", pages, len(page.Events), tc.limit)
				}
				for _, ev := range page.Events {
					got = append(got, ev.ID)
				}
				if page.Next == "" {
					break
				}
				if page.Next != page.Events[len(page.Events)-1].ID {
					t.Fatalf("page %d: next %s is not its last event", pages, page.Next)
				}
				if pages > 2*writes {
					t.Fatal("paging does not end")
				}
				after = page.Next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("the pages hold %d events, the log %d (gaps or repeats)", len(got), len(want))
			}
			if (tc.pages >= 0 && pages != tc.pages) || (tc.pages < 0 && pages < 2) {
				t.Fatalf("%d pages, want %d", pages, tc.pages)
			}
		})
	}
	t.Logf("%d parked writes of 500 bytes: %d bytes of events (%d each)", writes, total, total/writes)

	// The last page answers an empty list and no next.
	mux := http.NewServeMux()
	(&proxy.Admin{Gov: gov, Log: discard(), Token: token}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var page map[string]any
	if err := json.Unmarshal(getEvents(t, srv.URL+"/admin/v1/events?after="+want[len(want)-1]), &page); err != nil {
		t.Fatal(err)
	}
	if evs, ok := page["events"].([]any); !ok || len(evs) != 0 || page["count"] != 0.0 || page["next"] != nil {
		t.Fatalf("after the last event: %v", page)
	}
}

func getEvents(t *testing.T, u string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, body)
	}
	return body
}
