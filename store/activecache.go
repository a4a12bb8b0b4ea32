package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
)

// activeCache keeps parts of the index of active records (a/) in memory:
// the entries of one subject, or of one entity id of a scope (a Mem0 user,
// agent, app or run, whose records may lie under any subject). Scanning
// 10,000 entries in Badger takes ~4 ms; testing them in memory a tenth of
// that (DESIGN §7: search of a 10,000-record subject ≤ 1 ms).
//
// A part is loaded by one Badger scan on its first query, then kept up to
// date by the changes each commit made to the a/ keys (tx.activeChanged),
// applied once the commit returns and before Update does: a reader sees
// every acknowledged write. Nothing is persisted: after a restart parts are
// loaded again from Badger. Parts are evicted, least recently used first,
// to keep their estimated size within a byte budget; a part larger than
// the whole budget is not kept, and its readers scan Badger as before.
//
// Commits return in any order, so a change may arrive after a later change
// of the same key. Every transaction that changes a record's a/ key has
// read the record (r/<id>: PutRecord reads it, ReplaceRecord's caller did),
// so Badger's conflict detection (on by default) orders any two of them:
// the later one read at or after the earlier one's commit timestamp, so
// strictly after the earlier one's read timestamp. Each key thus keeps a
// version: r+1 for a change by a transaction that read at r, the commit
// timestamp for an entry loaded from Badger; a change by a transaction
// that read at r applies when r+1 ≥ the key's version. A removed key keeps
// its version in recent until no commit that read before it is in flight.
//
// A reader's part and its snapshot hold the same commits: the view moves to
// a snapshot opened with the part under the gate (tx.CachedActive), which
// no commit with changes crosses. Readers still load each record they
// return from that snapshot and check it is active there. Parts are also
// bounded in number (maxParts) and each counts an overhead, so ids with no
// records, which clients choose, cannot grow the cache.
type activeCache struct {
	db     *badger.DB
	budget int64

	// gate makes a reader's snapshot match the cache: a commit with
	// changes holds it shared from before Badger's commit until its
	// changes are applied, and a reader takes it alone to open its
	// snapshot and read the part (see tx.CachedActive). A commit is then
	// in both or in neither.
	gate sync.RWMutex

	mu       sync.RWMutex
	parts    map[string]*activePart
	bytes    int64                // estimated size of the ready parts
	inflight map[uint64]int       // read timestamps of commits between begin and end
	recent   map[string]uint64    // a/ key (subject\0id) → version of its last applied change
	tooBig   map[string]time.Time // parts found over budget, not retried before then

	tick atomic.Int64 // LRU clock
}

// activeCacheBytes is the default budget: about 15,000 short memories
// (entrySize), a 10,000-record subject or user.
const activeCacheBytes = 16 << 20

// tooBigRetry is how long a part found over budget is not loaded again.
const tooBigRetry = time.Minute

// maxParts bounds how many parts are kept, empty ones included: the ids
// come from clients (a Mem0 user_id), and each part costs its key and
// bookkeeping besides its entries (partOverhead).
const maxParts = 4096

func partOverhead(key string) int64 { return 320 + int64(len(key)) }

func newActiveCache(db *badger.DB, budget int64) *activeCache {
	return &activeCache{db: db, budget: budget, parts: map[string]*activePart{},
		inflight: map[uint64]int{}, recent: map[string]uint64{}, tooBig: map[string]time.Time{}}
}

type pendingChange struct {
	readTs uint64
	ch     activeChange
}

// activeChange is one change a transaction made to the a/ index: the
// record's entry set (active) or removed, with the fields it is kept by.
type activeChange struct {
	subject, id string
	active      bool
	layer       memory.Layer
	scope       memory.Scope
	summary     string
	created     time.Time
	activated   time.Time
}

func (ch *activeChange) key() string { return ch.subject + sep + ch.id }

// entry builds the entry a change sets.
func (ch *activeChange) entry() *memory.ActiveEntry {
	e := newEntry(ch.id, ch.subject, ch.layer, ch.scope, ch.summary)
	e.CreatedAt, e.ActivatedAt = ch.created, ch.activated
	return e
}

// Part keys: the subject, or one entity id of the scope.
func partKey(subject string, scope memory.Scope) string {
	switch {
	case subject != "":
		return "s" + sep + subject
	case scope.UserID != "":
		return "u" + sep + scope.UserID
	case scope.AgentID != "":
		return "g" + sep + scope.AgentID
	case scope.AppID != "":
		return "p" + sep + scope.AppID
	case scope.RunID != "":
		return "r" + sep + scope.RunID
	}
	return ""
}

