package mem0

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// backing is a store the event log is tested on: the embedded Badger
// store (its own key layout) or PostgreSQL (the KV area).
type backing struct {
	name string
	// db returns a fresh database URL, or "" for Badger in a temp dir.
	db func(t testing.TB) string
}

var (
	onBadger   = backing{"badger", func(testing.TB) string { return "" }}
	onPostgres = backing{"postgres", func(t testing.TB) string { return pgtest.New(t) }}
	backings   = []backing{onBadger, onPostgres}
)

func onEachBacking(t *testing.T, fn func(t *testing.T, on backing)) {
	for _, b := range backings {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// newEnvOn is newEnv on the backing's store.
func newEnvOn(t *testing.T, on backing, with ...func(*Options)) *env {
	t.Helper()
	return startEnv(t, memory.ClassifierFunc(testPolicy), on.db(t), with...)
}

// openPostgres runs the env on its database as serve runs a shared store:
// the governor on pgstore, search scanning it, events in its KV area.
func (e *env) openPostgres(o *Options) {
	e.t.Helper()
	ctx := context.Background()
	pg, err := pgstore.Open(ctx, pgstore.Options{URL: e.pg})
	if err != nil {
		e.t.Fatal(err)
	}
	index, err := search.Open(ctx, pg, search.Options{})
	if err != nil {
		pg.Close()
		e.t.Fatal(err)
	}
	e.gov = memory.NewGovernor(memory.Options{Store: pg, Classifier: e.cls, Now: e.clock.Now})
	o.Events, o.Search = NewEventLog(pg), index
	e.st, e.records, e.closeStore = nil, pg, func() error { index.Close(); return pg.Close() }
}

// openLog opens an event log on the backing's store, closed when the
// test ends.
func openLog(t testing.TB, on backing) *EventLog {
	t.Helper()
	if url := on.db(t); url != "" {
		pg, err := pgstore.Open(context.Background(), pgstore.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		return NewEventLog(pg)
	}
	st := badgertest.NewWith(t, store.Options{GroupCommit: true})
	return NewEventLog(st)
}

// TestEventLogListsAndGetsByTenant writes more events than one page of a
// database scan, of several tenants, and reads them back with each
// caller's tenant: List's page, order and total, and Get's answer, are
// what the events written say, on either backing.
func TestEventLogListsAndGetsByTenant(t *testing.T) {
	onEachBacking(t, func(t *testing.T, on backing) {
		l := openLog(t, on)
		ctx := context.Background()
		newID := memory.NewULIDSource()
		tenants := []memory.Tenant{{UserID: "alice"}, {UserID: "bob"}, {UserID: "alice"}, {}, {UserID: "alice", AgentID: "bot"}}
		var written []*Event // oldest first
		for i := range 600 {
			ev := &Event{ID: newID(), Type: eventAdd, Tenant: tenants[i%len(tenants)],
				Writes: []EventWrite{{RecordID: fmt.Sprintf("rec%d", i), Outcome: memory.OutcomeApplied}}}
			if err := l.Put(ctx, ev); err != nil {
				t.Fatal(err)
			}
			written = append(written, ev)
		}
		// seen is what a caller of tenant should list: its events, newest first.
		seen := func(tenant memory.Tenant) []string {
			var ids []string
			for _, ev := range slices.Backward(written) {
				if tenant.Sees(ev.Tenant) {
					ids = append(ids, ev.ID)
				}
			}
			return ids
		}
		for _, tt := range []struct {
			tenant        memory.Tenant
			offset, limit int
		}{
			{memory.Tenant{}, 0, 10},
			{memory.Tenant{}, 250, 20}, // across a page boundary of the scan
			{memory.Tenant{}, 590, 50}, // the oldest, fewer than limit
			{memory.Tenant{UserID: "alice"}, 0, 7},
			{memory.Tenant{UserID: "alice"}, 300, 100},
			{memory.Tenant{UserID: "bob"}, 100, 30},
			{memory.Tenant{UserID: "alice", AgentID: "bot"}, 10, 200},
			{memory.Tenant{UserID: "carol"}, 0, 10},
			{memory.Tenant{UserID: "bob"}, 1000, 10}, // past the end
			{memory.Tenant{}, 1000, 10},
		} {
			want := seen(tt.tenant)
			total := len(want)
			want = want[min(tt.offset, total):min(tt.offset+tt.limit, total)]
			evs, n, err := l.List(memory.WithTenant(ctx, tt.tenant), tt.offset, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, ev := range evs {
				got = append(got, ev.ID)
				if !tt.tenant.Sees(ev.Tenant) || len(ev.Writes) != 1 {
					t.Errorf("tenant %+v lists event %s of %+v with writes %v", tt.tenant, ev.ID, ev.Tenant, ev.Writes)
				}
			}
			if n != total || !slices.Equal(got, append([]string{}, want...)) {
				t.Errorf("tenant %+v offset %d limit %d: total %d, %d events; want total %d, %d events %v…",
					tt.tenant, tt.offset, tt.limit, n, len(got), total, len(want), want[:min(len(want), 3)])
			}
		}
		for i, ev := range written[:len(tenants)] {
			for _, caller := range []memory.Tenant{{}, {UserID: "alice"}, {UserID: "bob"}} {
				got, err := l.Get(memory.WithTenant(ctx, caller), ev.ID)
				switch {
				case caller.Sees(ev.Tenant) && (err != nil || got.ID != ev.ID || got.Writes[0].RecordID != ev.Writes[0].RecordID):
					t.Errorf("event %d of %+v got by %+v: %+v, %v", i, ev.Tenant, caller, got, err)
				case !caller.Sees(ev.Tenant) && memory.ErrorCode(err) != memory.ENOTFOUND:
					t.Errorf("event %d of %+v got by %+v: %+v, %v; want ENOTFOUND", i, ev.Tenant, caller, got, err)
				}
			}
		}
		// Ids no event has, some of which a text column cannot hold.
		for _, id := range []string{newID(), "unknown", "\xff\xfe", "a\x00b", ""} {
			if ev, err := l.Get(ctx, id); memory.ErrorCode(err) != memory.ENOTFOUND {
				t.Errorf("Get(%q) = %+v, %v; want ENOTFOUND", id, ev, err)
			}
		}
	})
}

// TestEventLogReadsEventsOfEarlierReleases: on Badger, the events an
// earlier release kept under mem0/ev/<id> move into the log's KV
// namespace once (MoveLegacyEvents, at the store's opening), so an
// upgraded sidecar serves them, and nothing is left under the old prefix.
func TestEventLogReadsEventsOfEarlierReleases(t *testing.T) {
	st := badgertest.New(t)
	ctx := context.Background()
	const id = "01JDZ8Q3K7M2X9R4T6V8W0Y1Z3"
	old := `{"id":"` + id + `","type":"ADD","writes":[{"recordId":"01JDZ8Q3K7M2X9R4T6V8W0Y1Z4","outcome":"applied"}],` +
		`"createdAt":"2026-11-02T10:00:00Z","latencyMs":3.5,"tenant":{"userId":"alice"}}`
	if err := st.PutKey(ctx, []byte("mem0/ev/"+id), []byte(old)); err != nil {
		t.Fatal(err)
	}
	if n, err := MoveLegacyEvents(ctx, st); err != nil || n != 1 {
		t.Fatalf("moved %d, %v; want 1", n, err)
	}
	if n, err := MoveLegacyEvents(ctx, st); err != nil || n != 0 {
		t.Fatalf("a second move: %d, %v; want none", n, err)
	}
	l := NewEventLog(st)
	alice := memory.WithTenant(ctx, memory.Tenant{UserID: "alice"})
	ev, err := l.Get(alice, id)
	if err != nil || ev.Type != eventAdd || ev.Writes[0].RecordID != "01JDZ8Q3K7M2X9R4T6V8W0Y1Z4" || ev.LatencyMs != 3.5 {
		t.Fatalf("the earlier release's event: %+v, %v", ev, err)
	}
	evs, total, err := l.List(alice, 0, 10)
	if err != nil || total != 1 || len(evs) != 1 || evs[0].ID != id {
		t.Fatalf("list: %d of %d, %v", len(evs), total, err)
	}
	left := 0
	if err := st.ScanPrefix(ctx, "mem0/", func(_, _ []byte) bool { left++; return true }); err != nil || left != 0 {
		t.Errorf("%d keys left under mem0/ (%v)", left, err)
	}
}

// TestEventsSharedBetweenInstances runs two sidecars' Mem0 routes on one
// PostgreSQL database: an add answered by one is polled on the other,
// its status follows a review made through the other, and both list the
// same events.
func TestEventsSharedBetweenInstances(t *testing.T) {
	url := pgtest.New(t)
	cls := memory.ClassifierFunc(testPolicy)
	a, b := startEnv(t, cls, url), startEnv(t, cls, url)

	parked := a.add("Never auto-publish posts for project beta")["event_id"].(string)
	ev := b.call("GET", "/v1/event/"+parked+"/", nil, http.StatusOK).obj()
	if ev["status"] != statusPending || ev["payload"].(map[string]any)["user_id"] != "alice" {
		t.Fatalf("instance B polls A's parked add: %v", ev)
	}
	b.approveAll()
	if ev := a.call("GET", "/v1/event/"+parked+"/", nil, http.StatusOK).obj(); ev["status"] != statusSucceeded {
		t.Fatalf("instance A after B's approval: %v", ev)
	}
	applied := b.add("I drink green tea")["event_id"].(string)
	if ev := a.call("GET", "/v1/event/"+applied+"/", nil, http.StatusOK).obj(); ev["status"] != statusSucceeded {
		t.Fatalf("instance A polls B's applied add: %v", ev)
	}
	listA := a.call("GET", "/v1/events/?page=1&page_size=10", nil, http.StatusOK).obj()
	listB := b.call("GET", "/v1/events/?page=1&page_size=10", nil, http.StatusOK).obj()
	idsA, idsB := texts(listA["results"].([]any), "id"), texts(listB["results"].([]any), "id")
	if listA["count"] != 2.0 || listB["count"] != 2.0 || !slices.Equal(idsA, idsB) ||
		!slices.Contains(idsA, parked) || !slices.Contains(idsA, applied) {
		t.Fatalf("instance A lists %v (count %v), B %v (count %v); want both events on both", idsA, listA["count"], idsB, listB["count"])
	}
}

// TestEventsOfOneTenantOnly: through tenant-bound keys, a caller gets and
// lists its tenant's events only, with counts and pages of its own; an
// unbound key sees all. On either backing.
func TestEventsOfOneTenantOnly(t *testing.T) {
	onEachBacking(t, func(t *testing.T, on backing) {
		keys, err := proxy.ParseAgentKeys("ka@user=alice, kb@user=bob, kops")
		if err != nil {
			t.Fatal(err)
		}
		e := newEnvOn(t, on, func(o *Options) { o.Keys = proxy.NewAgentKeys(keys) })
		add := func(text string, who []string) string {
			body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "infer": false}
			return e.call("POST", "/v3/memories/add/", body, http.StatusOK, who...).obj()["event_id"].(string)
		}
		var alice, bob []string // newest first
		for i := range 3 {
			alice = slices.Insert(alice, 0, add(fmt.Sprintf("alice fact %d", i), asAlice))
			if i < 2 {
				bob = slices.Insert(bob, 0, add(fmt.Sprintf("bob fact %d", i), asBob))
			}
		}
		wantErrorShape(t, e.do("GET", "/v1/event/"+alice[0]+"/", nil, asBob...), http.StatusNotFound, memory.ENOTFOUND)
		wantErrorShape(t, e.do("GET", "/v1/event/"+bob[0]+"/", nil, asAlice...), http.StatusNotFound, memory.ENOTFOUND)
		e.call("GET", "/v1/event/"+bob[1]+"/", nil, http.StatusOK, asBob...)
		e.call("GET", "/v1/event/"+alice[1]+"/", nil, http.StatusOK, asOps...)
		for _, tt := range []struct {
			who   []string
			query string
			count int
			want  []string
		}{
			{asBob, "page=1&page_size=10", 2, bob},
			{asAlice, "page=1&page_size=2", 3, alice[:2]},
			{asAlice, "page=2&page_size=2", 3, alice[2:]},
			{asOps, "page=1&page_size=10", 5, nil}, // all five, in creation order
		} {
			list := e.call("GET", "/v1/events/?"+tt.query, nil, http.StatusOK, tt.who...).obj()
			got := texts(list["results"].([]any), "id")
			if tt.want == nil {
				tt.want = []string{alice[0], alice[1], bob[0], alice[2], bob[1]}
				slices.Sort(tt.want)
				slices.Reverse(tt.want)
			}
			if list["count"] != float64(tt.count) || !slices.Equal(got, tt.want) {
				t.Errorf("%s as %s: count %v, ids %v; want %d, %v", tt.query, tt.who[1], list["count"], got, tt.count, tt.want)
			}
		}
	})
}

// BenchmarkEventLogList lists the newest page of a log of n events, as
// GET /v1/events does, unbound and as one of several tenants, on each
// backing: List reads the whole log for its total, so its cost grows
// with n on both; compare the backings and the sizes within one run.
func BenchmarkEventLogList(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		for _, on := range backings {
			b.Run(fmt.Sprintf("%s/events=%d", on.name, n), func(b *testing.B) {
				l := openLog(b, on)
				ctx := context.Background()
				newID := memory.NewULIDSource()
				for i := range n {
					ev := &Event{ID: newID(), Type: eventAdd, Tenant: memory.Tenant{UserID: fmt.Sprintf("user%d", i%4)},
						Writes: []EventWrite{{RecordID: newID(), Outcome: memory.OutcomeApplied}}}
					if err := l.Put(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
				for _, caller := range []memory.Tenant{{}, {UserID: "user1"}} {
					b.Run("tenant="+caller.UserID, func(b *testing.B) {
						ctx := memory.WithTenant(ctx, caller)
						for b.Loop() {
							if evs, _, err := l.List(ctx, 0, 20); err != nil || len(evs) != 20 {
								b.Fatalf("%d events, %v", len(evs), err)
							}
						}
					})
				}
			})
		}
	}
}
