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
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

var dialectStores = []struct {
	name string
	open func(*testing.T) dialectStore
}{{"badger", openBadgerDialectStore}, {"postgres", openPostgresDialectStore}}

// seedUser writes n memories of user, each in a slot of its own, over the
// given subjects in turn, through the governor.
func seedUser(t *testing.T, s *dialectStack, user string, n int, subjects ...string) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		res, err := s.gov.Submit(ctx, memory.Candidate{SubjectID: subjects[i%len(subjects)], FactType: fmt.Sprintf("note-%04d", i),
			Layer: memory.LayerKnowledge, Summary: fmt.Sprintf("Garden note %d: the roses by the east wall need water", i),
			Scope: memory.Scope{UserID: user}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != memory.OutcomeApplied {
			t.Fatalf("seed %d: %s", i, res.Outcome)
		}
	}
}

func getJSON(t *testing.T, s *dialectStack, path string, out any) int {
	t.Helper()
	resp, err := s.client.Get(s.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %d %q", path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// TestNativeListPages: GET /api/v1/memories answers pages of limit records
// (100 by default, 1 to 1000) and a next cursor while more follow; a
// client following next reads every record once, in list order, on
// Badger and on PostgreSQL. A client that reads only memories and count
// reads the first page.
func TestNativeListPages(t *testing.T) {
	for _, st := range dialectStores {
		t.Run(st.name, func(t *testing.T) {
			s := newDialectStack(t, st.open)
			seedUser(t, s, "pager", 250, "pager-b", "pager-a") // two subjects, interleaved
			type page struct {
				Memories []*memory.Record `json:"memories"`
				Count    int              `json:"count"`
				Next     string           `json:"next"`
			}
			var first page
			if code := getJSON(t, s, "/api/v1/memories?userId=pager", &first); code != 200 || first.Count != 100 ||
				len(first.Memories) != 100 || first.Next == "" {
				t.Fatalf("default page: %d, %d memories, count %d, next %q; want 100 and a next", code, len(first.Memories), first.Count, first.Next)
			}
			var got []*memory.Record
			sizes := []int{}
			for after := ""; ; {
				var p page
				q := url.Values{"userId": {"pager"}, "limit": {"120"}}
				if after != "" {
					q.Set("after", after)
				}
				if code := getJSON(t, s, "/api/v1/memories?"+q.Encode(), &p); code != 200 || p.Count != len(p.Memories) {
					t.Fatalf("page after %q: %d, count %d of %d", after, code, p.Count, len(p.Memories))
				}
				got, sizes = append(got, p.Memories...), append(sizes, len(p.Memories))
				if p.Next == "" {
					break
				}
				after = p.Next
			}
			if fmt.Sprint(sizes) != "[120 120 10]" || len(got) != 250 {
				t.Fatalf("pages of %v, %d records; want [120 120 10]", sizes, len(got))
			}
			seen := map[string]bool{}
			for i, r := range got {
				if seen[r.ID] {
					t.Fatalf("%s twice", r.ID)
				}
				seen[r.ID] = true
				if i > 0 && !memory.PositionOf(got[i-1]).Before(r.SubjectID, r.ID) {
					t.Fatalf("record %d (%s %s) is not after %s %s", i, r.SubjectID, r.ID, got[i-1].SubjectID, got[i-1].ID)
				}
			}
			// A page that holds the rest exactly has no next.
			var exact page
			if code := getJSON(t, s, "/api/v1/memories?subjectId=pager-a&limit=125", &exact); code != 200 || exact.Count != 125 || exact.Next != "" {
				t.Fatalf("subject pager-a, limit 125: %d, count %d, next %q; want 125 and no next", code, exact.Count, exact.Next)
			}
			for _, bad := range []string{"limit=0", "limit=1001", "limit=ten", "limit=-1", "after=%21%21", "after=" + url.QueryEscape("YWJj")} {
				var e map[string]any
				if code := getJSON(t, s, "/api/v1/memories?userId=pager&"+bad, &e); code != 400 || errCode(e) != "invalid" {
					t.Errorf("%s: %d %v, want 400", bad, code, e)
				}
			}
		})
	}
}

// cancelAfter is a request context that reports itself canceled once the
// index has tested n records: a client that leaves in the middle of a
// read. Done never fires: the read must look at Err.
type cancelAfter struct {
	context.Context
	x *search.Index
	n int64
}

func (c *cancelAfter) Err() error {
	if c.x.Examined() >= c.n {
		return context.Canceled
	}
	return nil
}

// TestReadsStopWhenTheClientLeaves calls each route that scans the active
// layer, and the Go calls the MCP tools make, with a context that ends
// after the read tested 100 of the user's 1,000 records: each stops within
// a few hundred records, not after all of them, and answers no 200. One
// whose context ended before the call tests (almost) none.
func TestReadsStopWhenTheClientLeaves(t *testing.T) {
	for _, st := range dialectStores {
		t.Run(st.name, func(t *testing.T) {
			s := newDialectStack(t, st.open)
			const n = 1000
			seedUser(t, s, "leaver", n, "leaver")
			routes := []struct{ method, path, body string }{
				{"GET", "/api/v1/memories?userId=leaver&limit=1000", ""},
				{"GET", "/api/v1/memories?userId=leaver&q=roses&limit=1000", ""},
				{"GET", "/v1/memories/?user_id=leaver", ""},
				{"POST", "/v2/memories/", `{"filters":{"user_id":"leaver"}}`},
				{"POST", "/v3/memories/", `{"filters":{"AND":[{"user_id":"leaver"},{"metadata":{"k":{"ne":"x"}}}]}}`},
				{"POST", "/v1/memories/search/", `{"query":"roses","user_id":"leaver"}`},
				{"POST", "/v2/memories/search/", `{"query":"roses","filters":{"user_id":"leaver"}}`},
				{"POST", "/v3/memories/search/", `{"query":"roses","filters":{"AND":[{"user_id":"leaver"},{"keywords":{"icontains":"east"}}]}}`},
				{"GET", "/memories?user_id=leaver", ""},
				{"POST", "/search", `{"query":"roses","user_id":"leaver"}`},
			}
			calls := []struct {
				name string
				call func(ctx context.Context) (int, error)
			}{}
			for _, rt := range routes {
				calls = append(calls, struct {
					name string
					call func(ctx context.Context) (int, error)
				}{rt.method + " " + rt.path, func(ctx context.Context) (int, error) {
					req := httptest.NewRequestWithContext(ctx, rt.method, rt.path, strings.NewReader(rt.body))
					req.Host = "localhost"
					if rt.body != "" {
						req.Header.Set("Content-Type", "application/json")
					}
					rec := httptest.NewRecorder()
					s.mux.ServeHTTP(rec, req)
					if rec.Code == 200 {
						return 200, nil
					}
					return rec.Code, fmt.Errorf("%d %s", rec.Code, rec.Body.String())
				}})
			}
			calls = append(calls,
				struct {
					name string
					call func(ctx context.Context) (int, error)
				}{"MCP graph tools (Governor.List)", func(ctx context.Context) (int, error) {
					_, err := s.gov.List(ctx, memory.ListFilter{})
					return 0, err
				}},
				struct {
					name string
					call func(ctx context.Context) (int, error)
				}{"MCP get_memories (mem0.Handler.List)", func(ctx context.Context) (int, error) {
					_, _, err := s.mem0.List(ctx, mem0.ListRequest{Scope: memory.Scope{UserID: "leaver"}})
					return 0, err
				}},
				struct {
					name string
					call func(ctx context.Context) (int, error)
				}{"MCP search_memories (mem0.Handler.Search)", func(ctx context.Context) (int, error) {
					_, err := s.mem0.Search(ctx, mem0.SearchRequest{Query: "roses", Scope: memory.Scope{UserID: "leaver"}})
					return 0, err
				}})
			del := routes[:0:0]
			del = append(del, struct{ method, path, body string }{"DELETE", "/v1/memories/?user_id=leaver", ""})
			for _, rt := range del { // last, and never with a context that lets it finish
				calls = append(calls, struct {
					name string
					call func(ctx context.Context) (int, error)
				}{rt.method + " " + rt.path, func(ctx context.Context) (int, error) {
					req := httptest.NewRequestWithContext(ctx, rt.method, rt.path, nil)
					req.Host = "localhost"
					rec := httptest.NewRecorder()
					s.mux.ServeHTTP(rec, req)
					if rec.Code == 200 {
						return 200, nil
					}
					return rec.Code, fmt.Errorf("%d %s", rec.Code, rec.Body.String())
				}})
			}
			for _, c := range calls {
				if strings.HasPrefix(c.name, "DELETE") {
					// The index's parts are warm from the reads before.
				} else if _, err := c.call(context.Background()); err != nil {
					t.Fatalf("%s: %v", c.name, err) // and warms the index's part
				}
				start := s.index.Examined()
				code, err := c.call(&cancelAfter{context.Background(), s.index, start + 100})
				tested := s.index.Examined() - start
				if err == nil || code == 200 || tested < 100 || tested > 400 {
					t.Errorf("%s with a client leaving after 100 records: %d %v after %d records; want it stopped within 400", c.name, code, err, tested)
				}
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				start = s.index.Examined()
				if code, err := c.call(ctx); err == nil || code == 200 || s.index.Examined()-start > 300 {
					t.Errorf("%s with a client gone before: %d %v after %d records", c.name, code, err, s.index.Examined()-start)
				}
			}
			// Nothing was deleted: the bulk delete stopped in its listing.
			if recs, err := s.gov.List(context.Background(), memory.ListFilter{Scope: memory.Scope{UserID: "leaver"}}); err != nil || len(recs) != n {
				t.Fatalf("after the calls: %d records, %v; want %d", len(recs), err, n)
			}
		})
	}
}

// TestMem0FiltersAreBounded sends the costly filters of issue 30 (an in
// over 90,000 values, an icontains of 900 KB, a search of 2,000 words) and
// others past a bound through real HTTP: each is a 400 naming the bound,
// answered before any record is tested.
func TestMem0FiltersAreBounded(t *testing.T) {
	s := newDialectStack(t, openBadgerDialectStore)
	seedUser(t, s, "bounded", 10, "bounded")
	values := make([]string, 90_000)
	for i := range values {
		values[i] = fmt.Sprintf("u%d", i)
	}
	inJSON, _ := json.Marshal(values)
	words := make([]string, 2000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	big := strings.Repeat("a", 900_000)
	for _, tc := range []struct{ path, body, want string }{
		{"/v2/memories/", `{"filters":{"AND":[{"user_id":"bounded"},{"run_id":{"in":` + string(inJSON) + `}}]}}`, "at most 1000 values"},
		{"/v2/memories/", `{"filters":{"AND":[{"user_id":"bounded"},{"keywords":{"icontains":"` + big + `"}}]}}`, "more than the 4096 allowed"},
		{"/v2/memories/", `{"filters":{"AND":[{"user_id":"bounded"},{"metadata":{"k":{"in":` + string(inJSON[:20_000]) + `"]}}}]}}`, "at most 1000 values"},
		{"/v2/memories/search/", `{"query":"roses","filters":{"AND":[{"user_id":"bounded"},{"memory":{"contains":"` + big[:5000] + `"}}]}}`, "more than the 4096 allowed"},
		{"/v3/memories/search/", `{"query":"` + strings.Join(words, " ") + `","filters":{"user_id":"bounded"}}`, "more than the 1024"},
		{"/v1/memories/search/", `{"query":"roses","user_id":"bounded","filters":{"agent_id":{"in":["` + big[:5000] + `"]}}}`, "more than 4096 bytes"},
	} {
		before := s.index.Examined()
		resp, err := s.client.Post(s.srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct{ Error, Code string }
		if resp.StatusCode != 400 || json.Unmarshal(b, &body) != nil || body.Code != "invalid" || !strings.Contains(body.Error, tc.want) {
			t.Errorf("%s (%d bytes): %d %.300s; want 400 saying %q", tc.path, len(tc.body), resp.StatusCode, b, tc.want)
		}
		if s.index.Examined() != before {
			t.Errorf("%s: %d records tested before the refusal", tc.path, s.index.Examined()-before)
		}
	}
}

// TestAdminReviewsPage: GET /admin/v1/reviews answers the queue a page at
// a time, oldest first: at most limit items (100 by default, 1 to 10,000)
// and EventPageBytes of JSON (at least one item), and a next cursor while
// items remain; following next reads each parked write once.
func TestAdminReviewsPage(t *testing.T) {
	s := newServers(t)
	for i := range 5 {
		body := fmt.Sprintf(`{"subjectId":"rules","factType":"rule-%d","layer":"policy","summary":"Rule %d: deploys wait for approval"}`, i, i)
		if status, out := call(t, "POST", s.agent.URL+"/api/v1/memories", "", body); status != 202 {
			t.Fatalf("park %d: %d %v", i, status, out)
		}
	}
	type page struct {
		Reviews []struct {
			Record struct{ ID string } `json:"record"`
		} `json:"reviews"`
		Count int    `json:"count"`
		Next  string `json:"next"`
	}
	read := func(base, query string) page {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/admin/v1/reviews"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p page
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != 200 || p.Count != len(p.Reviews) {
			t.Fatalf("reviews%s: %d %v %+v", query, resp.StatusCode, err, p)
		}
		return p
	}
	if all := read(s.admin.URL, ""); all.Count != 5 || all.Next != "" {
		t.Fatalf("default page: %+v, want all 5 and no next", all)
	}
	follow := func(base, limit string) (sizes []int, ids []string) {
		for after := ""; ; {
			p := read(base, "?"+url.Values{"limit": {limit}, "after": {after}}.Encode())
			sizes = append(sizes, p.Count)
			for _, r := range p.Reviews {
				ids = append(ids, r.Record.ID)
			}
			if p.Next == "" {
				return sizes, ids
			}
			after = p.Next
		}
	}
	sizes, ids := follow(s.admin.URL, "2")
	if fmt.Sprint(sizes) != "[2 2 1]" || len(ids) != 5 {
		t.Fatalf("pages of 2: %v, %v", sizes, ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			t.Fatalf("not oldest first, once each: %v", ids)
		}
	}
	// A byte bound smaller than one item: one item a page.
	mux := http.NewServeMux()
	(&proxy.Admin{Gov: s.gov, Log: discard(), Token: token, EventPageBytes: 1}).Register(mux)
	small := httptest.NewServer(mux)
	t.Cleanup(small.Close)
	if sizes, ids := follow(small.URL, "100"); fmt.Sprint(sizes) != "[1 1 1 1 1]" || len(ids) != 5 {
		t.Fatalf("pages of one item's bytes: %v", sizes)
	}
	for _, bad := range []string{"?limit=0", "?limit=10001", "?limit=x"} {
		if status, out := call(t, "GET", s.admin.URL+"/admin/v1/reviews"+bad, token, ""); status != 400 {
			t.Errorf("%s: %d %v, want 400", bad, status, out)
		}
	}
}

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
