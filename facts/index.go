package facts

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/search"
)

// The index of a subject's facts. compare finds a write related to an
// active memory in five ways only, and the index lists each memory by
// what they need, so that a write finds the memories it may relate to by
// a few lookups instead of a search of all of them:
//
//   - the same folded text (textfold.Key): listed by that text;
//   - the same key and context and a relation class in common: listed by
//     key and context, once for each class of the relation;
//   - the same words, and most words in common (overlap ≥ mostWords): by
//     prefix filtering. In one fixed order of all words, two sets of a
//     and b words that share o share one among the first a-o+1 of the one
//     and the first b-o+1 of the other (the first shared word is there in
//     both). A memory is listed under its first words for the least o it
//     needs (minShare), and a write looks up its own first words likewise.
//     A memory first met at place i of the write and j of its own shares
//     none of the words before them, so at most 1+min(a-i-1, b-j-1) words,
//     and at most as many of the write's words from i on as its signature
//     (a bit for each word) admits: one that cannot share enough is passed
//     over without being compared.
//
//   - the same words but for a number near their end (numberChanged): by
//     the words with each run of numbers masked (numbersMasked), which
//     two such texts share.
//
// Every memory compare can find related is so a candidate, and compare
// decides on each: the answer is the one comparing the write with every
// memory gives (index_test.go). The order of words is the order in which
// the index first met them, newest first: words a subject uses often come
// late, so they rarely head a memory's list and the lists a write looks
// up stay short.

// subjectFacts is the index of one subject's facts, by scope: the
// search.Follower the search index keeps with the subject's part. Set and
// Remove only note what changed; the next read parses it, outside the
// search index's lock.
type subjectFacts struct {
	pmu     sync.Mutex
	pending map[string]*storeapi.ActiveEntry // changed since the last read; nil: removed

	mu     sync.Mutex // readers; guards what follows
	docs   map[string]*doc
	scopes map[memory.Scope]*scopeFacts
	query  uint64 // counts reads, to mark the docs each takes once
	last   struct {
		text string
		c    *clause
	} // the last write read: its entry usually follows, parsed
}

var _ search.Follower = (*subjectFacts)(nil)

// followerKey keys the index of a subject's facts in its part.
type followerKey struct{}

func newSubjectFacts() search.Follower {
	return &subjectFacts{docs: map[string]*doc{}, scopes: map[memory.Scope]*scopeFacts{}}
}

// Set implements search.Follower.
func (s *subjectFacts) Set(e storeapi.ActiveEntry) { s.note(e.ID, &e) }

// Remove implements search.Follower.
func (s *subjectFacts) Remove(id string) { s.note(id, nil) }

func (s *subjectFacts) note(id string, e *storeapi.ActiveEntry) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.pending == nil {
		s.pending = map[string]*storeapi.ActiveEntry{}
	}
	s.pending[id] = e
}

// catchUp applies what changed since the last read; under s.mu.
func (s *subjectFacts) catchUp() {
	s.pmu.Lock()
	changed := s.pending
	s.pending = nil
	s.pmu.Unlock()
	for id, e := range changed {
		if d := s.docs[id]; d != nil {
			sf := s.scopes[d.scope]
			if sf.remove(d); sf.n == 0 {
				delete(s.scopes, d.scope)
			}
			delete(s.docs, id)
		}
		if e == nil {
			continue
		}
		c := s.last.c
		if c == nil || s.last.text != e.Summary {
			c = parse(e.Summary)
		}
		d := &doc{id: e.ID, scope: e.Scope, c: c}
		sf := s.scopes[e.Scope]
		if sf == nil {
			sf = newScopeFacts()
			s.scopes[e.Scope] = sf
		}
		sf.add(d)
		s.docs[id] = d
	}
}

// related returns each active memory of scope that compare does not find
// Distinct from a (the write whose text is text), with how it relates.
func (s *subjectFacts) related(text string, a *clause, scope memory.Scope) []relatedDoc {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	s.last.text, s.last.c = text, a
	sf := s.scopes[scope]
	if sf == nil {
		return nil
	}
	s.query++
	var out []relatedDoc
	for _, d := range sf.candidates(a, s.query) {
		if rel, why := compare(a, d.c); rel != Distinct {
			out = append(out, relatedDoc{d.id, rel, why, overlap(a.words, d.c.words)})
		}
	}
	return out
}

// relatedDoc is a memory a write relates to.
type relatedDoc struct {
	id      string
	rel     Relation
	why     string
	overlap float64 // of their words
}

