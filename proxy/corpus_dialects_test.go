package proxy_test

// TestCorpusDialects runs the labelled corpus (policy/corpus) through every
// dialect the agent listener serves, over real HTTP on loopback, against
// the sidecar's stack: the default policy, the secret scanner and a Badger
// store on disk; TestCorpusDialectsOnPostgres runs it through one dialect
// (Mem0's) on PostgreSQL. policy/corpus_test.go checks the governor alone; this
// checks that no dialect changes what the governor decides on the way in
// (a source, a layer, a subject it adds or drops) or misreports it on the
// way out.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/proxy"
	memgatemcp "github.com/memgate/memgate/proxy/mcp"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/search"
	"github.com/memgate/memgate/secrets"
	"github.com/memgate/memgate/store"
)

// dialectParts are the parts of the corpus, all of them. The rules were
// tuned on the dev parts, which must meet every expectation in every
// dialect; the hold-out parts are reported (policy/corpus_test.go holds
// them to their figures), and in every part the dialects must agree.
var dialectParts = []string{"dev", "dev2", "holdout", "holdout2"}

func tunedPart(part string) bool { return part == "dev" || part == "dev2" }

// dialectWorkers bounds the writes in flight: enough for Badger's group
// commit to share fsyncs, few enough for a 2-core CI runner.
const dialectWorkers = 8

// dialectStack is the agent listener as cmd/sidecar/serve.go builds it.
type dialectStack struct {
	gov    *memory.Governor
	index  *search.Index
	mux    *http.ServeMux // srv's, for handler calls with a context of the test's
	mem0   *mem0.Handler
	srv    *httptest.Server
	client *http.Client
	mcp    *mcp.ClientSession
}

// dialectAnswer is what a dialect's answer to one write says happened.
type dialectAnswer struct {
	action   memory.Action
	recordID string // the record written, when the answer names it
	detail   string // the answer in short, for messages
}

// dialectVariant is one way of writing an example.
type dialectVariant struct {
	name string
	// freeText variants are held to the over-review bound; declared-layer
	// ones only to "no high-risk text applied, no secret stored".
	freeText bool
	// reference is the governor called in process, as policy/corpus_test.go
	// does: reported, and compared with the dialects, never asserted (the
	// policy tests do that).
	reference bool
	write     func(ctx context.Context, s *dialectStack, e policy.Example, user string) (dialectAnswer, error)
	// listed returns the user's active memories as the variant's reader
	// sees them: how many, and the answers read.
	listed func(ctx context.Context, s *dialectStack, user string) (int, [][]byte, error)
}

func dialectVariants() []dialectVariant {
	vs := []dialectVariant{
		{name: "governor", freeText: true, reference: true, write: governorWrite, listed: governorListed},
		{name: "native", freeText: true, write: nativeWrite(""), listed: nativeListed},
	}
	for _, l := range memory.Layers {
		vs = append(vs, dialectVariant{name: "native/" + string(l), write: nativeWrite(l), listed: nativeListed})
	}
	return append(vs,
		dialectVariant{name: "mem0", freeText: true, write: mem0Write, listed: mem0Listed},
		dialectVariant{name: "mcp", freeText: true, write: mcpWrite, listed: scopeListed})
}

// dialectUser is the user an example is written as in a variant, so that
// no two writes share a slot.
func dialectUser(e policy.Example, variant string) string {
	return "c-" + e.ID + "-" + strings.ReplaceAll(variant, "/", "-")
}

// governorWrite submits the example as policy/corpus_test.go does.
func governorWrite(ctx context.Context, s *dialectStack, e policy.Example, user string) (dialectAnswer, error) {
	res, err := s.gov.Submit(ctx, memory.Candidate{Summary: e.Text, Layer: e.Layer, CandidateSource: e.Source,
		Scope: memory.Scope{UserID: user}, Actor: memory.Actor{AgentID: "corpus", Dialect: "native"}})
	if err != nil {
		return dialectAnswer{}, err
	}
	a := dialectAnswer{action: memory.ActionReject, recordID: res.Record.ID, detail: string(res.Outcome)}
	switch res.Outcome {
	case memory.OutcomeApplied, memory.OutcomeUnchanged:
		a.action = memory.ActionApply
	case memory.OutcomeParked:
		a.action = memory.ActionReview
	}
	return a, nil
}

