package mem0

// Tests drive the Mem0 routes over real HTTP on loopback against a real
// Governor on a Badger database in t.TempDir(). Decisions come from
// testPolicy (a memory.ClassifierFunc), so each test states the policy it
// relies on.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/store"
)

// testPolicy: secrets are refused; chit-chat and questions are refused when
// they come from an inferred add; text about auto-publishing or "never"
// rules is policy and waits for review, as do deletions of policies; the
// rest applies as knowledge.
func testPolicy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	c := in.Candidate
	text := strings.ToLower(c.Summary)
	inferred := strings.HasPrefix(c.Evidence.SourceRef, "mem0:infer:") || strings.HasPrefix(c.Evidence.SourceRef, "mem0:extract:")
	switch {
	case strings.Contains(text, "password"):
		return testkit.Reject("secret", "secrets are never remembered"), nil
	case inferred && (strings.HasSuffix(text, "?") || isChitChat(text)):
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionReject,
			Reasons: []memory.Reason{{Rule: "chit_chat", Message: "small talk and questions are not memories"}}}, nil
	case in.Op == memory.OpDelete && in.Current != nil && in.Current.Layer == memory.LayerPolicy:
		return testkit.Review(memory.CategoryStrategy, "delete_policy", "deleting a strategy constraint needs a human"), nil
	case c.Layer == memory.LayerPolicy || strings.Contains(text, "auto-publish") || strings.HasPrefix(text, "never "):
		d := testkit.Review(memory.CategoryStrategy, "strategy", "strategy constraints need a human", "publishing")
		d.Layer = memory.LayerPolicy
		return d, nil
	}
	return testkit.Apply(), nil
}

func isChitChat(text string) bool {
	t := strings.Trim(text, " !.")
	for _, w := range []string{"hi", "hello", "hey", "thanks", "thank you", "ok", "okay", "bye", "hi there"} {
		if t == w {
			return true
		}
	}
	return false
}

type env struct {
	t     *testing.T
	cls   memory.Classifier
	dir   string
	st    *store.Store // nil on PostgreSQL
	gov   *memory.Governor
	h     *Handler
	srv   *httptest.Server
	opts  Options
	clock *testkit.Clock

	// pg is the database URL the env runs on (startEnv); empty: Badger
	// in dir. closeStore closes whichever store is open.
	pg         string
	closeStore func() error
	// records is the store the governor runs on, Badger's or PostgreSQL's:
	// what a test reads to check what was written, on either.
	records memory.Store
	// facts matches free text with the active memories (facts.Matcher),
	// as the binary does (newFactsEnv; Badger only).
	facts bool
	// relater, with facts, also shows the facts a model drew to it
	// (facts.ModelMatcher, as the binary does with --extractor-url).
	relater facts.Relater
}

// newEnv opens a store in a temp dir and serves a Handler over it on
// loopback, deciding with testPolicy. with adjusts the handler's options.
func newEnv(t *testing.T, with ...func(*Options)) *env {
	t.Helper()
	return newPolicyEnv(t, memory.ClassifierFunc(testPolicy), with...)
}

// newPolicyEnv is newEnv deciding with cls.
func newPolicyEnv(t *testing.T, cls memory.Classifier, with ...func(*Options)) *env {
	t.Helper()
	return startEnv(t, cls, "", with...)
}

// startEnv serves a Handler over Badger in a temp dir, or over the
// PostgreSQL database pg if not empty.
func startEnv(t *testing.T, cls memory.Classifier, pg string, with ...func(*Options)) *env {
	t.Helper()
	return serveEnv(&env{t: t, cls: cls, dir: t.TempDir(), pg: pg}, with...)
}

// newFactsEnv is newPolicyEnv with free text matched as the binary does.
func newFactsEnv(t *testing.T, cls memory.Classifier) *env {
	t.Helper()
	return serveEnv(&env{t: t, cls: cls, dir: t.TempDir(), facts: true})
}

