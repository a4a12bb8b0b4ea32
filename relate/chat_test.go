package relate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/internal/testkit"
)

func TestParseVerdict(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          facts.Verdict
		err           string // a part of the error; "" for none
	}{
		{"update", `{"memory":[{"id":"1","text":"Alice prefers aisle seats","event":"UPDATE","old_memory":"Alice prefers window seats"}]}`,
			facts.Verdict{Event: facts.EventUpdate, Memory: 1}, ""},
		{"none", `{"memory":[{"id":"0","text":"x","event":"NONE"}]}`, facts.Verdict{Event: facts.EventNone}, ""},
		{"delete", `{"memory":[{"id":"0","text":"x","event":"DELETE"}]}`, facts.Verdict{Event: facts.EventDelete}, ""},
		{"add", `{"memory":[{"id":"new","text":"x","event":"ADD"}]}`, facts.Verdict{Event: facts.EventAdd, Memory: -1}, ""},
		{"add without id", `{"memory":[{"text":"x","event":"add"}]}`, facts.Verdict{Event: facts.EventAdd, Memory: -1}, ""},
		// Mem0's own shape lists every memory: unchanged ones as NONE.
		{"mem0 listing with an add", `{"memory":[{"id":"0","event":"NONE"},{"id":"1","event":"NONE"},{"id":"2","event":"ADD"}]}`,
			facts.Verdict{Event: facts.EventAdd, Memory: -1}, ""},
		{"mem0 listing with an update", `{"memory":[{"id":"0","event":"NONE"},{"id":"1","event":"UPDATE"}]}`,
			facts.Verdict{Event: facts.EventUpdate, Memory: 1}, ""},
		{"several nones: the best ranked", `{"memory":[{"id":"2","event":"NONE"},{"id":"1","event":"NONE"}]}`,
			facts.Verdict{Event: facts.EventNone, Memory: 1}, ""},
		{"update before delete", `{"memory":[{"id":"0","event":"DELETE"},{"id":"2","event":"UPDATE"}]}`,
			facts.Verdict{Event: facts.EventUpdate, Memory: 2}, ""},
		{"numeric id", `{"memory":[{"id":2,"event":"UPDATE"}]}`, facts.Verdict{Event: facts.EventUpdate, Memory: 2}, ""},
		{"fenced", "```json\n{\"memory\":[{\"id\":\"0\",\"event\":\"NONE\"}]}\n```", facts.Verdict{Event: facts.EventNone}, ""},
		{"unknown id", `{"memory":[{"id":"3","event":"UPDATE"}]}`, facts.Verdict{}, "not one of the 3 memories"},
		{"record id", `{"memory":[{"id":"01J9ZK6M","event":"NONE"}]}`, facts.Verdict{}, "not one of the 3 memories"},
		{"padded id", `{"memory":[{"id":"01","event":"NONE"}]}`, facts.Verdict{}, "not one of the 3 memories"},
		{"negative id", `{"memory":[{"id":-1,"event":"NONE"}]}`, facts.Verdict{}, "not one of the 3 memories"},
		{"unknown event", `{"memory":[{"id":"0","event":"MERGE"}]}`, facts.Verdict{}, "unknown event"},
		{"no entry", `{"memory":[]}`, facts.Verdict{}, "no entry"},
		{"extractor's shape", `{"facts":["Alice prefers window seats"]}`, facts.Verdict{}, "no entry"},
		{"not JSON", `I think it is an update of memory 0.`, facts.Verdict{}, "something else"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVerdict(tc.content, 3)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%+v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// chatServer answers chat completions with content (or status), after
// delay, and keeps the last request.
type chatServer struct {
	status  int
	content string
	delay   time.Duration
	last    struct {
		auth string
		body struct {
			Model    string `json:"model"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
	}
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.last.auth = r.Header.Get("Authorization")
	json.NewDecoder(r.Body).Decode(&s.last.body)
	if !testkit.Stall(r, s.delay) {
		return
	}
	if s.status != 0 {
		http.Error(w, `{"error": {"message": "overloaded"}}`, s.status)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": s.content}}}})
}

func newChat(t *testing.T, s *chatServer, timeout time.Duration) *Chat {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(Options{URL: srv.URL + "/v1", Model: "local", APIKey: "sk-test", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var mems = []facts.Memory{{Text: "Alice prefers window seats on flights.", Score: 0.8123}, {Text: "Bob lives in Porto.", Score: 0.1}}

// TestRelateAsksWithShortIDs: the model sees the memories under the ids
// 0, 1… with their scores, and the new fact, in Mem0's update step.
func TestRelateAsksWithShortIDs(t *testing.T) {
	s := &chatServer{content: `{"memory":[{"id":"0","text":"Alice prefers aisle seats on flights.","event":"UPDATE","old_memory":"Alice prefers window seats on flights."}]}`}
	c := newChat(t, s, time.Second)
	v, err := c.Relate(t.Context(), "Alice now prefers aisle seats on flights.", mems)
	if err != nil || v != (facts.Verdict{Event: facts.EventUpdate, Memory: 0}) {
		t.Fatalf("%+v, %v", v, err)
	}
	b := s.last.body
	if s.last.auth != "Bearer sk-test" || b.Model != "local" || len(b.Messages) != 2 || !strings.Contains(b.Messages[0].Content, "UPDATE") {
		t.Fatalf("request %+v, auth %q", b, s.last.auth)
	}
	var q question
	if err := json.Unmarshal([]byte(b.Messages[1].Content), &q); err != nil {
		t.Fatalf("the question is not JSON: %v", err)
	}
	want := question{Memory: []shown{{"0", mems[0].Text, 0.81}, {"1", mems[1].Text, 0.1}}, NewFact: "Alice now prefers aisle seats on flights."}
	if len(q.Memory) != 2 || q.Memory[0] != want.Memory[0] || q.Memory[1] != want.Memory[1] || q.NewFact != want.NewFact {
		t.Fatalf("question %+v, want %+v", q, want)
	}
}

// TestRelateFailures: every way the model can fail is an error, which
// never repeats the memories or the fact.
func TestRelateFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *chatServer
		err  string
	}{
		{"error status", &chatServer{status: http.StatusServiceUnavailable}, "503"},
		{"timeout", &chatServer{delay: time.Second, content: `{"memory":[]}`}, "did not answer within"},
		{"bad JSON", &chatServer{content: `{"memory": [{"id": "0", "event": "NONE"`}, "something else"},
		{"unknown id", &chatServer{content: `{"memory":[{"id":"7","event":"NONE"}]}`}, "not one of the 2"},
		{"unknown event", &chatServer{content: `{"memory":[{"id":"0","event":"KEEP"}]}`}, "unknown event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChat(t, tc.s, 50*time.Millisecond)
			v, err := c.Relate(context.Background(), "Alice now prefers aisle seats on flights.", mems)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%+v, %v; want an error saying %q", v, err, tc.err)
			}
			if msg := err.Error(); strings.Contains(msg, "Alice") || strings.Contains(msg, "Porto") {
				t.Errorf("the error repeats memory text: %v", err)
			}
		})
	}
}

func TestNewChecksTheURL(t *testing.T) {
	if _, err := New(Options{URL: "https://user:s3cret@api.example.org/v1", KeyVar: "MEMGATE_EXTRACTOR_API_KEY"}); err == nil ||
		strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "MEMGATE_EXTRACTOR_API_KEY") {
		t.Fatalf("a URL with credentials: %v", err)
	}
	c, err := New(Options{URL: "http://127.0.0.1:8080/v1?key=k"})
	if err != nil || c.Endpoint() != "http://127.0.0.1:8080/v1/chat/completions" {
		t.Fatalf("%v, %v", c, err)
	}
}