func governorListed(ctx context.Context, s *dialectStack, user string) (int, [][]byte, error) {
	recs, err := s.gov.List(ctx, memory.ListFilter{Scope: memory.Scope{UserID: user}})
	if err != nil {
		return 0, nil, err
	}
	b, err := json.Marshal(recs)
	return len(recs), [][]byte{b}, err
}

// nativeWrite posts the example to POST /api/v1/memories, declaring layer
// if not empty. The user is sent as both subject and scope, so the native
// answer can be checked against the subject's list.
func nativeWrite(layer memory.Layer) func(context.Context, *dialectStack, policy.Example, string) (dialectAnswer, error) {
	return func(ctx context.Context, s *dialectStack, e policy.Example, user string) (dialectAnswer, error) {
		if layer == "" {
			layer = e.Layer
		}
		body := map[string]any{"summary": e.Text, "subjectId": user, "scope": map[string]string{"userId": user}}
		if e.Source != "" {
			body["candidateSource"] = e.Source
		}
		if layer != "" {
			body["layer"] = layer
		}
		status, raw, err := s.do(ctx, http.MethodPost, "/api/v1/memories", body, nil)
		if err != nil {
			return dialectAnswer{}, err
		}
		var rec struct {
			ID     string `json:"id"`
			Record struct {
				ID string `json:"id"`
			} `json:"record"`
		}
		_ = json.Unmarshal(raw, &rec)
		a := dialectAnswer{recordID: rec.ID, detail: fmt.Sprintf("HTTP %d", status)}
		switch status {
		case http.StatusCreated, http.StatusOK:
			a.action = memory.ActionApply
		case http.StatusAccepted:
			a.action = memory.ActionReview
		case http.StatusUnprocessableEntity:
			a.action, a.recordID = memory.ActionReject, rec.Record.ID
		default:
			return a, fmt.Errorf("POST /api/v1/memories answered %d: %s", status, clip(raw))
		}
		return a, nil
	}
}

func nativeListed(ctx context.Context, s *dialectStack, user string) (int, [][]byte, error) {
	return nativeList(ctx, s, "subjectId", user)
}

// scopeListed reads the user's memories on the native route by scope, for
// dialects whose writes take their subject from the scope (or the text).
func scopeListed(ctx context.Context, s *dialectStack, user string) (int, [][]byte, error) {
	return nativeList(ctx, s, "userId", user)
}

func nativeList(ctx context.Context, s *dialectStack, key, user string) (int, [][]byte, error) {
	path := "/api/v1/memories?" + url.Values{key: {user}}.Encode()
	status, raw, err := s.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return 0, nil, err
	}
	var list struct {
		Memories []json.RawMessage `json:"memories"`
		Count    int               `json:"count"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &list) != nil || list.Count != len(list.Memories) {
		return 0, nil, fmt.Errorf("GET %s answered %d: %s", path, status, clip(raw))
	}
	return list.Count, [][]byte{raw}, nil
}

// mem0Write adds the example on the Mem0 v1 route as the mem0ai SDKs do
// with infer: false. An inference (source model-inference) is what the
// assistant said, so it is sent with the assistant's role: that is how a
// Mem0 client says where a memory comes from.
func mem0Write(ctx context.Context, s *dialectStack, e policy.Example, user string) (dialectAnswer, error) {
	role := "user"
	switch e.Source {
	case memory.SourceInference:
		role = "assistant"
	case memory.SourceTool:
		role = "tool"
	}
	body := map[string]any{"messages": []map[string]string{{"role": role, "content": e.Text}}, "user_id": user, "infer": false}
	status, raw, err := s.do(ctx, http.MethodPost, "/v1/memories/", body, map[string]string{"X-Mem0-Client": "memgate-corpus-test"})
	if err != nil {
		return dialectAnswer{}, err
	}
	if status != http.StatusOK {
		return dialectAnswer{}, fmt.Errorf("POST /v1/memories/ answered %d: %s", status, clip(raw))
	}
	// v1.0: a bare array of the applied changes, an entry per write that
	// did not apply (event PENDING_REVIEW or REFUSED), and Mem0's queued
	// entry {message, status: PENDING, event_id} when anything waits.
	var items []struct {
		Event    string `json:"event"`
		Status   string `json:"status"`
		RecordID string `json:"record_id"`
		EventID  string `json:"event_id"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return dialectAnswer{}, fmt.Errorf("POST /v1/memories/ answered %s: %v", clip(raw), err)
	}
	a := dialectAnswer{action: memory.ActionReject, detail: "[] (nothing applied or parked)"}
	switch {
	case len(items) == 1 && (items[0].Event == "ADD" || items[0].Event == "UPDATE"):
		a = dialectAnswer{action: memory.ActionApply, recordID: items[0].RecordID, detail: items[0].Event}
	case len(items) == 2 && items[0].Event == proxy.EventPendingReview && items[1].Status == "PENDING" && items[1].EventID != "":
		a = dialectAnswer{action: memory.ActionReview, recordID: items[0].RecordID, detail: "PENDING"}
	case len(items) == 1 && items[0].Event == proxy.EventRefused:
		a = dialectAnswer{action: memory.ActionReject, recordID: items[0].RecordID, detail: "REFUSED"}
	case len(items) != 0:
		return a, fmt.Errorf("POST /v1/memories/ answered one write with %s", clip(raw))
	}
	return a, nil
}

