package memory

import "testing"

func TestErasureScopeMatches(t *testing.T) {
	byAlice := &Record{Scope: Scope{UserID: "bob", AgentID: "a1"}, Actor: Actor{UserID: "alice", RunID: "r9"}}
	aboutAlice := &Record{Scope: Scope{UserID: "alice", AgentID: "a1", AppID: "app", RunID: "r1"}}
	cases := []struct {
		name  string
		scope ErasureScope
		rec   *Record
		want  bool
	}{
		{"empty matches nothing", ErasureScope{}, aboutAlice, false},
		{"scope user", ErasureScope{UserID: "alice"}, aboutAlice, true},
		{"written by the user", ErasureScope{UserID: "alice"}, byAlice, true},
		{"written by the user, scope only", ErasureScope{UserID: "alice", ScopeOnly: true}, byAlice, false},
		{"another user", ErasureScope{UserID: "carol"}, aboutAlice, false},
		{"user and agent both", ErasureScope{UserID: "alice", AgentID: "a1"}, aboutAlice, true},
		{"user and another agent", ErasureScope{UserID: "alice", AgentID: "a2"}, aboutAlice, false},
		{"app", ErasureScope{AppID: "app"}, aboutAlice, true},
		{"run in scope", ErasureScope{RunID: "r1"}, aboutAlice, true},
		{"run of the writer", ErasureScope{RunID: "r9"}, byAlice, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.scope.Matches(tc.rec); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEraseRecordKeepsIDsAndDecisionsOnly(t *testing.T) {
	r := &Record{ID: "r1", SlotID: "s1", SubjectID: "alice", Summary: "secret", Status: StatusPending,
		Value: []byte(`{"v":"secret"}`), Metadata: map[string]any{"m": "secret"}, Evidence: Evidence{Excerpt: "secret"},
		Decision: &Decision{Risk: RiskHigh, Action: ActionReview, Reasons: []Reason{{Rule: "x.y", Message: "quotes secret"}}}}
	c := eraseRecord(r, "er1", r.CreatedAt)
	if c.Summary != "" || c.Value != nil || c.Metadata != nil || c.Evidence != (Evidence{}) || c.Decision.Reasons[0].Message != "" {
		t.Fatalf("text left: %+v", c)
	}
	if c.ID != "r1" || c.SlotID != "s1" || c.Decision.Reasons[0].Rule != "x.y" || c.Decision.Risk != RiskHigh {
		t.Fatalf("ids or decision lost: %+v", c)
	}
	if c.Status != StatusRejected || c.Review == nil || c.Review.By != "erasure" || c.Erased == nil || c.Erased.TextHash == "" {
		t.Fatalf("a pending write is not withdrawn and marked: %+v", c)
	}
	if r.Summary != "secret" || r.Decision.Reasons[0].Message == "" {
		t.Fatal("eraseRecord changed its input")
	}
}
