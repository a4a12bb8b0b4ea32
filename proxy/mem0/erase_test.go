package mem0

import (
	"context"
	"net/http"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// TestDeleteByEntityErasesWhenTheOperatorSaysSo: with Options.Erase, a
// delete by entity is one erasure of that scope, matched on scope only;
// without it (the default) it stays governed deletions.
func TestDeleteByEntityErasesWhenTheOperatorSaysSo(t *testing.T) {
	var got []memory.ErasureRequest
	e := newEnv(t, func(o *Options) {
		o.Erase = func(_ context.Context, req memory.ErasureRequest) (memory.ErasureCounts, error) {
			got = append(got, req)
			return memory.ErasureCounts{Records: 3, Pending: 1}, nil
		}
	})
	for _, path := range []string{"/v1/memories/?user_id=alice", "/memories?user_id=alice"} {
		ans := e.call("DELETE", path, nil, http.StatusOK).obj()
		if ans["message"] != "Memories erased: 3 (1 pending withdrawn)." {
			t.Fatalf("%s: %v", path, ans)
		}
	}
	if len(got) != 2 || got[0].Scope != (memory.ErasureScope{UserID: "alice", ScopeOnly: true}) || got[0].By != "agent" {
		t.Fatalf("erasures asked: %+v", got)
	}
	// A wildcard still names no one.
	e.call("DELETE", "/v1/memories/?user_id=*", nil, http.StatusBadRequest)
	if len(got) != 2 {
		t.Fatalf("a wildcard erased: %+v", got)
	}
	// Without the operator's flag: no erasure.
	plain := newEnv(t)
	if plain.h.erase != nil {
		t.Fatal("erasure is on by default")
	}
}

// TestExpirationDateIsHonoured: an add's expiration_date is kept, shown,
// and once past, the retention pass takes the memory out of the active
// layer; a malformed one is refused.
func TestExpirationDateIsHonoured(t *testing.T) {
	e := newEnv(t)
	add := func(text, date string, want int) {
		t.Helper()
		e.call("POST", "/v1/memories/", map[string]any{"messages": []map[string]string{{"role": "user", "content": text}},
			"user_id": "u1", "infer": false, "expiration_date": date}, want)
	}
	add("I like green tea", "2020-01-01", http.StatusOK)
	add("I like black coffee", "2999-01-01", http.StatusOK)
	add("I like water", "next tuesday", http.StatusBadRequest)
	list := func() []any {
		return e.call("GET", "/v1/memories/?user_id=u1", nil, http.StatusOK).arr()
	}
	if n := len(list()); n != 2 {
		t.Fatalf("before the pass: %d memories", n)
	}
	res, err := e.gov.RetentionPass(context.Background(), memory.Retention{}, 100)
	if err != nil || res.Expired != 1 {
		t.Fatalf("retention pass: %+v %v", res, err)
	}
	got := list()
	if len(got) != 1 {
		t.Fatalf("after the pass: %v", got)
	}
	m := got[0].(map[string]any)
	if m["expiration_date"] != "2999-01-01" {
		t.Fatalf("the memory left: %v", m)
	}
}

// TestDeleteByEntityErasureStaysInTheTenant: bob's key cannot erase
// alice; a key bound to alice erases within alice only, even with no
// user_id given.
func TestDeleteByEntityErasureStaysInTheTenant(t *testing.T) {
	var got []memory.ErasureRequest
	keys, err := proxy.ParseAgentKeys("ka@user=alice, kb@user=bob")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *Options) {
		o.Keys = proxy.NewAgentKeys(keys)
		o.Erase = func(_ context.Context, req memory.ErasureRequest) (memory.ErasureCounts, error) {
			got = append(got, req)
			return memory.ErasureCounts{}, nil
		}
	})
	if r := e.do("DELETE", "/v1/memories/?user_id=alice", nil, "Authorization", "Token kb"); r.status == http.StatusOK {
		t.Fatalf("bob's key erased alice: %d", r.status)
	}
	if len(got) != 0 {
		t.Fatalf("an erasure ran for bob's key: %+v", got)
	}
	e.call("DELETE", "/v1/memories/?run_id=r1", nil, http.StatusOK, "Authorization", "Token ka")
	if len(got) != 1 || got[0].Scope != (memory.ErasureScope{UserID: "alice", RunID: "r1", ScopeOnly: true}) {
		t.Fatalf("alice's erasure: %+v", got)
	}
}