func mem0Listed(ctx context.Context, s *dialectStack, user string) (int, [][]byte, error) {
	path := "/v1/memories/?" + url.Values{"user_id": {user}}.Encode()
	status, raw, err := s.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return 0, nil, err
	}
	var list []json.RawMessage
	if status != http.StatusOK || json.Unmarshal(raw, &list) != nil {
		return 0, nil, fmt.Errorf("GET %s answered %d: %s", path, status, clip(raw))
	}
	return len(list), [][]byte{raw}, nil
}

// mcpWrite calls add_memory; the tool takes no source (memgate records
// the write as tool-sourced) and no layer.
func mcpWrite(ctx context.Context, s *dialectStack, e policy.Example, user string) (dialectAnswer, error) {
	res, err := s.mcp.CallTool(ctx, &mcp.CallToolParams{Name: "add_memory", Arguments: map[string]any{"text": e.Text, "user_id": user}})
	if err != nil {
		return dialectAnswer{}, fmt.Errorf("add_memory: %w", err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	var out struct {
		Status  string `json:"status"`
		Results []struct {
			RecordID string `json:"record_id"`
		} `json:"results"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.StructuredContent == nil && len(text) > 0 {
		raw = []byte(text[0])
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return dialectAnswer{}, fmt.Errorf("add_memory answered (error %v) %s", res.IsError, clip([]byte(strings.Join(text, "\n"))))
	}
	a := dialectAnswer{detail: out.Status}
	if len(out.Results) > 0 {
		a.recordID = out.Results[0].RecordID // the event id is a Mem0 event's, not a record's
	}
	switch {
	case out.Status == "SUCCEEDED" && !res.IsError:
		a.action = memory.ActionApply
	case out.Status == "PENDING" && !res.IsError && strings.Contains(strings.Join(text, "\n"), "human reviewer"):
		a.action = memory.ActionReview
	case out.Status == "FAILED" && res.IsError:
		a.action = memory.ActionReject
	default:
		return a, fmt.Errorf("add_memory answered (error %v) %s", res.IsError, clip([]byte(strings.Join(text, "\n"))))
	}
	return a, nil
}

// do sends a JSON request to the agent listener and returns the answer.
func (s *dialectStack) do(ctx context.Context, method, path string, body any, header map[string]string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

func clip(b []byte) string {
	const max = 600
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// dialectStore is the store a stack runs on, with what serve wires to it:
// the index search reads and Mem0's event log.
type dialectStore struct {
	st     memory.Store
	index  *search.Index
	events *mem0.EventLog
}

// openBadgerDialectStore opens Badger on disk, searched by an index that
// follows its commits, as the binary runs it.
func openBadgerDialectStore(t *testing.T) dialectStore {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir(), GroupCommit: true, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return dialectStore{st: st, index: search.New(st, search.Options{}), events: mem0.NewEventLog(st)}
}

// openPostgresDialectStore opens a fresh PostgreSQL database as serve
// opens a shared store: searched by a scan per read (no commit feed),
// Mem0's events in its KV area.
func openPostgresDialectStore(t *testing.T) dialectStore {
	t.Helper()
	ctx := context.Background()
	pg, err := pgstore.Open(ctx, pgstore.Options{URL: pgtest.New(t), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	index, err := search.Open(ctx, pg, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dialectStore{st: pg, index: index, events: mem0.NewEventLog(pg)}
}

// newDialectStack builds the agent listener over the default policy, the
// secret scanner and the store open returns, and opens one MCP session.
func newDialectStack(t *testing.T, open func(*testing.T) dialectStore) *dialectStack {
	t.Helper()
	ctx := context.Background()
	cls := policy.New(policy.Options{Logger: discard()})
	if err := cls.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cls.Close(ctx) })
	sc, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	ds := open(t)
	t.Cleanup(ds.index.Close) // before the store closes
	index := ds.index
	gov := memory.NewGovernor(memory.Options{Store: ds.st, Classifier: cls, Secrets: sc, Logger: discard(),
		// Under -race on a busy 2-core runner one evaluation may take longer
		// than the sidecar's default; a timeout would park the write as a
		// policy error and count as the classifier's.
		PolicyTimeout: 10 * time.Second, Active: index})

	mux := http.NewServeMux()
	(&proxy.Native{Gov: gov, Search: index, Log: discard()}).Register(mux)
	m0 := mem0.New(mem0.Options{Gov: gov, Events: ds.events, Search: index, Logger: discard()})
	m0.Register(mux)
	mcpSrv := memgatemcp.NewServer(gov, memgatemcp.Options{Logger: discard(), Mem0: m0}) // as the binary wires it
	mcpSrv.Register(mux)
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	t.Cleanup(mcpSrv.Close) // before srv.Close: open MCP requests must end

	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2 * dialectWorkers
	client := &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "corpus", Version: "1"}, nil).Connect(cctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: client, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &dialectStack{gov: gov, index: index, mux: mux, mem0: m0, srv: srv, client: client, mcp: cs}
}

func readDialectCorpus(t *testing.T, part string) []policy.Example {
	t.Helper()
	ex, err := policy.ReadExamplesFile("../policy/corpus/" + part + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// dialectResult is what became of one example in one variant.
type dialectResult struct {
	ans    dialectAnswer
	active int      // the user's memories the variant's reader lists
	reads  [][]byte // answers read, kept for secrets (the token check)
	err    error    // the write or the read failed
	// Settled from the store: what became of the write, the record that
	// shows what decided it, and what is wrong with it besides the
	// classifier's call.
	got      memory.Action
	rec      *memory.Record
	mismatch bool // the answer says otherwise than the store
	leaked   bool // a secret's token can be read back
	problems []string
}

// TestCorpusDialects writes every labelled example once per dialect
// variant, each as a user of its own, and holds each variant to the
// expectations of policy/corpus_test.go: no high-risk text applied, no
// secret stored (not active, not pending, its longest token in no answer
// the agent can read nor in the review queue), and, for free text, at most
// 5% of low-risk texts sent to review or rejected. What each dialect
// answers must match what the store holds. Declared-layer variants may
// over-review (a declared higher layer raises risk).
func TestCorpusDialects(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the whole corpus once per dialect (about 5,000 governed writes)")
	}
	testCorpusDialects(t, newDialectStack(t, openBadgerDialectStore), dialectParts, dialectVariants())
}

// TestCorpusDialectsOnPostgres holds Mem0's dialect on PostgreSQL to the
// same expectations, beside the governor called in process on that store:
// the dialect whose event log lives in the database.
func TestCorpusDialectsOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the whole corpus twice (about 1,800 governed writes)")
	}
	var variants []dialectVariant
	for _, vr := range dialectVariants() {
		if vr.name == "governor" || vr.name == "mem0" {
			variants = append(variants, vr)
		}
	}
	testCorpusDialects(t, newDialectStack(t, openPostgresDialectStore), dialectParts, variants)
}

// testCorpusDialects writes the parts' examples once per variant on s and
// checks each variant, and that the free-text variants agree.
func testCorpusDialects(t *testing.T, s *dialectStack, parts []string, variants []dialectVariant) {
	ctx := context.Background()
	corpus := map[string][]policy.Example{}
	for _, part := range parts {
		corpus[part] = readDialectCorpus(t, part)
	}

	// Write everything, a bounded number of writes at a time.
	results := map[string][][]dialectResult{} // part -> variant -> example
	type job struct {
		part string
		v, i int
	}
	var jobs []job
	for _, part := range parts {
		results[part] = make([][]dialectResult, len(variants))
		for v := range variants {
			results[part][v] = make([]dialectResult, len(corpus[part]))
		}
		for i := range corpus[part] {
			for v := range variants {
				jobs = append(jobs, job{part, v, i})
			}
		}
	}
	start := time.Now()
	queue := make(chan job)
	var wg sync.WaitGroup
	for range dialectWorkers {
		wg.Go(func() {
			for j := range queue {
				e, vr := corpus[j.part][j.i], variants[j.v]
				user := dialectUser(e, vr.name)
				r := &results[j.part][j.v][j.i]
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				r.ans, r.err = vr.write(cctx, s, e, user)
				if r.err == nil {
					r.active, r.reads, r.err = vr.listed(cctx, s, user)
				}
				if r.err == nil && e.Kind == "secret" {
					// Whatever the variant's reader, the native routes must
					// not show the secret either, by subject or by scope.
					for _, key := range []string{"subjectId", "userId"} {
						_, b, err := nativeList(cctx, s, key, user)
						if err != nil {
							r.err = err
						}
						r.reads = append(r.reads, b...)
					}
				}
				cancel()
			}
		})
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	wg.Wait()
	t.Logf("%d writes (%d examples x %d variants) in %v", len(jobs), len(jobs)/len(variants), len(variants), time.Since(start).Round(time.Millisecond))

	// What waits for review, by user, and every active record: the state
	// each answer is checked against.
	reviews, err := s.gov.Reviews(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string][]*memory.Record{}
	for _, it := range reviews {
		pending[it.Record.Scope.UserID] = append(pending[it.Record.Scope.UserID], it.Record)
	}
	stored, err := s.gov.List(ctx, memory.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range reviews {
		stored = append(stored, it.Record)
	}
	byUser := map[string]*memory.Record{}
	slotUsers := map[string]map[string]bool{}
	for _, r := range stored {
		byUser[r.Scope.UserID] = r
		if slotUsers[r.SlotID] == nil {
			slotUsers[r.SlotID] = map[string]bool{}
		}
		slotUsers[r.SlotID][r.Scope.UserID] = true
	}

	// Settle every result first, so the comparison of the dialects below
	// holds whichever subtests -run selects.
	for _, part := range parts {
		for v, vr := range variants {
			for i, e := range corpus[part] {
				r := &results[part][v][i]
				if r.err != nil {
					r.problems = append(r.problems, r.err.Error())
					continue
				}
				user := dialectUser(e, vr.name)
				parked := pending[user]
				switch {
				case r.active > 0:
					r.got = memory.ActionApply
				case len(parked) > 0:
					r.got = memory.ActionReview
				default:
					r.got = memory.ActionReject
				}
				if r.active+len(parked) > 1 {
					r.problems = append(r.problems, fmt.Sprintf("one write left %d active and %d pending memories", r.active, len(parked)))
				}
				if r.ans.action != r.got {
					r.mismatch = true
					r.problems = append(r.problems, fmt.Sprintf("the %s answer says %s (%s), the store holds it as %s", vr.name, r.ans.action, r.ans.detail, r.got))
				}
				rec := byUser[user]
				if rec == nil && r.ans.recordID != "" {
					rec, _ = s.gov.Get(ctx, r.ans.recordID)
				}
				if rec != nil && len(slotUsers[rec.SlotID]) > 1 {
					r.problems = append(r.problems, fmt.Sprintf("its slot %s holds writes of %d users: examples met in a slot", rec.SlotID, len(slotUsers[rec.SlotID])))
				}
				r.rec = rec
				if tok := longestToken(e.Text); e.Kind == "secret" && tok != "" {
					for _, b := range r.reads {
						r.leaked = r.leaked || containsToken(b, tok)
					}
					for _, p := range parked {
						b, _ := json.Marshal(p)
						r.leaked = r.leaked || containsToken(b, tok)
					}
					if r.leaked && !vr.reference && tunedPart(part) {
						r.problems = append(r.problems, fmt.Sprintf("the secret's token %q is readable or in the review queue", tok))
					}
				}
			}
		}
	}

	for _, part := range parts {
		for v, vr := range variants {
			t.Run(part+"/"+vr.name, func(t *testing.T) {
				sc := &dialectScore{}
				for i, e := range corpus[part] {
					r := &results[part][v][i]
					for _, p := range r.problems {
						t.Errorf("%s: %s", e.ID, p)
					}
					switch {
					case r.err != nil:
						sc.errors = append(sc.errors, e.ID)
						continue
					case r.mismatch:
						sc.mismatch = append(sc.mismatch, e.ID)
					}
					if r.leaked {
						sc.leaked = append(sc.leaked, e.ID)
					}
					sc.Add(e, r.got, r.rec)
				}
				failed := len(sc.HighApplied) > 0 || len(sc.SecretStored) > 0 || (vr.freeText && sc.OverReview() > 0.05)
				t.Logf("corpus %s, %d texts, %s:\n%s", part, sc.Total, vr.name, sc.String(vr.freeText))
				switch {
				case vr.reference || !tunedPart(part):
					// Reported; policy/corpus_test.go asserts the reference and
					// the hold-out parts' figures.
				case failed && vr.freeText:
					t.Errorf("%s %s: %d high-risk applied, %d secrets stored, %.1f%% low-risk over-reviewed (at most 5%%)",
						part, vr.name, len(sc.HighApplied), len(sc.SecretStored), 100*sc.OverReview())
				case failed:
					t.Errorf("%s %s: %d high-risk applied, %d secrets stored", part, vr.name, len(sc.HighApplied), len(sc.SecretStored))
				}
			})
		}
	}

	// Where the free-text variants disagree about one example.
	for _, part := range parts {
		var lines []string
		var free []int
		for v, vr := range variants {
			if vr.freeText {
				free = append(free, v)
			}
		}
		for i, e := range corpus[part] {
			var acts []string
			same := true
			for _, v := range free {
				r, got := results[part][v][i], "error"
				if r.err == nil {
					got = string(r.got)
				}
				same = same && r.err == nil && r.got == results[part][free[0]][i].got
				acts = append(acts, fmt.Sprintf("%s=%s", variants[v].name, got))
			}
			if !same {
				lines = append(lines, fmt.Sprintf("  %s (%s, expect %s): %s", e.ID, e.Kind, e.Expect, strings.Join(acts, " ")))
			}
		}
		if len(lines) > 0 {
			t.Errorf("corpus %s: free-text variants disagree on %d of %d texts:\n%s", part, len(lines), len(corpus[part]), strings.Join(lines, "\n"))
		}
	}
}

// longestToken is the longest space-separated word of a text, without the
// punctuation around it: for a secret, the secret or the most of it.
func longestToken(text string) string {
	var best string
	for _, f := range strings.Fields(text) {
		f = strings.TrimFunc(f, unicode.IsPunct)
		if utf8.RuneCountInString(f) > utf8.RuneCountInString(best) {
			best = f
		}
	}
	return best
}

// containsToken looks for tok in a JSON answer, as sent or JSON-escaped.
func containsToken(b []byte, tok string) bool {
	if bytes.Contains(b, []byte(tok)) {
		return true
	}
	esc, err := json.Marshal(tok)
	return err == nil && bytes.Contains(b, esc[1:len(esc)-1])
}

// dialectScore is policy.Score with the examples whose write or read
// failed, whose answer disagreed with the store, or whose secret could be
// read back.
type dialectScore struct {
	policy.Score
	errors, mismatch, leaked []string
}

// String prints the matrix and the failing examples; the over-reviewed
// ones only where the bound applies (free text).
func (s *dialectScore) String(freeText bool) string {
	var b strings.Builder
	b.WriteString(s.Table())
	for _, l := range []struct {
		name string
		ids  []string
	}{{"failed", s.errors}, {"answer differs from the store", s.mismatch}, {"secret readable", s.leaked}} {
		if len(l.ids) > 0 {
			fmt.Fprintf(&b, ", %s: %s", l.name, strings.Join(l.ids, " "))
		}
	}
	b.WriteString("\n")
	lines := slices.Concat(s.HighApplied, s.SecretStored)
	if freeText {
		lines = append(lines, s.LowReviewed...)
	}
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
