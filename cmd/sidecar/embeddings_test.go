package main

import (
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/embed/embedtest"
)

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
			var added []map[string]any
			if code := p.do("POST", p.Agent+"/v1/memories/", map[string]any{
				"messages": []map[string]string{{"role": "user", "content": "I prefer dark mode in every editor"}},
				"user_id":  "alice", "infer": false}, &added); code != 200 && code != 201 {
				t.Fatalf("add: %d %v", code, added)
			}
			query := map[string]any{"query": "what editor theme does alice like?", "filters": map[string]any{"user_id": "alice"},
				"threshold": 0.1, "top_k": 5}
			deadline := time.Now().Add(15 * time.Second)
			for {
				var hits []map[string]any
				if code := p.do("POST", p.Agent+"/v2/memories/search/", query, &hits); code != 200 {
					t.Fatalf("search: %d", code)
				}
				found := len(hits) == 1 && strings.Contains(hits[0]["memory"].(string), "dark mode")
				if found == tc.found && (!tc.found || hits[0]["score"].(float64) >= 0.1) {
					return
				}
				if !tc.found || time.Now().After(deadline) {
					t.Fatalf("found %v, want %v: %v", found, tc.found, hits)
				}
				time.Sleep(50 * time.Millisecond) // the record is embedded after its commit
			}
		})
	}
}
