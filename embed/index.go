package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/memgate/memgate/internal/clip"
)

// Index defaults.
const (
	DefaultQueueSize  = 8192
	DefaultQueryCache = 256
)

// ScanFunc calls fn with the id and text of every active record, until fn
// returns false. The worker calls it at start and after it lost track of
// changes (a full queue), to embed what has no vector and drop the vectors
// of records no longer active.
type ScanFunc func(ctx context.Context, fn func(id, text string) bool) error

// Options configure an Index.
type Options struct {
	Client *Client  // required
	Scan   ScanFunc // required: the active records
	// Store keeps vectors across restarts; nil keeps them in memory only,
	// and every record is embedded again after a restart.
	Store Store
	// QueueSize bounds the changes waiting for the worker (default 8192).
	// Past it a change is not queued; a reconcile catches up later.
	QueueSize int
	// QueryCache is how many recent query vectors are kept (default 256).
	QueryCache int
	// RetryInitial and RetryMax bound the worker's wait after a batch failed
	// with the endpoint unreachable, slow or overloaded (default 1s and 1m).
	// The Client already tried several times by then.
	RetryInitial, RetryMax time.Duration
	// Reconcile, when positive, reconciles against Scan every period: for a
	// store without a commit feed, where nobody calls Changed, or one that
	// other instances write too. 0 reconciles only at start and after an
	// overflow, for a store whose commit feed calls Changed.
	Reconcile time.Duration
	Logger    *slog.Logger
	Metrics   *Metrics // nil: none
}

// change is one record change waiting for the worker.
type change struct {
	id, text string
	active   bool
}

// Index keeps one vector per active record, made asynchronously by a worker
// from the changes it is told about, and scores queries against them.
// Changed never blocks and never fails; Scores never waits for the worker.
type Index struct {
	client  *Client
	scan    ScanFunc
	persist persist
	vecs    *vectors
	queries *lru.Cache[string, []float32]
	log     *slog.Logger
	met     *Metrics

	retryInitial, retryMax time.Duration
	batch                  int
	every                  time.Duration // Options.Reconcile

	queue     chan change
	wake      chan struct{} // a reconcile is wanted
	reconcile atomic.Bool   // set when a change could not be queued (and at start)

	mu      sync.Mutex // guards the lifecycle below
	opened  bool
	stop    chan struct{} // closed by Close: let the request in flight finish, then return
	cancel  context.CancelFunc
	done    chan struct{}
	stopped atomic.Bool
}

