package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A vocabulary the default policy finds harmless: no strategy, permission
// or secret words, so low-risk writes stay low risk.
var vocabulary = strings.Fields(`amber apple basil birch cedar cherry clover cobalt coral daisy ember fern
	fig garnet ginger hazel indigo iris ivory jade juniper kiwi lemon lilac linen maple marble mint
	olive onyx orchid pearl pine plum quartz rose ruby saffron sage sand silver slate spruce tangerine
	teal thyme topaz tulip umber vanilla violet walnut willow yarrow zinnia`)

// request is one HTTP call and what a success looks like.
type request struct {
	kind   Kind
	method string
	path   string
	body   []byte
	want   int    // HTTP status of a success
	status string // for Mem0 adds: the event status of a success
	keepID bool   // remember the answer's memory id for later reads
}

// workload builds the requests of one run.
type workload struct {
	cfg Config
	seq atomic.Int64
	// targets are Target and Targets; next picks one per request.
	targets []string
	next    atomic.Uint64
	ids     idPool
	runID   string
	// nonce makes this run's writes differ from an earlier run's on the
	// same sidecar (a repeat would answer "unchanged").
	nonce string
}

func newWorkload(cfg Config) *workload {
	return &workload{cfg: cfg, runID: fmt.Sprintf("bench-%d", cfg.Seed), targets: append([]string{cfg.Target}, cfg.Targets...),
		nonce: strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
}

// target returns the base URL of the next request, round robin.
func (w *workload) target() string {
	if len(w.targets) == 1 {
		return w.targets[0]
	}
	return w.targets[(w.next.Add(1)-1)%uint64(len(w.targets))]
}

func (w *workload) subject(rng *rand.Rand) string {
	return fmt.Sprintf("bench-%d", rng.IntN(w.cfg.Subjects))
}

// text is a memory of about SummaryBytes with three vocabulary words, so
// a one-word search matches a few percent of a subject's memories.
func (w *workload) text(prefix string, rng *rand.Rand) string {
	s := fmt.Sprintf("%s %s %s and %s", prefix, vocabulary[rng.IntN(len(vocabulary))],
		vocabulary[rng.IntN(len(vocabulary))], vocabulary[rng.IntN(len(vocabulary))])
	for len(s) < w.cfg.SummaryBytes {
		s += " " + vocabulary[rng.IntN(len(vocabulary))]
	}
	return s[:max(w.cfg.SummaryBytes, len(prefix))]
}

// overrideSlots is how many state slots overrides spread over: each parked
// override joins its slot's pending list, which the next one reads.
const overrideSlots = 256

func (w *workload) build(kind Kind, rng *rand.Rand) request {
	n := w.seq.Add(1)
	if kind == KindRead && w.ids.empty() {
		kind = KindSearch
	}
	if w.cfg.Dialect == Mem0 {
		return w.mem0(kind, n, rng)
	}
	return w.native(kind, n, rng)
}

func (w *workload) native(kind Kind, n int64, rng *rand.Rand) request {
	actor := map[string]string{"agentId": "memgate-bench", "runId": w.runID}
	switch kind {
	case KindOverride:
		return request{kind: kind, method: http.MethodPost, path: "/api/v1/memories", want: http.StatusAccepted,
			body: mustJSON(map[string]any{"layer": "state", "subjectId": fmt.Sprintf("bench-state-%d", rng.IntN(overrideSlots)),
				"factType": "status", "summary": fmt.Sprintf("status is revision %s.%d", w.nonce, n), "actor": actor})}
	case KindRead:
		return request{kind: kind, method: http.MethodGet, path: "/api/v1/memories/" + url.PathEscape(w.ids.pick(rng)), want: http.StatusOK}
	case KindSearch:
		q := url.Values{"subjectId": {w.subject(rng)}, "q": {vocabulary[rng.IntN(len(vocabulary))]}}
		return request{kind: kind, method: http.MethodGet, path: "/api/v1/memories?" + q.Encode(), want: http.StatusOK}
	}
	return request{kind: KindWrite, method: http.MethodPost, path: "/api/v1/memories", want: http.StatusCreated, keepID: true,
		body: mustJSON(map[string]any{"layer": "checkpoint", "subjectId": w.subject(rng), "factType": fmt.Sprintf("step.%s.%d", w.nonce, n),
			"summary": w.text(fmt.Sprintf("step %s.%d done with", w.nonce, n), rng), "actor": actor})}
}

func (w *workload) mem0(kind Kind, n int64, rng *rand.Rand) request {
	switch kind {
	case KindOverride:
		return request{kind: kind, method: http.MethodPost, path: "/v3/memories/add/", want: http.StatusOK, status: "PENDING",
			body: mustJSON(map[string]any{"infer": false, "user_id": w.subject(rng), "run_id": w.runID,
				"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf(
					"auto-publish is disabled for project bench-%d (revision %s.%d)", rng.IntN(overrideSlots), w.nonce, n)}}})}
	case KindRead:
		return request{kind: kind, method: http.MethodGet, path: "/v1/memories/" + url.PathEscape(w.ids.pick(rng)) + "/", want: http.StatusOK}
	case KindSearch:
		return request{kind: kind, method: http.MethodPost, path: "/v3/memories/search/", want: http.StatusOK,
			body: mustJSON(map[string]any{"query": vocabulary[rng.IntN(len(vocabulary))], "filters": map[string]string{"user_id": w.subject(rng)}})}
	}
	return request{kind: KindWrite, method: http.MethodPost, path: "/v3/memories/add/", want: http.StatusOK, status: "SUCCEEDED", keepID: true,
		body: mustJSON(map[string]any{"infer": false, "user_id": w.subject(rng), "run_id": w.runID,
			"messages": []map[string]string{{"role": "user", "content": w.text(fmt.Sprintf("I prefer note %s.%d with", w.nonce, n), rng)}}})}
}