// partKeys returns the keys of every part an entry belongs to.
func partKeys(subject string, scope memory.Scope) []string {
	out := make([]string, 0, 5)
	out = append(out, "s"+sep+subject)
	for _, p := range [...]struct{ kind, id string }{{"u", scope.UserID}, {"g", scope.AgentID}, {"p", scope.AppID}, {"r", scope.RunID}} {
		if p.id != "" {
			out = append(out, p.kind+sep+p.id)
		}
	}
	return out
}

// belongs reports whether an entry belongs to the part of key pk.
func belongs(pk string, subject string, scope memory.Scope) bool {
	kind, id, _ := strings.Cut(pk, sep)
	switch kind {
	case "s":
		return subject == id
	case "u":
		return scope.UserID == id
	case "g":
		return scope.AgentID == id
	case "p":
		return scope.AppID == id
	case "r":
		return scope.RunID == id
	}
	return false
}

// cachedEntry holds an entry and its memo in one allocation.
type cachedEntry struct {
	e    memory.ActiveEntry
	memo memory.Memo
}

func newEntry(id, subject string, layer memory.Layer, scope memory.Scope, summary string) *memory.ActiveEntry {
	c := &cachedEntry{e: memory.ActiveEntry{ID: id, SubjectID: subject, Layer: layer, Scope: scope,
		Summary: summary, Lower: strings.ToLower(summary)}}
	c.e.Memo = &c.memo
	return &c.e
}

// entrySize estimates what an entry costs, readers' memos included. With
// 41-byte summaries, 10,000 entries measured ~500 bytes each in the heap
// once List had joined their text, ~1,100 once the Mem0 search had also
// counted their terms; this counts them as the latter.
func entrySize(e *memory.ActiveEntry) int64 {
	return int64(896 + len(e.ID) + len(e.SubjectID) + len(e.Layer) + len(e.Scope.UserID) + len(e.Scope.AgentID) +
		len(e.Scope.AppID) + len(e.Scope.RunID) + 4*len(e.Summary))
}

// begin is called before a transaction with changes commits, end once its
// commit returned.
func (c *activeCache) begin(readTs uint64) {
	c.mu.Lock()
	c.inflight[readTs]++
	c.mu.Unlock()
}

// end takes the outcome of a commit: committed, or failed (an error other
// than a conflict, after which Badger may hold some of its writes).
func (c *activeCache) end(readTs uint64, changes []activeChange, committed, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.inflight[readTs] - 1; n > 0 {
		c.inflight[readTs] = n
	} else {
		delete(c.inflight, readTs)
	}
	switch {
	case committed:
		for i := range changes {
			c.apply(readTs, &changes[i])
		}
	case failed:
		// What Badger kept is unknown: the parts it may touch go, and are
		// loaded again from Badger when next read.
		for i := range changes {
			for _, pk := range partKeys(changes[i].subject, changes[i].scope) {
				if p := c.parts[pk]; p != nil && !p.loading {
					delete(c.parts, pk)
					c.bytes -= p.bytes
				}
			}
		}
	}
	c.forget()
	c.evict(nil)
}

// apply applies one committed change unless a later one of its key came
// first.
func (c *activeCache) apply(readTs uint64, ch *activeChange) {
	k := ch.key()
	if v, ok := c.recent[k]; ok && readTs+1 < v {
		return
	}
	c.recent[k] = readTs + 1
	for _, pk := range partKeys(ch.subject, ch.scope) {
		p := c.parts[pk]
		switch {
		case p == nil:
		case p.loading:
			p.buf = append(p.buf, pendingChange{readTs, *ch})
		default:
			c.bytes += p.apply(readTs+1, ch)
		}
	}
}

// forget drops the versions of recent changes no commit in flight can be
// older than: one that read before a change's transaction did.
func (c *activeCache) forget() {
	if len(c.inflight) == 0 {
		clear(c.recent)
		return
	}
	if len(c.recent) < 1024 {
		return
	}
	oldest := uint64(1<<64 - 1)
	for ts := range c.inflight {
		oldest = min(oldest, ts)
	}
	for k, v := range c.recent {
		if v-1 <= oldest {
			delete(c.recent, k)
		}
	}
}

// evict drops the least recently used ready parts (keep aside) until the
// ready parts fit the budget.
func (c *activeCache) evict(keep *activePart) {
	for c.bytes > c.budget || len(c.parts) > maxParts {
		var lru *activePart
		for _, p := range c.parts {
			if p != keep && !p.loading && (lru == nil || p.used.Load() < lru.used.Load()) {
				lru = p
			}
		}
		if lru == nil {
			return
		}
		delete(c.parts, lru.key)
		c.bytes -= lru.bytes
	}
}

