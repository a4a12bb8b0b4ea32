package mem0

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/memgate/memgate/memory"
)

// TestAddKeepsOneFactPerMemory drives the story through every add
// route, with infer off and on, over the default policy: a repeat (also
// normalised) adds nothing, a near miss is a memory of its own, and a new
// value of a fact goes to the memory that held it (an UPDATE of its id).
func TestAddKeepsOneFactPerMemory(t *testing.T) {
	e := newFactsEnv(t, defaultPolicy(t))
	n := 0
	for _, route := range []string{"/v1/memories/", "/v3/memories/add/", "/memories"} {
		for _, infer := range []bool{false, true} {
			n++
			user := fmt.Sprintf("u%d", n)
			add := func(text string) []any {
				t.Helper()
				body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "user_id": user, "infer": infer}
				resp := e.call("POST", route, body, http.StatusOK)
				if rs, ok := resp.body.([]any); ok { // v1's list shape
					return rs
				}
				return resp.obj()["results"].([]any)
			}
			active := func() []*memory.Record {
				recs, err := e.gov.List(context.Background(), memory.ListFilter{Scope: memory.Scope{UserID: user}})
				if err != nil {
					t.Fatal(err)
				}
				return recs
			}
			first := add("Alice prefers window seats on flights.")
			if len(first) != 1 {
				t.Fatalf("%s infer=%v: first add: %v", route, infer, first)
			}
			id := first[0].(map[string]any)["id"]
			for _, again := range []string{"Alice prefers window seats on flights.", "alice prefers window seats on flights",
				"ALICE PREFERS  WINDOW SEATS ON FLIGHTS!"} {
				if rs := add(again); len(rs) != 0 {
					t.Errorf("%s infer=%v: a repeat %q adds nothing, got %v", route, infer, again, rs)
				}
			}
			if got := len(active()); got != 1 {
				t.Errorf("%s infer=%v: %d active memories after repeats, want 1", route, infer, got)
			}
			if rs := add("Alice prefers window seats on trains."); len(rs) != 1 || rs[0].(map[string]any)["id"] == id {
				t.Errorf("%s infer=%v: a near miss is a memory of its own: %v", route, infer, rs)
			}
			upd := add("Alice now prefers aisle seats on flights.")
			if len(upd) != 1 {
				t.Fatalf("%s infer=%v: update: %v", route, infer, upd)
			}
			if u := upd[0].(map[string]any); u["id"] != id || u["event"] != eventUpdate {
				t.Errorf("%s infer=%v: a new value updates the memory %v: %v", route, infer, id, u)
			}
			texts := map[string]bool{}
			for _, r := range active() {
				texts[r.Summary] = true
			}
			if len(texts) != 2 || !texts["Alice now prefers aisle seats on flights."] || !texts["Alice prefers window seats on trains."] {
				t.Errorf("%s infer=%v: active memories %v", route, infer, texts)
			}
		}
	}
}

// TestParkedUpdateReplacesOnApproval: the staging database of the issue.
// The move is parked by policy against the memory it replaces, and once
// approved it is the only active one; rollback brings the old one back.
func TestParkedUpdateReplacesOnApproval(t *testing.T) {
	e := newFactsEnv(t, defaultPolicy(t))
	e.add("The staging database is postgres-stg-2.")
	old := e.active()
	if len(old) != 1 {
		t.Fatalf("the first write applies: %v", old)
	}
	ans := e.add("The staging database moved to postgres-stg-3.")
	items := e.pending()
	if len(items) != 1 {
		t.Fatalf("the move is parked: %v, %v", ans, items)
	}
	if it := items[0]; it.Current == nil || it.Current.ID != old[0].ID || it.Record.SlotID != old[0].SlotID {
		t.Fatalf("the review shows what it replaces: %+v", it)
	}
	e.approveAll()
	now := e.active()
	if len(now) != 1 || now[0].Summary != "The staging database moved to postgres-stg-3." {
		t.Fatalf("after approval one active memory, the new value: %v", now)
	}
	if _, err := e.gov.Rollback(context.Background(), now[0].ID, false, "wrong", "admin"); err != nil {
		t.Fatal(err)
	}
	if back := e.active(); len(back) != 1 || back[0].ID != old[0].ID {
		t.Fatalf("rollback restores the old value: %v", back)
	}
}
