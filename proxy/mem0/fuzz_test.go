package mem0

// Fuzz targets for every decoder of client input. Run as normal tests they
// check the seeds; `go test -fuzz FuzzX ./proxy/mem0/` explores further.
// Each decoder must never panic, and must answer bad input with EINVALID
// (a 400), never an internal error.

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

func wantInvalidOrNil(t *testing.T, err error) {
	t.Helper()
	if err != nil && memory.ErrorCode(err) != memory.EINVALID {
		t.Fatalf("error %v has code %q, want %q", err, memory.ErrorCode(err), memory.EINVALID)
	}
}

var fuzzRecord = &memory.Record{Summary: "User likes tea", Layer: memory.LayerPreference,
	Scope:    memory.Scope{UserID: "alice", AgentID: "a", RunID: "r"},
	Metadata: map[string]any{"k": "v", "n": 2.0, "l": []any{"x"}}, CreatedAt: time.Unix(1700000000, 0)}

func FuzzParseFilters(f *testing.F) {
	for _, s := range []string{
		`{"user_id": "alice"}`, `{"AND": [{"user_id": "a"}, {"OR": [{"agent_id": {"in": ["x"]}}, {"run_id": "*"}]}]}`,
		`{"NOT": [{"metadata": {"k": {"ne": "v"}}}]}`, `{"created_at": {"gte": "2024-01-01", "lt": 1700000000}}`,
		`{"categories": {"contains": "pref"}}`, `{"keywords": {"icontains": "TEA"}}`, `{"k": {"gt": 1}}`, `null`, `[]`, `{"AND": {}}`,
		`{"user_id": {"in": [null]}}`, `{"n": {"lte": "x"}}`, `{"OR": []}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		flt, err := parseFilters(b)
		wantInvalidOrNil(t, err)
		if err == nil {
			flt.match(fuzzRecord)
			flt.scoped()
			flt.scope()
		}
	})
}

func FuzzParseMessages(f *testing.F) {
	for _, s := range []string{
		`"hello"`, `{"role": "user", "content": "x"}`, `[{"role": "assistant", "content": [{"type": "text", "text": "y"}]}]`,
		`["a", {"content": {"type": "image_url"}}]`, `[{"role": null, "content": null, "text": "z"}]`, `5`, `[[]]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := parseMessages(b)
		wantInvalidOrNil(t, err)
		if len(msgs) > maxMessages {
			t.Fatalf("%d messages, more than %d", len(msgs), maxMessages)
		}
		for _, m := range msgs {
			if m.Role == "" {
				t.Fatal("a message without a role")
			}
		}
	})
}

// FuzzAddBody decodes an add body the way the handler does, up to the
// candidates it would submit.
func FuzzAddBody(f *testing.F) {
	for _, s := range []string{
		`{"messages": [{"role": "user", "content": "I like tea"}], "user_id": "alice"}`,
		`{"messages": "x", "agent_id": "a", "infer": false, "metadata": {"k": 1}}`,
		`{"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}], "run_id": "r"}`,
		`{"deduced_memories": ["d"], "user_id": "u", "messages": []}`, `{"text": "t", "app_id": "p"}`, `{}`, `{"messages": 1}`,
	} {
		f.Add([]byte(s))
	}
	h := New(Options{})
	httpReq := httptest.NewRequest("POST", "/v3/memories/add/", nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		var req addRequest
		err := decodeObject(b, &req)
		wantInvalidOrNil(t, err)
		if err != nil {
			return
		}
		msgs, err := parseMessages(req.Messages)
		wantInvalidOrNil(t, err)
		if err != nil {
			return
		}
		cands := h.addCandidates(context.Background(), h.writeRequest(httpReq, req.scope(), req.Metadata), &req, msgs)
		wantInvalidOrNil(t, validate(cands))
		for _, c := range cands {
			if c.Actor.Dialect != Dialect || len(c.Evidence.Excerpt) > maxExcerptBytes || !strings.HasPrefix(c.Evidence.SourceRef, "mem0:") {
				t.Fatalf("candidate %+v", c)
			}
		}
	})
}

func FuzzSearchAndListBodies(f *testing.F) {
	for _, s := range []string{
		`{"query": "tea", "filters": {"user_id": "alice"}, "top_k": 5, "threshold": 0.2}`,
		`{"query": "x", "user_id": "a", "limit": 3, "categories": ["preference"], "metadata": {"k": "v"}}`,
		`{"filters": {"AND": [{"user_id": "a"}]}, "page": 2, "page_size": 10, "start_date": "2024-01-01", "keywords": "k"}`,
		`{"top_k": 1e308}`, `{"page": -0.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var sr searchRequest
		if err := decodeObject(b, &sr); err == nil {
			_, err := parseFilters(sr.Filters)
			wantInvalidOrNil(t, err)
			_, err = extraFilter(sr.Categories, sr.Metadata)
			wantInvalidOrNil(t, err)
			if n, err := intParam("top_k", sr.TopK, 10, 1, 1000); err == nil && (n < 1 || n > 1000) {
				t.Fatalf("top_k %d out of range", n)
			} else {
				wantInvalidOrNil(t, err)
			}
		} else {
			wantInvalidOrNil(t, err)
		}
		var lr listRequest
		if err := decodeObject(b, &lr); err == nil {
			_, err := listExtras(lr.StartDate, lr.EndDate, lr.Keywords, lr.Categories)
			wantInvalidOrNil(t, err)
		}
	})
}

func FuzzUpdateBody(f *testing.F) {
	for _, s := range []string{`{"text": "new"}`, `"bare text"`, `{"metadata": {"a": 1}}`, `{"data": "d"}`, `null`, `{"text": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeUpdate(b)
		wantInvalidOrNil(t, err)
		if err == nil {
			req.newText()
		}
	})
}

func FuzzParseFacts(f *testing.F) {
	for _, s := range []string{"{\"facts\": [\"a\"]}", "```json\n{\"facts\": []}\n```", `["x"]`, "no json", "```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseFacts(s) // must not panic; an error falls back to the messages
	})
}
