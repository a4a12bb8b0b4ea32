package mem0

import (
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

func TestFiltersMatch(t *testing.T) {
	day := time.Date(2026, 7, 20, 15, 0, 0, 0, time.UTC)
	rec := &memory.Record{Summary: "User prefers Window seats", Layer: memory.LayerPreference,
		Scope:     memory.Scope{UserID: "alice", AgentID: "travel", RunID: "r1"},
		Metadata:  map[string]any{"trip": "lisbon", "nights": 3.0, "tags": []any{"flight", "seat"}},
		CreatedAt: day, ActivatedAt: day.Add(time.Hour)}
	tests := []struct {
		filters string
		want    bool
	}{
		{`{"user_id": "alice"}`, true},
		{`{"user_id": "bob"}`, false},
		{`{"userId": "alice", "agentId": "travel"}`, true},
		{`{"session_id": "r1"}`, true},
		{`{"app_id": "*"}`, false},
		{`{"user_id": "*"}`, true},
		{`{"user_id": null}`, true},
		{`{"AND": [{"user_id": "alice"}, {"agent_id": "travel"}]}`, true},
		{`{"AND": [{"user_id": "alice"}, {"agent_id": "chef"}]}`, false},
		{`{"OR": [{"user_id": "bob"}, {"agent_id": "travel"}]}`, true},
		{`{"or": [{"user_id": "bob"}, {"agent_id": "chef"}]}`, false},
		{`{"NOT": [{"run_id": "r1"}]}`, false},
		{`{"NOT": {"run_id": "r2"}}`, true},
		{`{"agent_id": {"in": ["chef", "travel"]}}`, true},
		{`{"agent_id": {"nin": ["chef", "travel"]}}`, false},
		{`{"agent_id": {"ne": "chef"}}`, true},
		{`{"created_at": {"gte": "2026-07-20", "lte": "2026-07-20"}}`, true},
		{`{"created_at": {"gt": "2026-07-20"}}`, false},
		{`{"created_at": {"lt": "2026-07-21T00:00:00Z"}}`, true},
		{`{"created_at": "2026-07-20"}`, true},
		{`{"updated_at": {"gte": "2026-07-20T16:00:00Z"}}`, true},
		{`{"created_at": {"gte": 1784559600}}`, true},
		{`{"categories": {"contains": "prefer"}}`, true},
		{`{"categories": {"in": ["state", "preference"]}}`, true},
		{`{"categories": "policy"}`, false},
		{`{"keywords": {"icontains": "window"}}`, true},
		{`{"keywords": {"contains": "window"}}`, false},
		{`{"keywords": "WINDOW"}`, true},
		{`{"metadata": {"trip": "lisbon"}}`, true},
		{`{"metadata": {"nights": {"gte": 3}}}`, true},
		{`{"metadata": {"nights": {"gt": 3}}}`, false},
		{`{"metadata": {"tags": {"contains": "seat"}}}`, true},
		{`{"trip": {"in": ["porto", "lisbon"]}}`, true},
		{`{"trip": "porto"}`, false},
		{`{"missing": "*"}`, false},
		{`{}`, true},
		{`null`, true},
	}
	for _, tt := range tests {
		f, err := parseFilters([]byte(tt.filters))
		if err != nil {
			t.Errorf("%s: %v", tt.filters, err)
			continue
		}
		if got := f.match(rec); got != tt.want {
			t.Errorf("%s: match %v, want %v", tt.filters, got, tt.want)
		}
	}
}

func TestFiltersScope(t *testing.T) {
	tests := []struct {
		filters string
		scoped  bool
		scope   memory.Scope
	}{
		{`{"user_id": "alice"}`, true, memory.Scope{UserID: "alice"}},
		{`{"AND": [{"user_id": "alice"}, {"run_id": "r"}]}`, true, memory.Scope{UserID: "alice", RunID: "r"}},
		{`{"OR": [{"user_id": "alice"}, {"agent_id": "a"}]}`, true, memory.Scope{}},
		{`{"OR": [{"user_id": "alice"}, {"keywords": "x"}]}`, false, memory.Scope{}},
		{`{"user_id": "*"}`, true, memory.Scope{}},
		{`{"agent_id": {"in": ["a", "b"]}}`, true, memory.Scope{}},
		{`{"agent_id": {"ne": "a"}}`, false, memory.Scope{}},
		{`{"NOT": [{"user_id": "alice"}]}`, false, memory.Scope{}},
		{`{"metadata": {"k": "v"}}`, false, memory.Scope{}},
	}
	for _, tt := range tests {
		f, err := parseFilters([]byte(tt.filters))
		if err != nil {
			t.Fatalf("%s: %v", tt.filters, err)
		}
		if f.scoped() != tt.scoped || f.scope() != tt.scope {
			t.Errorf("%s: scoped %v scope %+v, want %v %+v", tt.filters, f.scoped(), f.scope(), tt.scoped, tt.scope)
		}
	}
}

func TestFiltersRefuseBadDocuments(t *testing.T) {
	deep := `{"user_id": "a"}`
	for i := 0; i < maxFilterDepth+2; i++ {
		deep = `{"AND": [` + deep + `]}`
	}
	for _, bad := range []string{
		`[]`, `"alice"`, `{"user_id": 5}`, `{"user_id": {"in": "alice"}}`, `{"user_id": {"in": [1]}}`,
		`{"user_id": {"gt": "a"}}`, `{"AND": "x"}`, `{"AND": [1]}`, `{"created_at": {"gte": "yesterday"}}`,
		`{"created_at": true}`, `{"metadata": []}`, `{"metadata": {"k": {"in": "v"}}}`, `{"keywords": {"gt": "a"}}`,
		`{"categories": {"lt": "a"}}`, `{`, deep,
	} {
		if _, err := parseFilters([]byte(bad)); memory.ErrorCode(err) != memory.EINVALID {
			t.Errorf("%s: got %v, want an EINVALID error", bad, err)
		}
	}
}
