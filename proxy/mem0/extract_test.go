package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/memory"
)

// wireRequest is a chat-completions request as the model receives it.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Temperature    float64 `json:"temperature"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

// fakeModel is an OpenAI-compatible chat-completions server on loopback
// that answers with a fixed content (or status) and keeps the requests.
type fakeModel struct {
	mu       sync.Mutex
	status   int
	content  string
	requests []wireRequest
	auth     []string
	paths    []string
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests, m.auth, m.paths = append(m.requests, req), append(m.auth, r.Header.Get("Authorization")), append(m.paths, r.URL.Path)
	status, content := m.status, m.content
	m.mu.Unlock()
	if status != 0 {
		http.Error(w, `{"error": "overloaded"}`, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0,
		"message": map[string]any{"role": "assistant", "content": content}}}})
}

// seen returns the requests so far, with their Authorization headers and paths.
func (m *fakeModel) seen() ([]wireRequest, []string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests), slices.Clone(m.auth), slices.Clone(m.paths)
}

func newExtractorEnv(t *testing.T, model *fakeModel, baseURL func(string) string) *env {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	ex, err := NewChatExtractor(ChatExtractorOptions{URL: baseURL(srv.URL), Model: "local-model", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, func(o *Options) { o.Extractor = ex })
}

func TestExtractorFactsBecomeInferenceCandidates(t *testing.T) {
	model := &fakeModel{content: "```json\n{\"facts\": [\"User moved to Lisbon\", \"User works as a nurse\", \"How are you?\"]}\n```"}
	e := newExtractorEnv(t, model, func(u string) string { return u + "/v1/" })
	body := map[string]any{"user_id": "alice", "custom_instructions": "Only facts about work and home.",
		"messages": []any{
			map[string]any{"role": "system", "content": "be nice"},
			map[string]any{"role": "user", "content": "I just moved to Lisbon, I'm a nurse there"},
			map[string]any{"role": "assistant", "content": "How exciting!"}}}
	ans := e.call("POST", "/v3/memories/add/", body, http.StatusOK).obj()
	got := texts(ans["results"].([]any), "memory")
	if !slices.Equal(got, []string{"User moved to Lisbon", "User works as a nurse"}) {
		t.Fatalf("results %q (policy refused the extracted question)", got)
	}
	for _, r := range e.active() {
		if r.CandidateSource != memory.SourceInference || !strings.HasPrefix(r.Evidence.SourceRef, "mem0:extract:model#") ||
			r.Evidence.Excerpt != "user: I just moved to Lisbon, I'm a nurse there\nassistant: How exciting!" {
			t.Fatalf("an extracted fact is an inference with the conversation as evidence: %+v", r)
		}
	}
	reqs, auth, paths := model.seen()
	if len(reqs) != 1 {
		t.Fatalf("want one extraction call, got %d", len(reqs))
	}
	req := reqs[0]
	if paths[0] != "/v1/chat/completions" || auth[0] != "Bearer sk-test" || req.Model != "local-model" ||
		req.ResponseFormat.Type != "json_object" || len(req.Messages) != 2 {
		t.Fatalf("extraction request: path %s auth %q %+v", paths[0], auth[0], req)
	}
	if !strings.Contains(req.Messages[0].Content, "Only facts about work and home.") ||
		strings.Contains(req.Messages[1].Content, "be nice") || !strings.Contains(req.Messages[1].Content, "nurse") {
		t.Fatalf("the prompt carries the hints and the conversation without system messages: %+v", req.Messages)
	}
}

func TestExtractorNotUsedForVerbatimAdds(t *testing.T) {
	model := &fakeModel{content: `{"facts": ["never used"]}`}
	e := newExtractorEnv(t, model, func(u string) string { return u + "/v1/chat/completions" })
	e.addApplied("I like chess")
	if reqs, _, _ := model.seen(); len(reqs) != 0 {
		t.Fatalf("infer=false must not call the extractor: %d calls", len(reqs))
	}
}

func TestExtractorFailureFallsBackToTheMessages(t *testing.T) {
	for _, model := range []*fakeModel{{status: http.StatusServiceUnavailable}, {content: "I cannot answer in JSON"}} {
		e := newExtractorEnv(t, model, func(u string) string { return u })
		ans := e.call("POST", "/v3/memories/add/", map[string]any{"user_id": "alice",
			"messages": []any{map[string]any{"role": "user", "content": "I speak Greek"}}}, http.StatusOK).obj()
		if got := texts(ans["results"].([]any), "memory"); !slices.Equal(got, []string{"I speak Greek"}) {
			t.Fatalf("fallback results %q", got)
		}
		if r := e.active()[0]; r.Evidence.SourceRef != "mem0:infer:user#0" || r.CandidateSource != memory.SourceUser {
			t.Fatalf("fallback candidate: %+v", r)
		}
	}
}

func TestExtractorEmptyAnswerAddsNothing(t *testing.T) {
	model := &fakeModel{content: `{"facts": []}`}
	e := newExtractorEnv(t, model, func(u string) string { return u })
	ans := e.call("POST", "/v3/memories/add/", map[string]any{"user_id": "alice", "messages": "Hello there!"}, http.StatusOK).obj()
	if len(ans["results"].([]any)) != 0 || ans["status"] != statusSucceeded {
		t.Fatalf("nothing worth remembering: %v", ans)
	}
}

func TestNewChatExtractorValidatesTheURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x"} {
		if _, err := NewChatExtractor(ChatExtractorOptions{URL: u}); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	ex, err := NewChatExtractor(ChatExtractorOptions{URL: "http://127.0.0.1:8080/v1/"})
	if err != nil || ex.url != "http://127.0.0.1:8080/v1/chat/completions" || ex.model != "gpt-4o-mini" {
		t.Fatalf("extractor %+v, %v", ex, err)
	}
}