func serveEnv(e *env, with ...func(*Options)) *env {
	t := e.t
	t.Helper()
	e.clock = testkit.NewTicking(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), time.Millisecond)
	for _, w := range with {
		w(&e.opts)
	}
	e.open()
	t.Cleanup(func() {
		e.srv.Close()
		if err := e.closeStore(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	o := e.opts
	if e.pg != "" {
		e.openPostgres(&o)
	} else {
		st, err := store.Open(store.Options{Dir: e.dir, GroupCommit: true}) // as the binary runs
		if err != nil {
			e.t.Fatal(err)
		}
		e.st, e.records, e.closeStore = st, st, st.Close
		o.Search = search.New(st, search.Options{}) // as the binary wires it: parts kept in memory
		mo := memory.Options{Store: st, Classifier: e.cls, Now: e.clock.Now}
		if e.facts {
			mo.Facts = &facts.Matcher{Index: o.Search}
			if e.relater != nil {
				mo.Facts = &facts.ModelMatcher{Lexical: &facts.Matcher{Index: o.Search}, Model: e.relater, Asks: ModelFact,
					Logger: slog.New(slog.DiscardHandler)}
			}
		}
		e.gov = memory.NewGovernor(mo)
		o.Events = NewEventLog(st)
	}
	o.Gov, o.Now = e.gov, e.clock.Now
	e.h = New(o)
	mux := http.NewServeMux()
	e.h.Register(mux)
	e.srv = httptest.NewServer(mux)
}

// restart closes the server and the store and opens both again, as a
// process restart would.
func (e *env) restart() {
	e.t.Helper()
	e.srv.Close()
	if err := e.closeStore(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

// response is an answer: its status and decoded JSON body.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   any
}

func (r response) obj() map[string]any {
	m, _ := r.body.(map[string]any)
	return m
}

func (r response) arr() []any {
	a, _ := r.body.([]any)
	return a
}

// do sends a request with a raw body (nil: none) and decodes the answer,
// failing the test unless the answer is JSON.
func (e *env) do(method, path string, body []byte, header ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Mem0-Client", "test/1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		e.t.Fatalf("%s %s: answer is %q, not JSON: %s", method, path, resp.Header.Get("Content-Type"), raw)
	}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		e.t.Fatalf("%s %s: answer is not JSON: %v: %s", method, path, err, raw)
	}
	return out
}

// call sends v as JSON and wants the given status.
func (e *env) call(method, path string, v any, want int, header ...string) response {
	e.t.Helper()
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			e.t.Fatal(err)
		}
	}
	resp := e.do(method, path, body, header...)
	if resp.status != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.status, want, resp.raw)
	}
	return resp
}

// add adds one verbatim user message for alice and returns the answer.
func (e *env) add(text string, extra ...any) map[string]any {
	e.t.Helper()
	body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "user_id": "alice", "infer": false}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	return e.call("POST", "/v3/memories/add/", body, http.StatusOK).obj()
}

// addApplied adds a memory that applies and returns its memory id.
func (e *env) addApplied(text string, extra ...any) string {
	e.t.Helper()
	ans := e.add(text, extra...)
	results := ans["results"].([]any)
	if len(results) != 1 || ans["status"] != statusSucceeded {
		e.t.Fatalf("add %q: want one applied result, got %v", text, ans)
	}
	return results[0].(map[string]any)["id"].(string)
}

// pending returns the review queue.
func (e *env) pending() []*memory.ReviewItem {
	e.t.Helper()
	items, err := e.gov.Reviews(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return items
}

// approveAll approves every parked write.
func (e *env) approveAll() {
	e.t.Helper()
	for _, it := range e.pending() {
		if _, err := e.gov.Approve(context.Background(), it.Record.ID, memory.Review{By: "reviewer", Route: "admin"}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// record returns a stored record by id.
func (e *env) record(id string) *memory.Record {
	e.t.Helper()
	r, err := e.gov.Get(context.Background(), id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return r
}

// active lists the active layer of alice's scope.
func (e *env) active() []*memory.Record {
	e.t.Helper()
	recs, err := e.gov.List(context.Background(), memory.ListFilter{Scope: memory.Scope{UserID: "alice"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// wantErrorShape checks Mem0's error shape: error and detail carry the
// message, code is memgate's.
func wantErrorShape(t *testing.T, resp response, status int, code string) {
	t.Helper()
	if resp.status != status {
		t.Fatalf("status %d, want %d: %s", resp.status, status, resp.raw)
	}
	m := resp.obj()
	msg, _ := m["error"].(string)
	if msg == "" || m["detail"] != msg || m["code"] != code {
		t.Fatalf("want {error, detail, code: %q}, got %s", code, resp.raw)
	}
}

func texts(items []any, key string) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.(map[string]any)[key].(string))
	}
	return out
}
