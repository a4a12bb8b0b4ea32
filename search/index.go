package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Index keeps parts of the index of active records in memory and reads the
// active layer through them (doc.go says how it stays consistent with the
// store). It is the store's ActiveFeed. Search and List are safe for
// concurrent use.
type Index struct {
	feed     FeedStore // nil: the store has no commit feed, every read scans
	src      Source
	budget   int64 // 0: no parts are kept
	semantic Semantic
	semWait  time.Duration
	log      *slog.Logger
	unfollow func()      // stops the store's Follow
	closed   atomic.Bool // after Close: no part is kept, every read scans

	mu       sync.RWMutex
	parts    map[string]*part
	bytes    int64                // estimated size of the ready parts
	inflight map[uint64]int       // versions of commits between Begin and End
	recent   map[string]uint64    // a/ key (subject\0id) → version of its last applied change
	tooBig   map[string]time.Time // parts found over budget, not retried before then

	tick atomic.Int64 // LRU clock

	examined atomic.Int64 // records (entries) reads have tested, for Examined
}

// Examined returns how many records the index's reads have tested against
// their filters since it was made: what a read costs, and what a read
// stopped early (its client left, or its work budget ran out) did not.
func (x *Index) Examined() int64 { return x.examined.Load() }

// Options configure an Index.
type Options struct {
	// Budget bounds the estimated bytes of the parts kept in memory: 0
	// means 16 MB, negative keeps none (every read scans the store's
	// index).
	Budget int64
	// Semantic, if set, adds similarity of meaning to the ranking
	// (semantic.go).
	Semantic Semantic
	// SemanticTimeout bounds a search's call to Semantic (0: 2 s, or the
	// request's deadline if sooner).
	SemanticTimeout time.Duration
	Logger          *slog.Logger
}

// defaultBudget holds about 15,000 short memories (entrySize): a
// 10,000-record subject or user.
const defaultBudget = 16 << 20

// tooBigRetry is how long a part found over budget is not loaded again.
const tooBigRetry = time.Minute

// maxParts bounds how many parts are kept, empty ones included: the ids
// come from clients (a Mem0 user_id), and each part costs its key and
// bookkeeping besides its entries (partOverhead).
const maxParts = 4096

func partOverhead(key string) int64 { return 320 + int64(len(key)) }

// FeedStore is a store with a commit feed and snapshots aligned with it
// (storeapi.Feed; the Badger store, store/feed.go): the index keeps parts
// of it in memory.
type FeedStore interface {
	Source
	storeapi.Feed
}

// Source is a store the index reads through memory.Store's View. Without
// a commit feed (FeedStore), its read transactions must also be
// storeapi.ActiveScanners; the index then keeps nothing and every read
// scans.
type Source interface {
	View(ctx context.Context, fn func(memory.ReadTx) error) error
}