// send runs one request; it returns the size of the answer and why it
// failed ("" for a success).
func (w *workload) send(ctx context.Context, r request) (int, string) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, w.target()+r.path, body)
	if err != nil {
		return 0, "bad request: " + err.Error()
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return 0, "transport"
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, "transport"
	}
	if resp.StatusCode == http.StatusAccepted && r.kind == KindWrite && r.want == http.StatusCreated {
		return len(data), parked
	}
	if resp.StatusCode != r.want {
		return len(data), fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	if r.status == "" && !r.keepID {
		return len(data), ""
	}
	var ans struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return len(data), "unexpected answer"
	}
	if r.kind == KindWrite && r.status == "SUCCEEDED" && ans.Status == "PENDING" {
		return len(data), parked
	}
	if r.status != "" && ans.Status != r.status {
		return len(data), "unexpected answer"
	}
	if r.keepID {
		id := ans.ID
		if len(ans.Results) > 0 {
			id = ans.Results[0].ID
		}
		if id != "" {
			w.ids.add(id)
		}
	}
	return len(data), ""
}

// setup writes what reads, searches and overrides need before the clock
// starts: a memory per subject and an applied state per override slot. It
// returns the size of a write's answer (the stored record).
func (w *workload) setup(ctx context.Context) (int, error) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, 1))
	size := 0
	for i := range w.cfg.Subjects {
		r := w.build(KindWrite, rng)
		if w.cfg.Dialect == Native {
			r.body = mustJSON(map[string]any{"layer": "checkpoint", "subjectId": fmt.Sprintf("bench-%d", i),
				"factType": fmt.Sprintf("setup.%d", i), "summary": w.text("setup step "+w.nonce+" done with", rng)})
		}
		n, failure := w.send(ctx, r)
		switch failure {
		case "":
			size = n
		case parked:
			// Policy judged this list of random words worth a review
			// (rare, and the classifier's to fix, not the load's). The
			// subject still has its slot; the run goes on.
		default:
			return 0, fmt.Errorf("setup write to %s: %s", w.cfg.Target, failure)
		}
	}
	if size == 0 {
		return 0, fmt.Errorf("setup writes to %s: none applied", w.cfg.Target)
	}
	if w.cfg.Mix[KindOverride] == 0 || w.cfg.Dialect != Native {
		return size, nil
	}
	for k := range overrideSlots {
		body := mustJSON(map[string]any{"layer": "state", "subjectId": fmt.Sprintf("bench-state-%d", k),
			"factType": "status", "summary": "status is the initial revision"})
		r := request{method: http.MethodPost, path: "/api/v1/memories", body: body, want: http.StatusCreated}
		// 200: unchanged, the state is there from an earlier run.
		if _, failure := w.send(ctx, r); failure != "" && failure != "HTTP 200" {
			return 0, fmt.Errorf("setup state for overrides on %s: %s", w.cfg.Target, failure)
		}
	}
	return size, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of strings and numbers are encoded here
	}
	return b
}

// idPool keeps the ids of recent writes for reads.
type idPool struct {
	mu   sync.Mutex
	ids  [4096]string
	n    int
	next int
}

func (p *idPool) add(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids[p.next] = id
	p.next = (p.next + 1) % len(p.ids)
	p.n = min(p.n+1, len(p.ids))
}

func (p *idPool) pick(rng *rand.Rand) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return "none"
	}
	return p.ids[rng.IntN(p.n)]
}

func (p *idPool) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n == 0
}
