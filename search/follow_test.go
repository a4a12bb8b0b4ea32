package search

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/store"
)

// recorder is a Follower that keeps the entries it is told of: checkIndex
// holds them to a fresh scan of the store's index.
type recorder struct {
	mu sync.Mutex
	es map[string]storeapi.ActiveEntry
}

type recorderKey struct{}

func newRecorder() Follower { return &recorder{es: map[string]storeapi.ActiveEntry{}} }

func (r *recorder) Set(e storeapi.ActiveEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.es[e.ID] = e
}

func (r *recorder) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.es, id)
}

// entries returns what the recorder holds in the index's key order.
func (r *recorder) entries() []*entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*entry, 0, len(r.es))
	for _, e := range r.es {
		out = append(out, newEntry(e, true))
	}
	slices.SortFunc(out, func(a, b *entry) int { return compareKey(a, b.SubjectID, b.ID) })
	return out
}

// TestFollow: a Follower is made once per part and key with the part's
// entries, is told of each change (checkIndex), goes with its part when
// that is evicted, and is nil where the index keeps no part. Active loads
// an active record of the caller's tenant only.
func TestFollow(t *testing.T) {
	x, gov := applyingGovernor(t, store.Options{InMemory: true}, Options{Budget: 100 << 10})
	ctx := context.Background()
	var ids []string
	for subject, n := range map[string]int{"small": 40, "big": 400} {
		for i := range n {
			res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: subject,
				Summary: subject + " note " + strings.Repeat("x", i%7), Scope: memory.Scope{UserID: "u"}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.Record.ID)
		}
	}
	f, err := x.Follow(ctx, "small", recorderKey{}, newRecorder)
	if err != nil || f == nil {
		t.Fatalf("Follow small: %v, %v", f, err)
	}
	if n := len(f.(*recorder).entries()); n != 40 {
		t.Fatalf("the follower was told of %d entries, want 40", n)
	}
	if again, _ := x.Follow(ctx, "small", recorderKey{}, newRecorder); again != f {
		t.Fatal("a second Follow made another follower")
	}
	if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "small", Summary: "one more"}); err != nil {
		t.Fatal(err)
	}
	if err := checkIndex(x); err != nil {
		t.Fatal(err)
	}
	if n := len(f.(*recorder).entries()); n != 41 {
		t.Fatalf("the follower was told of %d entries, want 41", n)
	}
	if big, err := x.Follow(ctx, "big", recorderKey{}, newRecorder); big != nil || err != nil {
		t.Fatalf("Follow of a part over budget: %v, %v; want nil", big, err)
	}
	x.mu.Lock()
	x.budget = 0
	x.evict(nil)
	x.budget = 100 << 10
	x.mu.Unlock()
	if again, _ := x.Follow(ctx, "small", recorderKey{}, newRecorder); again == f || again == nil || len(again.(*recorder).entries()) != 41 {
		t.Fatalf("after eviction Follow must make a new follower of the reloaded part: %v", again)
	}
	x.Close()
	if closed, err := x.Follow(ctx, "small", recorderKey{}, newRecorder); closed != nil || err != nil {
		t.Fatalf("Follow of a closed index: %v, %v; want nil", closed, err)
	}

	r, err := x.Active(ctx, ids[0])
	if err != nil || r == nil || r.ID != ids[0] {
		t.Fatalf("Active: %v, %v", r, err)
	}
	other := memory.WithTenant(ctx, memory.Tenant{UserID: "v"})
	if r, err := x.Active(other, ids[0]); r != nil || err != nil {
		t.Fatalf("Active for another tenant: %v, %v; want nil", r, err)
	}
	if r, err := x.Active(ctx, "no-such-id"); r != nil || err != nil {
		t.Fatalf("Active of an unknown id: %v, %v; want nil", r, err)
	}
}
