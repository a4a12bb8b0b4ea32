package embed_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/embed/embedtest"
)

// records is the active layer as the scan sees it.
type records struct {
	mu   sync.Mutex
	text map[string]string
}

func newRecords() *records { return &records{text: map[string]string{}} }

func (r *records) set(id, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.text[id] = text
}

func (r *records) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.text, id)
}

func (r *records) scan(ctx context.Context, fn func(id, text string) bool) error {
	r.mu.Lock()
	ids := make([]string, 0, len(r.text))
	for id := range r.text {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	texts := make([]string, len(ids))
	for i, id := range ids {
		texts[i] = r.text[id]
	}
	r.mu.Unlock()
	for i, id := range ids {
		if !fn(id, texts[i]) {
			break
		}
	}
	return ctx.Err()
}

type fixture struct {
	srv   *embedtest.Server
	recs  *records
	store *embedtest.Store
	reg   *prometheus.Registry
	met   *embed.Metrics
}

func newFixture(t *testing.T, o embedtest.Options) *fixture {
	t.Helper()
	f := &fixture{srv: embedtest.NewServer(t, o), recs: newRecords(), store: &embedtest.Store{}}
	return f
}

type indexOpts struct {
	model     string
	queueSize int
	timeout   time.Duration
	reconcile time.Duration
	scan      embed.ScanFunc // default: the fixture's records
}

// open starts an index over the fixture; it is closed when the test ends.
func (f *fixture) open(t *testing.T, o indexOpts) *embed.Index {
	t.Helper()
	f.reg = prometheus.NewRegistry()
	met, err := embed.NewMetrics(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	f.met = met
	c, err := embed.NewClient(embed.ClientOptions{URL: f.srv.URL, Model: o.model, Timeout: o.timeout,
		RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	if o.scan == nil {
		o.scan = f.recs.scan
	}
	x, err := embed.New(embed.Options{Client: c, Scan: o.scan, Store: f.store, QueueSize: o.queueSize, Reconcile: o.reconcile,
		RetryInitial: time.Millisecond, RetryMax: 10 * time.Millisecond, Metrics: met, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := x.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return x
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// write is a committed change: the active layer changes, then the index is told.
func (f *fixture) write(x *embed.Index, id, text string) {
	f.recs.set(id, text)
	x.Changed(id, text, true)
}

func (f *fixture) delete(x *embed.Index, id string) {
	f.recs.remove(id)
	x.Changed(id, "", false)
}

// facts writes n records "fact i" as ids r0… and waits for their vectors.
func (f *fixture) facts(t *testing.T, x *embed.Index, n int) {
	t.Helper()
	for i := range n {
		f.write(x, fmt.Sprintf("r%d", i), fmt.Sprintf("fact %d", i))
	}
	eventually(t, fmt.Sprint(n, " vectors"), func() bool { return x.Len() == n })
}

// close closes x and returns how many texts the endpoint has embedded.
func (f *fixture) close(t *testing.T, x *embed.Index) int {
	t.Helper()
	if err := x.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	return f.srv.Inputs()
}

// eventually waits for cond, failing the test after a generous bound: the
// worker is asynchronous.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func hasScore(t *testing.T, x *embed.Index, query string, ids ...string) map[string]float64 {
	t.Helper()
	s, err := x.Scores(t.Context(), query, ids)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The issue's example: lexical scoring put it at 0.065, below the OpenClaw
// plugin's threshold 0.1; with embeddings it is found above it.
func TestScoresFindsTheIssueExample(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{})
	docs := map[string]string{
		"r1": "I prefer dark mode in every editor",
		"r2": "The deploy pipeline runs every Friday at noon",
		"r3": "Alice is allergic to peanuts",
	}
	for id, text := range docs {
		f.write(x, id, text)
	}
	eventually(t, "three vectors", func() bool { return x.Len() == 3 })
	const query = "what editor theme does alice like?"
	got := hasScore(t, x, query, "r1", "r2", "r3", "unknown")
	if _, ok := got["unknown"]; ok || len(got) != 3 {
		t.Fatalf("scores %v: want exactly r1, r2, r3", got)
	}
	if got["r1"] <= 0.1 {
		t.Errorf("the example scores %.3f, want above 0.1", got["r1"])
	}
	for _, other := range []string{"r2", "r3"} {
		if got[other] >= got["r1"] {
			t.Errorf("%s (%q) scores %.3f, not below the example's %.3f", other, docs[other], got[other], got["r1"])
		}
	}
	for id, text := range docs {
		if want := embedtest.Cosine(query, text, embedtest.DefaultDim); math.Abs(got[id]-want) > 1e-5 {
			t.Errorf("%s: cosine %.6f, want %.6f", id, got[id], want)
		}
	}
	sims, err := x.Similarities(t.Context(), query, []string{"r1", "unknown", "r3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sims) != 3 || float64(sims[0]) != got["r1"] || !math.IsNaN(float64(sims[1])) || float64(sims[2]) != got["r3"] {
		t.Errorf("similarities %v, want r1's and r3's scores around NaN", sims)
	}
	calls := f.srv.Calls()
	hasScore(t, x, query, "r1")
	if f.srv.Calls() != calls {
		t.Error("a repeated query was embedded again, not served from the cache")
	}
}

func TestScoresWithoutVectorsAsksNothing(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{})
	eventually(t, "the start's reconcile", func() bool { return reconciles(t, f) >= 1 })
	got := hasScore(t, x, "anything", "r1")
	if len(got) != 0 || f.srv.Calls() != 0 {
		t.Errorf("scores %v after %d calls; want none and no call", got, f.srv.Calls())
	}
}

func TestScoresFailsWhenTheEmbedderIs(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{timeout: 50 * time.Millisecond})
	f.write(x, "r1", "I prefer dark mode")
	eventually(t, "a vector", func() bool { return x.Len() == 1 })

	calls := f.srv.Calls()
	if got := hasScore(t, x, "  ", "r1"); len(got) != 0 || f.srv.Calls() != calls {
		t.Errorf("a blank query scored %v after %d calls; want nothing and no call", got, f.srv.Calls()-calls)
	}
	f.srv.FailNext(1, 500, "model crashed")
	if _, err := x.Scores(t.Context(), "editor theme", []string{"r1"}); err == nil {
		t.Error("no error with the embedder failing")
	}
	f.srv.Stall()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := x.Scores(ctx, "colour scheme", []string{"r1"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v with the embedder stalled, want the deadline", err)
	}
	f.srv.Release()
	if got := hasScore(t, x, "colour scheme", "r1"); got["r1"] <= 0 {
		t.Errorf("after recovery: %v", got)
	}
}

func reconciles(t *testing.T, f *fixture) float64 {
	t.Helper()
	return metricValue(t, f.reg, "memgate_embed_reconciles_total")
}

func TestChangedNeverBlocksAndReconcilesAfterOverflow(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	f.srv.Stall()
	x := f.open(t, indexOpts{queueSize: 4})
	eventually(t, "the start's reconcile", func() bool { return reconciles(t, f) >= 1 })
	const n = 500
	// With the embedder stalled the worker holds one batch; 4 more fit the
	// queue, the rest overflow. Every call returns (else the test hangs).
	for i := range n {
		f.write(x, fmt.Sprintf("r%03d", i), fmt.Sprintf("note %d about topic %d", i, i%11))
	}
	f.delete(x, "r007")
	if depth := metricValue(t, f.reg, "memgate_embed_queue_depth"); depth > 4 {
		t.Errorf("queue depth %v, above its bound 4", depth)
	}
	f.srv.Release()
	eventually(t, "every active record embedded", func() bool { return x.Len() == n-1 })
	if got := reconciles(t, f); got < 2 {
		t.Errorf("%v reconciles, want the start's and one after the overflow", got)
	}
	got := hasScore(t, x, "note 7 about topic 7", "r007", "r008")
	if _, ok := got["r007"]; ok {
		t.Error("the deleted record has a vector")
	}
	eventually(t, "every vector stored", func() bool { return len(f.store.Keys("v/")) == n-1 }) // stored after it is held
	eventually(t, "the vectors gauge", func() bool {
		return metricValue(t, f.reg, "memgate_embed_vectors") == n-1
	})
}

func TestRemovedRecordLosesItsVector(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{})
	f.write(x, "r1", "I prefer dark mode in every editor")
	f.write(x, "r2", "I prefer light mode in the terminal")
	eventually(t, "two vectors", func() bool { return x.Len() == 2 })
	f.delete(x, "r1")
	eventually(t, "one vector", func() bool { return x.Len() == 1 })
	calls := f.srv.Calls()
	f.write(x, "r3", " ")                                   // a blank text has nothing to embed
	f.write(x, "r2", "I prefer light mode in the terminal") // unchanged: no request
	f.write(x, "r4", "")
	f.write(x, "r5", "dark terminal colours")
	eventually(t, "r5's vector", func() bool { return x.Len() == 2 }) // changes apply in order: r3 and r4 came first
	if got := f.srv.Calls() - calls; got != 1 {
		t.Errorf("%d requests for one text worth embedding, want 1", got)
	}
	if got := hasScore(t, x, "editor theme", "r1", "r2", "r3", "r4"); len(got) != 1 || got["r2"] == 0 {
		t.Errorf("scores %v, want r2 alone", got)
	}
	eventually(t, "r1's stored vector deleted", func() bool {
		return slices.Equal(f.store.Keys("v/"), []string{"v/r2", "v/r5"})
	})
}

// TestForgetDropsVectorsAtOnce: an erasure's records lose their vectors,
// in memory and stored, before Forget returns, without waiting for the
// worker to see the records go.
func TestForgetDropsVectorsAtOnce(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{})
	f.write(x, "r1", "Alice's passport number is on file")
	f.write(x, "r2", "Bob likes green tea")
	eventually(t, "two vectors", func() bool { return x.Len() == 2 })
	if err := x.Forget(context.Background(), []string{"r1", "r9"}); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 1 || !slices.Equal(f.store.Keys("v/"), []string{"v/r2"}) {
		t.Fatalf("after Forget: %d vectors, stored %v", x.Len(), f.store.Keys("v/"))
	}
	if got := hasScore(t, x, "passport", "r1", "r2"); got["r1"] != 0 {
		t.Errorf("r1 still scores %v", got["r1"])
	}
}

func TestChangedTextIsEmbeddedAgain(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{})
	f.write(x, "r1", "we fly to Paris in May")
	eventually(t, "a vector", func() bool { return x.Len() == 1 })
	before := hasScore(t, x, "vegetarian food", "r1")["r1"]
	f.write(x, "r1", "alice is vegetarian and loves sushi")
	eventually(t, "the new text's vector", func() bool {
		return hasScore(t, x, "vegetarian food", "r1")["r1"] > before
	})
}

func TestEmbedderDownQueueHoldsThenCatchesUp(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{})
	eventually(t, "the start's reconcile", func() bool { return reconciles(t, f) >= 1 })
	f.srv.FailNext(12, 503, "model loading") // the client's 4 tries, three times over
	f.write(x, "r1", "I prefer dark mode in every editor")
	eventually(t, "the vector after the outage", func() bool { return x.Len() == 1 })
	if f.srv.Calls() < 13 {
		t.Errorf("%d calls, want the 12 failures and a success", f.srv.Calls())
	}
}

func TestRefusedTextDoesNotStopTheOthers(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	x := f.open(t, indexOpts{})
	eventually(t, "the start's reconcile", func() bool { return reconciles(t, f) >= 1 })
	// The batch is refused as a whole, then each text is tried on its own;
	// the first alone is refused again.
	f.srv.FailNext(2, 400, "input too long")
	f.srv.Stall() // hold the worker until all three are queued, so they form one batch
	for i := range 3 {
		f.write(x, fmt.Sprintf("r%d", i), fmt.Sprintf("text %d", i))
	}
	f.srv.Release()
	eventually(t, "two vectors", func() bool { return x.Len() == 2 })
	if got := hasScore(t, x, "text", "r0", "r1", "r2"); len(got) != 2 {
		t.Errorf("scores %v, want two records", got)
	}
}

func TestRestartKeepsVectors(t *testing.T) {
	f := newFixture(t, embedtest.Options{Dim: 64})
	x := f.open(t, indexOpts{})
	f.facts(t, x, 5)
	want := hasScore(t, x, "fact 3", "r0", "r1", "r2", "r3", "r4")
	embedded := f.close(t, x)

	// While it was down one record went and one came.
	f.recs.remove("r4")
	f.recs.set("r5", "fact 5")
	y := f.open(t, indexOpts{})
	eventually(t, "the new record", func() bool { return len(hasScore(t, y, "fact 3", "r5")) == 1 })
	eventually(t, "the gone record dropped", func() bool { return y.Len() == 5 })
	if got := f.srv.Inputs() - embedded; got != 2 { // r5, and the query "fact 3" (the cache is per process)
		t.Errorf("%d texts embedded after the restart, want 2 (r5 and the query)", got)
	}
	got := hasScore(t, y, "fact 3", "r0", "r1", "r2", "r3", "r4")
	for _, id := range []string{"r0", "r1", "r2", "r3"} {
		if math.Abs(got[id]-want[id]) > 1e-6 {
			t.Errorf("%s: %v after the restart, %v before", id, got[id], want[id])
		}
	}
	if _, ok := got["r4"]; ok {
		t.Error("r4 kept its vector")
	}
}

func TestRestartWithAnotherModelEmbedsAgain(t *testing.T) {
	f := newFixture(t, embedtest.Options{Dim: 64})
	x := f.open(t, indexOpts{model: "model-a"})
	f.facts(t, x, 3)
	embedded := f.close(t, x)
	y := f.open(t, indexOpts{model: "model-b"})
	eventually(t, "three vectors of model-b", func() bool { return y.Len() == 3 })
	if got := f.srv.Inputs() - embedded; got != 3 {
		t.Errorf("%d texts embedded with the new model, want 3", got)
	}
}

func TestRestartWithAnotherDimensionEmbedsAgain(t *testing.T) {
	f := newFixture(t, embedtest.Options{Dim: 64})
	x := f.open(t, indexOpts{})
	f.facts(t, x, 3)
	embedded := f.close(t, x)
	f.srv.SetDim(32) // the model behind the same name changed
	y := f.open(t, indexOpts{})
	f.write(y, "r3", "fact 3")
	eventually(t, "four vectors of the new dimension", func() bool {
		return y.Len() == 4 && f.srv.Inputs()-embedded >= 4
	})
	if got := hasScore(t, y, "fact 1", "r0", "r1", "r2", "r3"); len(got) != 4 {
		t.Errorf("scores %v, want four", got)
	}
}

func TestCloseIsBoundedWhileTheEmbedderStalls(t *testing.T) {
	f := newFixture(t, embedtest.Options{})
	c, err := embed.NewClient(embed.ClientOptions{URL: f.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	x, err := embed.New(embed.Options{Client: c, Scan: f.recs.scan})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Open(); err != nil {
		t.Fatal(err)
	}
	f.srv.Stall()
	f.write(x, "r1", "a text")
	eventually(t, "the request in flight", func() bool { return f.srv.Calls() == 1 })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := x.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("close: %v, want the deadline", err)
	}
	x.Changed("r2", "after close", true) // neither blocks nor panics
	if err := x.Close(t.Context()); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	c, err := embed.NewClient(embed.ClientOptions{URL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	scan := newRecords().scan
	for name, o := range map[string]embed.Options{
		"no client": {Scan: scan},
		"no scan":   {Client: c},
	} {
		if _, err := embed.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Run is Open, then Close once its context ends: the worker embeds what
// it is told meanwhile, and Run returns nil after a clean stop.
func TestRunEmbedsUntilItsContextEnds(t *testing.T) {
	f := newFixture(t, embedtest.Options{Dim: 16})
	c, err := embed.NewClient(embed.ClientOptions{URL: f.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	x, err := embed.New(embed.Options{Client: c, Scan: f.recs.scan, Store: f.store, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	f.facts(t, x, 2)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if err := x.Run(t.Context()); err == nil {
		t.Fatal("a second Run succeeded")
	}
}