// part returns the cached part for a query, loading it first if needed;
// ok is false when there is no part for the query or it is over budget.
func (c *activeCache) part(ctx context.Context, subject string, scope memory.Scope) (memory.ActivePart, bool, error) {
	pk := partKey(subject, scope)
	if pk == "" {
		return memory.ActivePart{}, false, nil
	}
	for {
		c.mu.RLock()
		p := c.parts[pk]
		if p != nil && !p.loading {
			p.used.Store(c.tick.Add(1))
			out := p.snapshot()
			c.mu.RUnlock()
			return out, true, nil
		}
		c.mu.RUnlock()

		c.mu.Lock()
		if until, ok := c.tooBig[pk]; ok {
			if time.Now().Before(until) {
				c.mu.Unlock()
				return memory.ActivePart{}, false, nil
			}
			delete(c.tooBig, pk)
		}
		p = c.parts[pk]
		if p == nil {
			// Registered before the load's snapshot is taken: a commit
			// that returns from now on is buffered, one before is in it.
			p = &activePart{key: pk, loading: true, done: make(chan struct{})}
			c.parts[pk] = p
			c.mu.Unlock()
			return c.load(ctx, p)
		}
		loading, done := p.loading, p.done
		c.mu.Unlock()
		if loading { // another reader loads it: wait, then look again
			select {
			case <-done:
			case <-ctx.Done():
				return memory.ActivePart{}, false, fmt.Errorf("store: active cache: %w", ctx.Err())
			}
		}
	}
}

// load reads a registered part from Badger, applies what was buffered
// meanwhile and makes it ready. On failure or over budget it unregisters
// it again.
func (c *activeCache) load(ctx context.Context, p *activePart) (out memory.ActivePart, ok bool, err error) {
	var es []*memory.ActiveEntry
	var vers []uint64
	var size int64
	over := false
	defer func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		defer close(p.done)
		if err != nil || over {
			delete(c.parts, p.key)
			if over {
				c.tooBig[p.key] = time.Now().Add(tooBigRetry)
			}
			out, ok = memory.ActivePart{}, false
			return
		}
		p.set(es, vers)
		p.bytes = size + partOverhead(p.key)
		for _, b := range p.buf {
			p.apply(b.readTs+1, &b.ch) // counts its size in p.bytes
		}
		p.buf, p.loading = nil, false
		p.used.Store(c.tick.Add(1))
		c.bytes += p.bytes
		c.evict(p)
		out, ok = p.snapshot(), true
		if c.bytes > c.budget { // still over: this part alone is
			delete(c.parts, p.key)
			c.bytes -= p.bytes
			c.tooBig[p.key] = time.Now().Add(tooBigRetry)
		}
	}()
	txn := c.db.NewTransaction(false)
	defer txn.Discard()
	err = scanActiveIndex(ctx, txn, p.key, func(e *memory.ActiveEntry, ver uint64) bool {
		es = append(es, e)
		vers = append(vers, ver)
		size += entrySize(e)
		over = size > c.budget
		return !over
	})
	if err != nil {
		err = fmt.Errorf("store: load active cache: %w", err)
	}
	return out, ok, err
}

// scanActiveIndex calls fn with a new entry, and the version of its key,
// for each entry of the index of active records in the part of key pk, in
// key order, until fn returns false. Entries the index holds no fields for
// are filled from their records.
func scanActiveIndex(ctx context.Context, txn *badger.Txn, pk string, fn func(*memory.ActiveEntry, uint64) bool) error {
	kind, id, _ := strings.Cut(pk, sep)
	prefix := []byte("a/")
	if kind == "s" {
		prefix = append(key("a/", id), 0)
	}
	field := strings.Index("-ugpr", kind) // the scope field of the entity, in activeValue's order
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	intern := map[string]string{}
	in := func(b []byte) string {
		if s, ok := intern[string(b)]; ok {
			return s
		}
		s := string(b)
		intern[s] = s
		return s
	}
	n := 0
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		item := it.Item()
		k := item.Key()[2:] // <subject>\0<record>
		at := bytes.LastIndexByte(k, 0)
		if at < 0 {
			return fmt.Errorf("malformed active index key %q", item.Key())
		}
		var e memory.ActiveEntry
		var ok, skip bool
		err := item.Value(func(v []byte) error {
			if f, known := activeValueField(v, field); field > 0 && known && string(f) != id {
				skip = true // another entity's: not worth parsing
				return nil
			}
			ok = parseActiveValue(v, &e)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read active index %q: %w", item.Key(), err)
		} else if skip {
			continue
		}
		subject, rid := in(k[:at]), string(k[at+1:])
		if !ok {
			r, err := getRecord(txn, rid)
			if err != nil {
				return err
			}
			e = memory.ActiveEntry{Layer: r.Layer, Scope: r.Scope, Summary: r.Summary, CreatedAt: r.CreatedAt, ActivatedAt: r.ActivatedAt}
		}
		if kind != "s" && !belongs(pk, subject, e.Scope) {
			continue
		}
		scope := memory.Scope{UserID: in([]byte(e.Scope.UserID)), AgentID: in([]byte(e.Scope.AgentID)),
			AppID: in([]byte(e.Scope.AppID)), RunID: in([]byte(e.Scope.RunID))}
		ne := newEntry(rid, subject, memory.Layer(in([]byte(e.Layer))), scope, e.Summary)
		ne.CreatedAt, ne.ActivatedAt = e.CreatedAt, e.ActivatedAt
		if !fn(ne, item.Version()) {
			return nil
		}
	}
	return nil
}