// New checks o and returns an Index; Run (or Open and Close) runs it.
func New(o Options) (*Index, error) {
	if o.Client == nil {
		return nil, errors.New("embed: a client is required")
	}
	if o.Scan == nil {
		return nil, errors.New("embed: a scan of the active records is required")
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.QueryCache <= 0 {
		o.QueryCache = DefaultQueryCache
	}
	if o.RetryInitial <= 0 {
		o.RetryInitial = time.Second
	}
	if o.RetryMax < o.RetryInitial {
		o.RetryMax = max(time.Minute, o.RetryInitial)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	queries, err := lru.New[string, []float32](o.QueryCache)
	if err != nil {
		return nil, fmt.Errorf("embed: query cache: %w", err)
	}
	return &Index{client: o.Client, scan: o.Scan, persist: persist{store: o.Store, model: o.Client.Model()},
		vecs: newVectors(), queries: queries, log: o.Logger, met: o.Metrics,
		retryInitial: o.RetryInitial, retryMax: o.RetryMax, batch: o.Client.batch, every: max(o.Reconcile, 0),
		queue: make(chan change, o.QueueSize), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Open starts the worker and returns at once: loading the stored vectors and
// the first reconcile happen in the background, so a slow store or a
// missing embedder never delays the start. Until then Scores knows fewer
// records.
func (x *Index) Open() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.opened {
		return errors.New("embed: already open")
	}
	x.opened = true
	ctx, cancel := context.WithCancel(context.Background())
	x.cancel = cancel
	x.reconcile.Store(true)
	go x.run(ctx)
	return nil
}

// Close stops the worker: a request in flight may finish and its vectors
// are kept, nothing new is sent; changes not embedded yet are left to the
// next start's reconcile. If ctx ends first, the request is abandoned and
// Close returns ctx's error.
func (x *Index) Close(ctx context.Context) error {
	x.mu.Lock()
	if !x.opened || x.stopped.Load() {
		x.mu.Unlock()
		return nil
	}
	x.stopped.Store(true)
	close(x.stop)
	x.mu.Unlock()
	select {
	case <-x.done:
		x.cancel()
		return nil
	case <-ctx.Done():
		x.cancel()
		<-x.done // the requests in flight end with the context
		return fmt.Errorf("embed: close: %w", ctx.Err())
	}
}

// StopGrace is how long Run lets a request in flight finish once its
// context ends, before it abandons the request.
const StopGrace = 5 * time.Second

// Run opens the index and runs the worker until ctx ends, then stops it as
// Close does, giving a request in flight StopGrace to finish. It returns
// nil, or Open's error, or Close's when the grace ran out (the request was
// abandoned; its records are embedded at the next start).
func (x *Index) Run(ctx context.Context) error {
	if err := x.Open(); err != nil {
		return err
	}
	<-ctx.Done()
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace)
	defer cancel()
	return x.Close(c)
}

// Changed tells the index that record id now has text and is, or is no
// longer, active. Call it after the change committed, in commit order. It
// never blocks: when the queue is full the change is not queued, and the
// worker reconciles against a scan of the active records once it has room.
func (x *Index) Changed(id, text string, active bool) {
	if x.stopped.Load() {
		return
	}
	select {
	case x.queue <- change{id: id, text: text, active: active}:
	default:
		x.requestReconcile()
	}
	x.met.setQueueDepth(len(x.queue))
}

// Forget removes the vectors of ids now, in memory and in the Store, and
// returns once the Store deleted them: an erasure must not leave a
// vector of an erased memory until the worker gets to the change. Stored
// vectors this instance never loaded (another instance made them) go too.
// A batch the worker was already embedding may put one back for a moment;
// the erasure's own change removes it again.
func (x *Index) Forget(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	for _, id := range ids {
		x.vecs.remove(id)
	}
	x.met.setVectors(x.vecs.len())
	return x.persist.remove(ctx, ids)
}

// requestReconcile asks the worker for a reconcile before its next batch.
func (x *Index) requestReconcile() {
	x.reconcile.Store(true)
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// Len returns how many records hold a vector.
func (x *Index) Len() int { return x.vecs.len() }

// Scores returns the cosine similarity in [-1, 1] of the query to each
// record id it holds a vector for (ids without one are left out). The query
// is embedded once (one attempt: a read cannot wait for retries) and its
// vector kept in a small LRU cache. An error or a ctx deadline means no
// semantic part.
func (x *Index) Scores(ctx context.Context, query string, ids []string) (map[string]float64, error) {
	q, err := x.queryVector(ctx, query, ids)
	switch {
	case err != nil:
		return nil, err
	case q == nil:
		return map[string]float64{}, nil
	}
	return x.vecs.scores(q, ids)
}

// Similarities is Scores by position: the cosine of the query to ids[i] at
// i, NaN where ids[i] has no vector, nil when none can have one. It spares
// the map Scores builds: at 100,000 ids a quarter of a query's CPU at 384
// dimensions, a tenth at 768 (BenchmarkScores, aligned against parallel).
func (x *Index) Similarities(ctx context.Context, query string, ids []string) ([]float32, error) {
	q, err := x.queryVector(ctx, query, ids)
	if err != nil || q == nil {
		return nil, err
	}
	return x.vecs.similarities(q, ids)
}

// queryVector returns the query's vector, from the cache or the endpoint;
// nil without error when there is nothing to compare it with.
func (x *Index) queryVector(ctx context.Context, query string, ids []string) ([]float32, error) {
	if len(ids) == 0 || strings.TrimSpace(query) == "" || x.vecs.len() == 0 {
		return nil, nil // nothing to compare: no request
	}
	key := clip.Bytes(query, MaxTextBytes)
	q, ok := x.queries.Get(key)
	if !ok || len(q) != x.vecs.dimension() { // cached before the model's dimension changed
		var err error
		if q, err = x.client.embedOnce(ctx, key); err != nil {
			return nil, fmt.Errorf("embed: the query: %w", err)
		}
		x.queries.Add(key, q)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return q, nil
}

// run is the worker: it loads the stored vectors, reconciles, then applies
// changes batch by batch until Close.
func (x *Index) run(ctx context.Context) {
	defer close(x.done)
	if err := x.persist.load(ctx, x.vecs); err != nil {
		x.log.Warn("embed: stored vectors not loaded; they will be embedded again", "err", err)
		x.vecs.reset()
	}
	x.met.setVectors(x.vecs.len())
	var pass *time.Timer      // the next periodic reconcile
	var tick <-chan time.Time // nil without a period: never fires
	if x.every > 0 {
		pass = time.NewTimer(x.every)
		defer pass.Stop()
		tick = pass.C
	}
	retry := x.newBackoff()
	for !x.stopping() {
		if x.reconcile.Swap(false) {
			scanned, err := x.reconcileAll(ctx)
			if pass != nil {
				pass.Reset(nextPass(x.every, scanned))
			}
			if err != nil {
				x.reconcile.Store(true)
				if x.stopping() {
					return
				}
				x.log.Warn("embed: reconcile failed; trying again", "err", err)
				x.sleep(retry.NextBackOff())
				continue
			}
			retry.Reset()
		}
		batch := x.take(tick)
		if len(batch) == 0 {
			continue
		}
		x.apply(ctx, batch, nil)
	}
}

// passShare bounds the worker's time spent scanning on a feedless store:
// the wait between two passes is at least passShare times the last scan.
const passShare = 10

// nextPass is the wait before the next periodic reconcile: the period, or
// longer where a scan of the active records takes more than a tenth of it
// (a large store), so that the passes of every instance do not keep the
// database busy.
func nextPass(period, scanned time.Duration) time.Duration {
	return max(period, passShare*scanned)
}

func (x *Index) stopping() bool {
	select {
	case <-x.stop:
		return true
	default:
		return false
	}
}

func (x *Index) newBackoff() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: x.retryInitial, RandomizationFactor: 0.2,
		Multiplier: 2, MaxInterval: x.retryMax}
	b.Reset()
	return b
}

// sleep waits d, or until Close.
func (x *Index) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-x.stop:
	}
}