func TestParseFacts(t *testing.T) {
	tests := []struct {
		content string
		want    []string
		ok      bool
	}{
		{`{"facts": ["a", "b"]}`, []string{"a", "b"}, true},
		{"```json\n{\"facts\": [\"a\"]}\n```", []string{"a"}, true},
		{"```\n[\"a\"]\n```", []string{"a"}, true},
		{`["a"]`, []string{"a"}, true},
		{`{"facts": []}`, []string{}, true},
		{`the facts are: a`, nil, false},
	}
	for _, tt := range tests {
		got, err := parseFacts(tt.content)
		if (err == nil) != tt.ok || (tt.ok && !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0) {
			t.Errorf("parseFacts(%q) = %q, %v", tt.content, got, err)
		}
	}
}

// TestExtractorErrorsDoNotEchoTheConversation: an endpoint that answers
// an error or something other than facts, echoing what it was sent, and
// one whose URL carries a key in its query: the extractor's errors name
// the endpoint without the query and repeat none of the conversation.
func TestExtractorErrorsDoNotEchoTheConversation(t *testing.T) {
	const secret = "the launch code is tangerine"
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.WriteHeader(status)
			if status == http.StatusOK {
				content, _ := json.Marshal("Sure! " + string(body))
				fmt.Fprintf(w, `{"choices":[{"message":{"content":%s}}]}`, content)
				return
			}
			w.Write(body)
		}
	}
	for _, status := range []int{http.StatusOK, http.StatusBadRequest, http.StatusBadGateway} {
		srv := httptest.NewServer(echo(status))
		e, err := NewChatExtractor(ChatExtractorOptions{URL: srv.URL + "/v1?key=s3cret"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Extract(context.Background(), []Message{{Role: "user", Content: secret}}, ExtractHints{})
		srv.Close()
		if err == nil {
			t.Fatalf("status %d: no error", status)
		}
		if strings.Contains(err.Error(), "tangerine") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("status %d: the error repeats the conversation or the key: %v", status, err)
		}
	}
	if _, err := NewChatExtractor(ChatExtractorOptions{URL: "https://user:s3cret@api.example.org/v1"}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a URL with credentials: %v", err)
	}
}
