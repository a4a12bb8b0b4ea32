package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/embed/embedtest"
	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/store"
)

// mem0Add stores text as user's memory through p's Mem0 API, as given.
func mem0Add(t *testing.T, p *proc, user, text string) {
	t.Helper()
	var added []map[string]any
	if code := p.do("POST", p.Agent+"/v1/memories/", map[string]any{
		"messages": []map[string]string{{"role": "user", "content": text}},
		"user_id":  user, "infer": false}, &added); code != 200 && code != 201 {
		t.Fatalf("add: %d %v", code, added)
	}
}

// mem0Hits searches user's memories through p's Mem0 API with the
// threshold of the OpenClaw plugin (0.1) and returns the hits.
func mem0Hits(t *testing.T, p *proc, user, query string) []map[string]any {
	t.Helper()
	var hits []map[string]any
	if code := p.do("POST", p.Agent+"/v2/memories/search/", map[string]any{"query": query,
		"filters": map[string]any{"user_id": user}, "threshold": 0.1, "top_k": 5}, &hits); code != 200 {
		t.Fatalf("search: %d", code)
	}
	return hits
}

// foundAlone reports whether hits is one memory containing want, scored at
// or above the threshold.
func foundAlone(hits []map[string]any, want string) bool {
	return len(hits) == 1 && strings.Contains(hits[0]["memory"].(string), want) && hits[0]["score"].(float64) >= 0.1
}

// waitFound polls p's search until it finds want alone, failing after a
// generous deadline: records are embedded after their commit, on a shared
// store by a periodic pass (sharedReconcile).
func waitFound(t *testing.T, p *proc, user, query, want string) {
	t.Helper()
	deadline := time.Now().Add(4*sharedReconcile + 10*time.Second)
	for {
		hits := mem0Hits(t, p, user, query)
		if foundAlone(hits, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not found by %q: %v", want, query, hits)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The example: a Mem0 user's preference is found by a question
// that shares none of its words only with embeddings on. The binary embeds
// after commit (the add answers before) and ranks by the documented hybrid.
func TestSemanticSearchFindsWhatWordsMiss(t *testing.T) {
	fake := embedtest.NewServer(t, embedtest.Options{})
	for _, tc := range []struct {
		name  string
		env   []string
		stall bool // the embedder never answers: writes go on, search falls back to lexical
		found bool
	}{
		{"lexical only", nil, false, false},
		{"with --embed-url", []string{"MEMGATE_EMBED_URL=" + fake.URL}, false, true},
		{"embedder stalled", []string{"MEMGATE_EMBED_URL=" + fake.URL}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startSidecar(t, t.TempDir(), tc.env...)
			if tc.stall {
				fake.Stall()
				defer fake.Release()
			}
			mem0Add(t, p, "alice", "I prefer dark mode in every editor")
			const query = "what editor theme does alice like?"
			if tc.found {
				waitFound(t, p, "alice", query, "dark mode")
				return
			}
			if hits := mem0Hits(t, p, "alice", query); foundAlone(hits, "dark mode") {
				t.Fatalf("found %v without a semantic part", hits)
			}
		})
	}
}

// Two sidecars on one PostgreSQL database with --embed-url: what one
// writes, the other finds by meaning after a periodic pass; a vector is
// made once and kept in the database, so an instance started later, or
// restarted, loads it instead of asking the endpoint again.
func TestSemanticSearchAcrossInstancesOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fake := embedtest.NewServer(t, embedtest.Options{})
	db := pgtest.New(t)
	env := []string{"MEMGATE_STORE=" + db, "MEMGATE_EMBED_URL=" + fake.URL}
	const (
		darkMode   = "I prefer dark mode in every editor"
		vegetarian = "bob is vegetarian"
	)

	// A alone: it embeds the record on its periodic pass and stores the vector.
	dirA := t.TempDir()
	a := startSidecar(t, dirA, env...)
	mem0Add(t, a, "alice", darkMode)
	waitFound(t, a, "alice", "what editor theme does alice like?", "dark mode")
	waitStoredVectors(t, db, 1)

	// B starts later: it loads the stored vector; the endpoint is not asked again.
	b := startSidecar(t, t.TempDir(), env...)
	waitFound(t, b, "alice", "what editor theme does alice like?", "dark mode")
	if n := fake.Embedded(darkMode); n != 1 {
		t.Errorf("%q embedded %d times by two instances, want once", darkMode, n)
	}

	// Written through B while both run: A finds it within a pass. Whichever
	// instance's pass comes first embeds it and the other takes the stored
	// vector; both embed it only if their passes meet within one request.
	// The query shares no word with the record: only its vector finds it.
	mem0Add(t, b, "bob", vegetarian)
	waitFound(t, a, "bob", "what can he eat for lunch?", "vegetarian")
	waitStoredVectors(t, db, 2)
	if n := fake.Embedded(vegetarian); n < 1 || n > 2 {
		t.Errorf("%q embedded %d times by two instances, want once (twice only in a race)", vegetarian, n)
	}

	// A restarts (SIGKILL): it finds both by meaning with the stored vectors.
	before := map[string]int{darkMode: fake.Embedded(darkMode), vegetarian: fake.Embedded(vegetarian)}
	a.Kill()
	a = startSidecar(t, dirA, env...)
	waitFound(t, a, "alice", "what editor theme does alice like?", "dark mode")
	waitFound(t, a, "bob", "what can he eat for lunch?", "vegetarian")
	for text, n := range before {
		if got := fake.Embedded(text); got != n {
			t.Errorf("%q embedded %d more times after a restart, want none", text, got-n)
		}
	}
}

// waitStoredVectors waits until the database holds n vectors: they are
// stored just after the index holds them.
func waitStoredVectors(t *testing.T, url string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		stored := 0
		if err := (kvEmbedStore{st, embedNamespace(embed.DefaultModel)}).Scan(ctx, "v/", func(string, []byte) bool { stored++; return true }); err != nil {
			t.Fatal(err)
		}
		if stored == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d vectors stored, want %d", stored, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkReconcileScan is what each pass of the embeddings worker reads
// on a shared store: the ids and texts of every active record, here 10,000
// of them, on PostgreSQL and on Badger (the baseline, same run; there the
// pass runs only at start and after an overflow). Compare ns/op as a ratio.
func BenchmarkReconcileScan(b *testing.B) {
	const records = 10000
	for _, tt := range []struct {
		name string
		open func(b *testing.B) memory.Store
	}{
		{"badger", func(b *testing.B) memory.Store {
			return badgertest.NewWith(b, store.Options{NoSync: true})
		}},
		{"postgres", func(b *testing.B) memory.Store {
			st, err := pgstore.Open(context.Background(), pgstore.Options{URL: pgtest.New(b)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			st := tt.open(b)
			gov := memory.NewGovernor(memory.Options{Store: st,
				Classifier: memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
					return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
				})})
			var wg sync.WaitGroup
			for w := range 16 { // 16 writers: the load takes seconds on PostgreSQL, not a minute
				wg.Go(func() {
					for i := w; i < records; i += 16 {
						if _, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerCheckpoint,
							SubjectID: fmt.Sprintf("task-%d", i%64), FactType: fmt.Sprintf("step.%d", i),
							Summary: fmt.Sprintf("step %d of the release checklist is done", i)}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			scan := activeTexts(st)
			b.ResetTimer()
			for b.Loop() {
				n := 0
				if err := scan(b.Context(), func(string, string) bool { n++; return true }); err != nil {
					b.Fatal(err)
				}
				if n != records {
					b.Fatalf("%d active records scanned, want %d", n, records)
				}
			}
		})
	}
}