// doc is an active memory in the index.
type doc struct {
	id    string
	scope memory.Scope
	c     *clause
	words []string // its distinct words, in the index's order
	mark  uint64   // the last read that took it as a candidate
}

// scopeFacts is the index of the facts of one subject and scope.
type scopeFacts struct {
	n      int
	byText map[string][]*doc
	byFact map[factKey][]*doc
	byMask map[string][]*doc // by numbersMasked, of texts with a number
	byWord map[int64][]posting
	ids    map[string]*wordID // the order of words: by id, newest first
	next   int64
}

func newScopeFacts() *scopeFacts {
	return &scopeFacts{byText: map[string][]*doc{}, byFact: map[factKey][]*doc{}, byMask: map[string][]*doc{},
		byWord: map[int64][]posting{}, ids: map[string]*wordID{}}
}

// factKey is a key and context with one class of relation.
type factKey struct {
	keyContext string
	cls        int
}

// wordID places a word in the index's order; refs counts the docs holding
// it, and a word no doc holds is forgotten (met again, it is new).
type wordID struct {
	id   int64
	refs int
}

// posting is a doc listed under one of its first words: the word's place
// among its words, how many it has, and a signature of them.
type posting struct {
	d         *doc
	sig       signature
	pos, size int32
}

// signature is a set of words as a set of bits: a word in both of two
// sets has its bit in both signatures.
type signature uint64

func wordBit(w string) uint32 {
	h := uint32(2166136261) // FNV-1a
	for i := range len(w) {
		h = (h ^ uint32(w[i])) * 16777619
	}
	return h % 64
}

func (s *signature) add(w string) { *s |= 1 << wordBit(w) }

func (s signature) len() int { return bits.OnesCount64(uint64(s)) }

func (s signature) and(t signature) signature { return s & t }

func joinWords(ws []string) string { return strings.Join(ws, "\x00") }

func (c *clause) keyContext() string { return joinWords(c.key) + "\x01" + joinWords(c.context) }

// classes calls fn with each class of the clause's relation.
func (c *clause) classes(fn func(cls int)) {
	for cls := 1; cls <= c.cls; cls <<= 1 {
		if c.cls&cls != 0 {
			fn(cls)
		}
	}
}

// distinct returns the distinct words of ws.
func distinct(ws []string) []string {
	out := slices.Clone(ws)
	slices.Sort(out)
	return slices.Compact(out)
}

// minShare is the least number of words a set of n words shares with
// another for overlap to reach mostWords: the other set has at least n.
func minShare(n int) int {
	o := max(1, n*3/5) // at most the answer, as in need
	for o < n && !shareEnough(o, n) {
		o++
	}
	return o
}

// need returns the least number of words sets of a and b words share
// when their overlap reaches mostWords, or more than either has.
func need(a, b int) int {
	o := max(1, min(a, b)*3/5) // at most the answer: shareEnough(o, a+b-o) needs o ≥ 0.6·max(a, b)
	for o <= min(a, b) && !shareEnough(o, a+b-o) {
		o++
	}
	return o
}

func (sf *scopeFacts) add(d *doc) {
	sf.n++
	c := d.c
	sf.byText[c.folded] = append(sf.byText[c.folded], d)
	if len(c.words) == 0 {
		return // related by its text alone (compare)
	}
	if c.piv >= 0 {
		kc := c.keyContext()
		c.classes(func(cls int) { sf.byFact[factKey{kc, cls}] = append(sf.byFact[factKey{kc, cls}], d) })
	}
	if m, ok := numbersMasked(c.words); ok {
		sf.byMask[m] = append(sf.byMask[m], d)
	}
	d.words = distinct(c.words)
	for _, w := range d.words {
		id := sf.ids[w]
		if id == nil {
			id = &wordID{id: sf.next}
			sf.next++
			sf.ids[w] = id
		}
		id.refs++
	}
	slices.SortFunc(d.words, func(a, b string) int { return cmp.Compare(sf.ids[b].id, sf.ids[a].id) })
	var sig signature
	for _, w := range d.words {
		sig.add(w)
	}
	size := len(d.words)
	for j := range size - minShare(size) + 1 {
		id := sf.ids[d.words[j]].id
		sf.byWord[id] = append(sf.byWord[id], posting{d, sig, int32(j), int32(size)})
	}
}