// take waits for a change (or a reconcile request, the reconcile period's
// tick, or Close) and returns up to one batch of queued changes.
func (x *Index) take(tick <-chan time.Time) []change {
	var batch []change
	select {
	case c := <-x.queue:
		batch = append(batch, c)
	case <-x.wake:
		return nil
	case <-tick:
		x.reconcile.Store(true)
		return nil
	case <-x.stop:
		return nil
	}
	batch = x.drain(batch, x.batch)
	x.met.setQueueDepth(len(x.queue))
	return batch
}

// drain appends queued changes to batch without waiting, up to n in all.
func (x *Index) drain(batch []change, n int) []change {
	for len(batch) < n {
		select {
		case c := <-x.queue:
			batch = append(batch, c)
		default:
			return batch
		}
	}
	return batch
}

// apply removes the vectors of inactive records and embeds the active ones
// whose text has no vector yet. The last change of an id wins. touched, if
// not nil, collects the ids applied (a reconcile in progress skips them:
// their change is newer than its scan).
func (x *Index) apply(ctx context.Context, batch []change, touched map[string]bool) {
	last := make(map[string]int, len(batch))
	for i, c := range batch {
		last[c.id] = i
	}
	var gone []string
	var todo []change
	for i, c := range batch {
		if last[c.id] != i {
			continue
		}
		if touched != nil {
			touched[c.id] = true
		}
		switch {
		case !c.active || strings.TrimSpace(c.text) == "": // nothing to embed: no vector
			if x.vecs.remove(c.id) {
				gone = append(gone, c.id)
			}
		case !x.vecs.has(c.id, textSum(c.text)):
			todo = append(todo, c)
		}
	}
	if err := x.persist.remove(ctx, gone); err != nil {
		x.log.Warn("embed: stored vectors not deleted; a restart drops them", "err", err)
	}
	x.embedMissing(ctx, todo)
	x.met.setVectors(x.vecs.len())
}

// embedMissing takes the vectors of todo that the Store already holds for
// the same text (another instance sharing it made them, or this one before
// a reconcile dropped them) and embeds the rest.
func (x *Index) embedMissing(ctx context.Context, todo []change) {
	if len(todo) == 0 {
		return
	}
	rest, err := x.persist.adopt(ctx, x.vecs, todo) // rest is what is left to embed, also on an error
	if err != nil {
		x.log.Warn("embed: stored vectors not read; embedding the records", "records", len(rest), "err", err)
	}
	x.embed(ctx, rest)
}