// Open returns an index of src's active records: New's, following the
// commits of a store with a feed, or, for a store without one whose read
// transactions are ActiveScanners, an index that keeps nothing in memory
// and answers each read with one scan in one View. Anything else is an
// error; Open finds out with one View.
func Open(ctx context.Context, src Source, o Options) (*Index, error) {
	if src == nil {
		return nil, errors.New("search: no store to read")
	}
	if fs, ok := src.(FeedStore); ok {
		return New(fs, o), nil
	}
	err := src.View(ctx, func(tx memory.ReadTx) error {
		if _, ok := tx.(storeapi.Snapshot); !ok {
			return fmt.Errorf("search: the store (%T) has no commit feed, and its read transactions (%T) cannot scan "+
				"the index of active records (ScanActiveIndex): it cannot be searched", src, tx)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search: open: %w", err)
	}
	x := newIndex(nil, src, o)
	x.budget = 0 // no feed: a part could not follow the commits
	return x, nil
}

// New returns an index of st's active records and makes it follow st's
// commits (storeapi.Feed.Follow) unless it keeps no parts. Close stops that.
func New(st FeedStore, o Options) *Index {
	x := newIndex(st, st, o)
	if x.budget > 0 {
		x.unfollow = st.Follow(x)
	}
	return x
}

func newIndex(feed FeedStore, src Source, o Options) *Index {
	if o.Budget == 0 {
		o.Budget = defaultBudget
	}
	if o.SemanticTimeout <= 0 {
		o.SemanticTimeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Index{feed: feed, src: src, budget: max(o.Budget, 0), semantic: o.Semantic, semWait: o.SemanticTimeout,
		log: o.Logger, unfollow: func() {}, parts: map[string]*part{}, inflight: map[uint64]int{},
		recent: map[string]uint64{}, tooBig: map[string]time.Time{}}
}

// Close stops following the store's commits and drops every part; reads
// then scan the store's index.
func (x *Index) Close() {
	x.closed.Store(true)
	x.unfollow()
	x.mu.Lock()
	defer x.mu.Unlock()
	clear(x.parts)
	x.bytes = 0
}

var _ storeapi.ActiveFeed = (*Index)(nil)

// pendingChange is a change that arrived while its part was loading.
type pendingChange struct {
	version uint64
	ch      storeapi.ActiveChange
}

// changeKey is the a/ key of a change's entry.
func changeKey(ch *storeapi.ActiveChange) string { return ch.SubjectID + "\x00" + ch.ID }

// Part keys: the subject, or one entity id of the scope.
func partKey(subject string, scope memory.Scope) string {
	switch {
	case subject != "":
		return "s\x00" + subject
	case scope.UserID != "":
		return "u\x00" + scope.UserID
	case scope.AgentID != "":
		return "g\x00" + scope.AgentID
	case scope.AppID != "":
		return "p\x00" + scope.AppID
	case scope.RunID != "":
		return "r\x00" + scope.RunID
	}
	return ""
}

// partSelection is what a part key selects: a subject, or one entity id.
func partSelection(pk string) (subject string, scope memory.Scope) {
	kind, id, _ := strings.Cut(pk, "\x00")
	switch kind {
	case "s":
		subject = id
	case "u":
		scope.UserID = id
	case "g":
		scope.AgentID = id
	case "p":
		scope.AppID = id
	case "r":
		scope.RunID = id
	}
	return subject, scope
}

// partKeys returns the keys of every part an entry belongs to.
func partKeys(subject string, scope memory.Scope) []string {
	out := make([]string, 0, 5)
	out = append(out, "s\x00"+subject)
	for _, p := range [...]struct{ kind, id string }{{"u", scope.UserID}, {"g", scope.AgentID}, {"p", scope.AppID}, {"r", scope.RunID}} {
		if p.id != "" {
			out = append(out, p.kind+"\x00"+p.id)
		}
	}
	return out
}

// Begin implements storeapi.ActiveFeed.
func (x *Index) Begin(version uint64) {
	x.mu.Lock()
	x.inflight[version]++
	x.mu.Unlock()
}

// End implements storeapi.ActiveFeed: a committed change applies; after a
// failure (Badger may hold some of the writes) the parts it may touch go,
// and load again from the store when next read.
func (x *Index) End(version uint64, changes []storeapi.ActiveChange, outcome storeapi.CommitOutcome) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := x.inflight[version] - 1; n > 0 {
		x.inflight[version] = n
	} else {
		delete(x.inflight, version)
	}
	switch outcome {
	case storeapi.Committed:
		for i := range changes {
			x.apply(version, &changes[i])
		}
	case storeapi.Failed:
		for i := range changes {
			for _, pk := range partKeys(changes[i].SubjectID, changes[i].Scope) {
				if p := x.parts[pk]; p != nil && !p.loading {
					delete(x.parts, pk)
					x.bytes -= p.bytes
				}
			}
		}
	}
	x.forget()
	x.evict(nil)
}

// apply applies one committed change unless a later one of its key came
// first (invariant 2 of doc.go).
func (x *Index) apply(version uint64, ch *storeapi.ActiveChange) {
	k := changeKey(ch)
	if v, ok := x.recent[k]; ok && version < v {
		return
	}
	x.recent[k] = version
	for _, pk := range partKeys(ch.SubjectID, ch.Scope) {
		p := x.parts[pk]
		switch {
		case p == nil:
		case p.loading:
			p.buf = append(p.buf, pendingChange{version, *ch})
		default:
			x.bytes += p.apply(version, ch)
		}
	}
}

// forget drops the versions of recent changes no commit in flight can be
// older than.
func (x *Index) forget() {
	if len(x.inflight) == 0 {
		clear(x.recent)
		return
	}
	if len(x.recent) < 1024 {
		return
	}
	oldest := uint64(1<<64 - 1)
	for v := range x.inflight {
		oldest = min(oldest, v)
	}
	for k, v := range x.recent {
		if v <= oldest {
			delete(x.recent, k)
		}
	}
}

// evict drops the least recently used ready parts (keep aside) until the
// ready parts fit the budget.
func (x *Index) evict(keep *part) {
	for x.bytes > x.budget || len(x.parts) > maxParts {
		var lru *part
		for _, p := range x.parts {
			if p != keep && !p.loading && (lru == nil || p.used.Load() < lru.used.Load()) {
				lru = p
			}
		}
		if lru == nil {
			return
		}
		delete(x.parts, lru.key)
		x.bytes -= lru.bytes
	}
}

// load makes the part of key pk ready, loading it from the store if
// needed; ok is false when it is over budget or the index keeps none.
func (x *Index) load(ctx context.Context, pk string) (ok bool, err error) {
	if pk == "" || x.budget == 0 || x.closed.Load() {
		return false, nil
	}
	for {
		x.mu.RLock()
		p := x.parts[pk]
		ready := p != nil && !p.loading
		x.mu.RUnlock()
		if ready {
			return true, nil
		}
		x.mu.Lock()
		if until, ok := x.tooBig[pk]; ok {
			if time.Now().Before(until) {
				x.mu.Unlock()
				return false, nil
			}
			delete(x.tooBig, pk)
		}
		p = x.parts[pk]
		if p == nil {
			// Registered before the load's snapshot is opened: a commit
			// that ends from now on is buffered, one before is in it.
			p = &part{key: pk, loading: true, done: make(chan struct{})}
			x.parts[pk] = p
			x.mu.Unlock()
			return x.fill(ctx, p)
		}
		loading, done := p.loading, p.done
		x.mu.Unlock()
		if loading { // another reader loads it: wait, then look again
			select {
			case <-done:
			case <-ctx.Done():
				return false, fmt.Errorf("search: wait for a part: %w", ctx.Err())
			}
		}
	}
}

// fill reads a registered part from the store, applies what was buffered
// meanwhile and makes it ready. On failure or over budget it unregisters
// it again.
func (x *Index) fill(ctx context.Context, p *part) (ok bool, err error) {
	var es []*entry
	var vers []uint64
	var size int64
	over := false
	defer func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		defer close(p.done)
		if err != nil || over {
			delete(x.parts, p.key)
			if over {
				x.tooBig[p.key] = time.Now().Add(tooBigRetry)
			}
			ok = false
			return
		}
		p.set(es, vers)
		p.bytes = size + partOverhead(p.key)
		for _, b := range p.buf {
			p.apply(b.version, &b.ch) // counts its size in p.bytes
		}
		p.buf, p.loading = nil, false
		p.used.Store(x.tick.Add(1))
		x.bytes += p.bytes
		x.evict(p)
		ok = true
		if x.bytes > x.budget { // still over: this part alone is
			delete(x.parts, p.key)
			x.bytes -= p.bytes
			x.tooBig[p.key] = time.Now().Add(tooBigRetry)
			ok = false
		}
	}()
	subject, scope := partSelection(p.key)
	err = x.feed.ViewSnapshot(ctx, func(sn storeapi.Snapshot) error {
		return sn.ScanActiveIndex(ctx, subject, scope, func(e storeapi.ActiveEntry, ver uint64) bool {
			ne := newEntry(e, true)
			es = append(es, ne)
			vers = append(vers, ver)
			size += entrySize(ne)
			over = size > x.budget
			return !over
		})
	})
	if err != nil {
		err = fmt.Errorf("search: load part: %w", err)
	}
	return ok, err
}

// ready returns a view of the ready part of key pk, if there is one.
func (x *Index) ready(pk string) (partView, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.parts[pk]
	if p == nil || p.loading {
		return partView{}, false
	}
	p.used.Store(x.tick.Add(1))
	return p.view(), true
}

// read runs fn on a snapshot of the store and, when the index keeps the
// part of key pk, that part as the snapshot holds it (invariant 1 of
// doc.go); pv is nil otherwise, and fn reads the snapshot's index.
func (x *Index) read(ctx context.Context, pk string, fn func(sn storeapi.Snapshot, pv *partView) error) error {
	ok, err := x.load(ctx, pk) // outside the gate: loading may take a while
	if err != nil {
		return err
	}
	if !ok {
		return x.view(ctx, func(sn storeapi.Snapshot) error { return fn(sn, nil) })
	}
	var pv partView
	return x.feed.ViewAligned(ctx, func() { pv, ok = x.ready(pk) }, func(sn storeapi.Snapshot) error {
		if !ok { // evicted meanwhile: read the snapshot's index
			return fn(sn, nil)
		}
		return fn(sn, &pv)
	})
}

// view runs fn on a snapshot of the store: the feed's, or a read
// transaction of a store without one, which must scan its index.
func (x *Index) view(ctx context.Context, fn func(sn storeapi.Snapshot) error) error {
	if x.feed != nil {
		return x.feed.ViewSnapshot(ctx, fn)
	}
	return x.src.View(ctx, func(tx memory.ReadTx) error {
		sn, ok := tx.(storeapi.Snapshot)
		if !ok { // Open checked one; a store that mixes kinds is a bug
			return fmt.Errorf("search: the store's read transaction (%T) cannot scan the index of active records", tx)
		}
		return fn(sn)
	})
}
