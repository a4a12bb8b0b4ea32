package mem0

import (
	"context"
	"net/http"
	"testing"

	"github.com/memgate/memgate/memory"
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