func (sf *scopeFacts) remove(d *doc) {
	sf.n--
	c := d.c
	drop(sf.byText, c.folded, d)
	if len(c.words) == 0 {
		return
	}
	if c.piv >= 0 {
		kc := c.keyContext()
		c.classes(func(cls int) { drop(sf.byFact, factKey{kc, cls}, d) })
	}
	if m, ok := numbersMasked(c.words); ok {
		drop(sf.byMask, m, d)
	}
	size := len(d.words)
	for j := range size - minShare(size) + 1 {
		id := sf.ids[d.words[j]].id
		ps := sf.byWord[id]
		i := slices.IndexFunc(ps, func(p posting) bool { return p.d == d })
		ps[i] = ps[len(ps)-1]
		if ps = ps[:len(ps)-1]; len(ps) == 0 {
			delete(sf.byWord, id)
		} else {
			sf.byWord[id] = ps
		}
	}
	for _, w := range d.words {
		id := sf.ids[w]
		if id.refs--; id.refs == 0 {
			delete(sf.ids, w)
		}
	}
}

// drop removes d from the list of k in m.
func drop[K comparable](m map[K][]*doc, k K, d *doc) {
	ds := m[k]
	i := slices.Index(ds, d)
	ds[i] = ds[len(ds)-1]
	ds[len(ds)-1] = nil
	if ds = ds[:len(ds)-1]; len(ds) == 0 {
		delete(m, k)
	} else {
		m[k] = ds
	}
}

// candidates returns, once each, every doc compare may find related to a:
// a superset of them (see the top of this file). q marks the docs taken.
func (sf *scopeFacts) candidates(a *clause, q uint64) []*doc {
	var out []*doc
	take := func(d *doc) {
		if d.mark != q {
			d.mark = q
			out = append(out, d)
		}
	}
	for _, d := range sf.byText[a.folded] {
		take(d)
	}
	if len(a.words) == 0 {
		return out // compare finds no other memory related
	}
	if a.piv >= 0 {
		kc := a.keyContext()
		a.classes(func(cls int) {
			for _, d := range sf.byFact[factKey{kc, cls}] {
				take(d)
			}
		})
	}
	if m, ok := numbersMasked(a.words); ok {
		for _, d := range sf.byMask[m] {
			take(d)
		}
	}
	// Most words in common. Words the index does not hold come first:
	// as if met now, they are the newest.
	type word struct {
		id int64
		w  string
	}
	ws := distinct(a.words)
	known := make([]word, 0, len(ws))
	for _, w := range ws {
		if id := sf.ids[w]; id != nil {
			known = append(known, word{id.id, w})
		}
	}
	slices.SortFunc(known, func(a, b word) int { return cmp.Compare(b.id, a.id) })
	size := len(ws)
	at := size - len(known) // the place of known[0]: unknown words come first
	// A doc first met at place i shares none of the words before it: at
	// most those of after[k] (known[k:]) it holds, with one more for each
	// two of them that have one bit.
	after := make([]signature, len(known)+1)
	for k := len(known) - 1; k >= 0; k-- {
		after[k] = after[k+1]
		after[k].add(known[k].w)
	}
	var needs []int         // need(size, b) by b
	least := minShare(size) // the least of need(size, b)
	for i := at; i < size-least+1; i++ {
		k := i - at
		sig, clash := after[k], len(known)-k-after[k].len()
		for _, p := range sf.byWord[known[k].id] {
			if p.sig.and(sig).len()+clash < least {
				continue // most are passed over here, at the cost of a few instructions
			}
			b := int(p.size)
			if b >= len(needs) {
				needs = append(needs, make([]int, b+1-len(needs))...)
			}
			if needs[b] == 0 {
				needs[b] = need(size, b)
			}
			if 1+min(size-i-1, b-int(p.pos)-1) >= needs[b] && p.sig.and(sig).len()+clash >= needs[b] {
				take(p.d)
			}
		}
	}
	return out
}

// numbersMasked is ws with each run of numbers (allNumbers) as one "#",
// joined, and whether ws holds a number: two texts numberChanged relates
// have the same (their words differ only in runs of numbers, between the
// same words).
func numbersMasked(ws []string) (string, bool) {
	var b strings.Builder
	found, inRun := false, false
	for _, w := range ws {
		if isNumber(w) {
			found = true
			if !inRun {
				b.WriteString("#\x00")
			}
			inRun = true
			continue
		}
		inRun = false
		b.WriteString(w)
		b.WriteString("\x00")
	}
	return b.String(), found
}