// embed embeds the changes' texts and stores the vectors. While the
// endpoint is unreachable, slow or overloaded it waits and tries again
// until Close; the queue holds meanwhile (and overflows into a reconcile).
// A batch the endpoint refuses is tried text by text, and a text refused on
// its own is left without a vector (logged).
func (x *Index) embed(ctx context.Context, todo []change) {
	if len(todo) == 0 {
		return
	}
	texts := make([]string, len(todo))
	for i, c := range todo {
		texts[i] = c.text
	}
	retry := x.newBackoff()
	for {
		if x.stopping() { // closing after a wait: a new attempt would hold Close up
			return
		}
		vs, err := x.client.Embed(ctx, texts)
		switch {
		case err == nil:
			x.store(ctx, todo, vs)
			return
		case x.stopping() || ctx.Err() != nil:
			x.requestReconcile() // not applied; the next start reconciles anyway
			return
		case retryable(err):
			wait := retry.NextBackOff()
			x.log.Warn("embed: endpoint unavailable; the batch waits", "records", len(todo), "wait", wait, "err", err)
			x.sleep(wait)
			continue
		case errors.Is(err, ErrDimension):
			x.log.Error("embed: the endpoint changed the vector dimension; restart memgate to embed again with the new model",
				"records", len(todo), "err", err)
			return
		case len(todo) > 1:
			for _, c := range todo {
				x.embed(ctx, []change{c})
			}
			return
		default:
			x.log.Warn("embed: a record's text was refused; it has no vector", "id", todo[0].id, "err", err)
			return
		}
	}
}

// store puts the vectors in memory and in the Store. A vector of another
// dimension than the ones held means the model behind the name changed
// since they were made: they are all dropped and the records reconciled.
func (x *Index) store(ctx context.Context, todo []change, vs [][]float32) {
	ids := make([]string, len(todo))
	sums := make([]uint64, len(todo))
	for i, c := range todo {
		ids[i], sums[i] = c.id, textSum(c.text)
		err := x.vecs.put(c.id, sums[i], vs[i])
		var wrong *errWrongDimension
		if errors.As(err, &wrong) {
			x.log.Warn("embed: the model answers another dimension than the stored vectors; dropping them",
				"model", x.client.Model(), "was", wrong.have, "now", wrong.got)
			x.vecs.reset()
			x.queries.Purge()
			if err := x.persist.clear(ctx); err != nil {
				x.log.Warn("embed: stored vectors not deleted", "err", err)
			}
			x.requestReconcile()
			err = x.vecs.put(c.id, sums[i], vs[i])
		}
		if err != nil {
			x.log.Warn("embed: vector not kept", "id", c.id, "err", err)
		}
	}
	if err := x.persist.put(ctx, ids, sums, vs); err != nil {
		x.log.Warn("embed: vectors not stored; a restart embeds them again", "err", err)
	}
}

// reconcileAll makes the vectors match the active records: it drops the
// vectors of records not active and embeds the active records that lack
// one (or whose text changed). Changes queued before the scan are dropped:
// the scan is newer. Changes queued during it are applied between batches,
// and the reconcile then leaves their ids alone.
//
// It returns how long the scan took, which sets the wait before the next
// periodic pass.
func (x *Index) reconcileAll(ctx context.Context) (time.Duration, error) {
	x.met.reconciled()
	x.drain(nil, cap(x.queue))
	x.met.setQueueDepth(len(x.queue))
	active := map[string]bool{}
	var todo []change
	began := time.Now()
	err := x.scan(ctx, func(id, text string) bool {
		if strings.TrimSpace(text) == "" {
			return !x.stopping() // no vector; dropped below if it had one
		}
		active[id] = true
		if !x.vecs.has(id, textSum(text)) {
			todo = append(todo, change{id: id, text: text, active: true})
		}
		return !x.stopping()
	})
	scanned := time.Since(began)
	if err != nil {
		return scanned, fmt.Errorf("embed: scan the active records: %w", err)
	}
	var gone []string
	for _, id := range x.vecs.idList() {
		if !active[id] && x.vecs.remove(id) {
			gone = append(gone, id)
		}
	}
	if err := x.persist.remove(ctx, gone); err != nil {
		x.log.Warn("embed: stored vectors not deleted; a restart drops them", "err", err)
	}
	x.met.setVectors(x.vecs.len())
	if len(todo) > 0 || len(gone) > 0 {
		level := slog.LevelInfo
		if x.every > 0 { // routine on a feedless store: every period finds the records written meanwhile
			level = slog.LevelDebug
		}
		x.log.Log(ctx, level, "embed: reconciling", "to_embed", len(todo), "dropped", len(gone))
	}
	touched := map[string]bool{}
	for len(todo) > 0 && !x.stopping() {
		n := min(len(todo), x.batch)
		var chunk []change
		for _, c := range todo[:n] {
			if !touched[c.id] {
				chunk = append(chunk, c)
			}
		}
		todo = todo[n:]
		x.embedMissing(ctx, chunk)
		x.met.setVectors(x.vecs.len())
		if queued := x.drain(nil, x.batch); len(queued) > 0 {
			x.apply(ctx, queued, touched)
			x.met.setQueueDepth(len(x.queue))
		}
	}
	return scanned, nil
}