// activeValueField returns field i (0 layer, 1–4 the scope's user, agent,
// app and run ids) of an index value, if it holds fields.
func activeValueField(v []byte, i int) ([]byte, bool) {
	v, _, _, ok := activeValueFields(v)
	if i < 0 || !ok {
		return nil, false
	}
	for ; ; i-- {
		end := bytes.IndexByte(v, 0)
		if end < 0 {
			return nil, false
		}
		if i == 0 {
			return v[:end], true
		}
		v = v[end+1:]
	}
}

func getRecord(txn *badger.Txn, id string) (*memory.Record, error) {
	item, err := txn.Get(key("r/", id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, memory.Errorf(memory.ENOTFOUND, "memory %s not found", id)
	} else if err != nil {
		return nil, fmt.Errorf("get memory %s: %w", id, err)
	}
	var r memory.Record
	if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &r) }); err != nil {
		return nil, fmt.Errorf("decode memory %s: %w", id, err)
	}
	return &r, nil
}

// activeChanged notes a change of the record's entry in the index of
// active records, for the cache once the transaction commits. The caller
// has read the record in this transaction (see activeCache).
func (t *tx) activeChanged(r *memory.Record, active bool) {
	if t.cache == nil {
		return
	}
	if n := len(t.changes); n > 0 && t.changes[n-1].id == r.ID && t.changes[n-1].subject == r.SubjectID &&
		t.changes[n-1].scope == r.Scope {
		t.changes = t.changes[:n-1] // the same entry changed again (removed, then set): the last change holds
	}
	t.changes = append(t.changes, activeChange{subject: r.SubjectID, id: r.ID, active: active,
		layer: r.Layer, scope: r.Scope, summary: r.Summary, created: r.CreatedAt, activated: r.ActivatedAt})
}

// commit commits t's transaction and hands its changes of the index of
// active records to the cache, before the caller acknowledges the write.
func (s *Store) commit(t *tx) (err error) {
	if s.cache == nil || len(t.changes) == 0 {
		return t.txn.Commit()
	}
	s.cache.gate.RLock()
	defer s.cache.gate.RUnlock()
	readTs := t.txn.ReadTs()
	s.cache.begin(readTs)
	returned := false
	defer func() {
		if !returned { // Commit panicked: readTs must not stay in flight, and what Badger kept is unknown
			s.cache.end(readTs, t.changes, false, true)
		}
	}()
	err = t.txn.Commit()
	returned = true
	s.cache.end(readTs, t.changes, err == nil, err != nil && !errors.Is(err, badger.ErrConflict))
	return err
}

var _ memory.ActiveCache = (*tx)(nil)

// CachedActive implements memory.ActiveCache. The part and the view must
// agree: a view's snapshot is taken before the part is read, and commits
// may land in between, so a record superseded meanwhile would be missing
// from the part while its successor is not active in the snapshot. So the
// view moves to a new snapshot, opened with the part under the cache's
// gate: every commit it holds is in the part, and no other. Only a View
// moves (an Update's reads must stay in its own transaction), and only
// before it has read anything else: List and the Mem0 search ask for the
// part first.
func (t *tx) CachedActive(ctx context.Context, subjectID string, scope memory.Scope) (memory.ActivePart, bool, error) {
	if t.cache == nil || !t.readOnly || t.db == nil {
		return memory.ActivePart{}, false, nil
	}
	if _, ok, err := t.cache.part(ctx, subjectID, scope); !ok || err != nil {
		return memory.ActivePart{}, false, err // loads it if needed, outside the gate
	}
	c := t.cache
	c.gate.Lock()
	txn := t.db.NewTransaction(false)
	part, ok := c.ready(partKey(subjectID, scope))
	c.gate.Unlock()
	if !ok { // evicted meanwhile: the view scans its own snapshot
		txn.Discard()
		return memory.ActivePart{}, false, nil
	}
	if t.moved != nil {
		t.moved.Discard()
	}
	t.txn, t.moved = txn, txn
	return part, true, nil
}

// ready returns a snapshot of the ready part of key pk, if there is one.
func (c *activeCache) ready(pk string) (memory.ActivePart, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.parts[pk]
	if p == nil || p.loading {
		return memory.ActivePart{}, false
	}
	p.used.Store(c.tick.Add(1))
	return p.snapshot(), true
}
