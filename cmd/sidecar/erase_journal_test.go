package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// sharedKVFake is a KV area several instances share, as pgstore's is: it
// lists and deletes keys.
type sharedKVFake struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (f *sharedKVFake) Get(_ context.Context, ns, k string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[ns+"\x00"+k]
	if !ok {
		return nil, store.ErrNotFound
	}
	return slices.Clone(v), nil
}

func (f *sharedKVFake) Put(_ context.Context, ns, k string, v []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[ns+"\x00"+k] = slices.Clone(v)
	return nil
}

func (f *sharedKVFake) ScanNamespace(_ context.Context, ns string, _ bool, fn func(string, []byte) bool) error {
	f.mu.Lock()
	var keys []string
	for k := range f.m {
		if strings.HasPrefix(k, ns+"\x00") {
			keys = append(keys, k)
		}
	}
	f.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		f.mu.Lock()
		v, ok := f.m[k]
		f.mu.Unlock()
		if ok && !fn(strings.TrimPrefix(k, ns+"\x00"), v) {
			break
		}
	}
	return nil
}

func (f *sharedKVFake) CountNamespace(ctx context.Context, ns string) (int, error) {
	n := 0
	err := f.ScanNamespace(ctx, ns, false, func(string, []byte) bool { n++; return true })
	return n, err
}

func (f *sharedKVFake) DeleteKeys(_ context.Context, ns string, keys []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		delete(f.m, ns+"\x00"+k)
	}
	return nil
}

// TestErasureJournalOfAFleetKeepsEveryRequest: instances sharing one KV
// area journal erasures at the same moment; every request is in the
// journal (a single list key read and rewritten by each would lose some),
// and a later start resumes them all and leaves the journal empty.
func TestErasureJournalOfAFleetKeepsEveryRequest(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: eraseClassifier})
	ctx := context.Background()
	for i := range 4 {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: fmt.Sprintf("u%d", i),
			Summary: fmt.Sprintf("OKAPI-%d likes tea", i), Scope: memory.Scope{UserID: fmt.Sprintf("u%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	kv := &sharedKVFake{m: map[string][]byte{}}
	instance := func() *eraser {
		return &eraser{gov: gov, kv: kv, newID: memory.NewULIDSource(), log: slog.New(slog.DiscardHandler)}
	}
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		e := instance() // an instance each: its own lock, as in a fleet
		wg.Go(func() {
			req := memory.ErasureRequest{ID: fmt.Sprintf("er-%02d", i), Scope: memory.ErasureScope{UserID: fmt.Sprintf("u%d", i%4)}, By: "dpo"}
			if err := e.record(ctx, req); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := instance().journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("the journal holds %d of %d erasures requested at once", len(got), n)
	}
	// The instances were killed before erasing: the next start resumes all.
	if err := instance().Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := instance().journal(ctx); err != nil || len(left) != 0 {
		t.Fatalf("after resuming, the journal holds %v (%v)", left, err)
	}
	recs, err := gov.List(ctx, memory.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if strings.Contains(r.Summary, "OKAPI") {
			t.Errorf("%s still reads %q after the resumed erasures", r.ID, r.Summary)
		}
	}
}

// TestErasureForgetsTheVectorsOfWhatItErased: with a semantic index, an
// erasure drops the vectors of exactly the records it erased before it
// answers.
func TestErasureForgetsTheVectorsOfWhatItErased(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: eraseClassifier})
	ctx := context.Background()
	ids := map[string][]string{}
	for i, user := range []string{"ann", "ann", "ben"} {
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: user,
			Summary: fmt.Sprintf("TAPIR-%d %s likes tea", i, user), Scope: memory.Scope{UserID: user}})
		if err != nil {
			t.Fatal(err)
		}
		ids[user] = append(ids[user], res.Record.ID)
	}
	var forgot []string
	e := &eraser{gov: gov, kv: st, newID: memory.NewULIDSource(), log: slog.New(slog.DiscardHandler),
		forget: func(_ context.Context, got []string) error { forgot = append(forgot, got...); return nil }}
	if _, err := e.Erase(ctx, memory.ErasureRequest{Scope: memory.ErasureScope{UserID: "ann"}, By: "dpo"}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(forgot)
	want := slices.Sorted(slices.Values(ids["ann"]))
	if !slices.Equal(forgot, want) {
		t.Fatalf("vectors forgotten for %v, want ann's records %v", forgot, want)
	}
}
