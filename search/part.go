package search

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/memgate/memgate/memory/storeapi"
)

// chunkSize is how many entries a chunk of a part holds, up to twice as
// many before it splits. Readers hold the chunks without copying them; a
// change copies the one chunk it touches (and the list of chunks) if a
// reader may hold them: a few kilobytes, not the whole part.
const chunkSize = 256

// part is the cached index of one subject or entity id: its entries in
// index key order (subject, id), in chunks, none empty. The index's lock
// guards everything but snaps and used.
type part struct {
	key    string
	chunks [][]*entry    // readers may hold the list and each chunk
	vers   [][]uint64    // each entry's version (doc.go), by chunk; writers only
	owned  []uint64      // by chunk: snapshots handed out when it was last copied
	outer  uint64        // the same for the list of chunks
	snaps  atomic.Uint64 // snapshots handed out
	memo   *memo         // for readers (partView), new on every change
	bytes  int64
	used   atomic.Int64 // LRU clock at the last read
	// followers are told each change the part applies (follow.go).
	followers []keyedFollower

	loading bool
	buf     []pendingChange // changes that arrived while loading
	done    chan struct{}   // closed when loading ends
}

// set replaces the part's entries (sorted) and their versions.
func (p *part) set(es []*entry, vers []uint64) {
	p.chunks, p.vers, p.owned = nil, nil, nil
	for i := 0; i < len(es); i += chunkSize {
		j := min(i+chunkSize, len(es))
		p.chunks = append(p.chunks, slices.Clip(es[i:j]))
		p.vers = append(p.vers, slices.Clip(vers[i:j]))
		p.owned = append(p.owned, p.snaps.Load())
	}
	p.outer = p.snaps.Load()
	p.memo = new(memo)
}

// view hands the entries to a reader, under the index's read lock.
func (p *part) view() partView {
	p.snaps.Add(1)
	return partView{chunks: p.chunks, memo: p.memo}
}

// all returns the entries in one slice.
func (p *part) all() []*entry {
	return partView{chunks: p.chunks}.entries()
}

func compareKey(e *entry, subject, id string) int {
	if c := strings.Compare(e.SubjectID, subject); c != 0 {
		return c
	}
	return strings.Compare(e.ID, id)
}

// find returns the chunk and the position in it where the entry of
// (subject, id) is or would go (past the last chunk's end if it sorts
// after everything).
func (p *part) find(subject, id string) (k, i int, found bool) {
	k, _ = slices.BinarySearchFunc(p.chunks, 0, func(c []*entry, _ int) int {
		return compareKey(c[len(c)-1], subject, id)
	})
	if k == len(p.chunks) {
		if k == 0 {
			return 0, 0, false
		}
		return k - 1, len(p.chunks[k-1]), false
	}
	i, found = slices.BinarySearchFunc(p.chunks[k], 0, func(e *entry, _ int) int { return compareKey(e, subject, id) })
	return k, i, found
}

// own makes chunk k, and the list of chunks, the writer's: copies of what
// a reader may hold.
func (p *part) own(k int) {
	s := p.snaps.Load()
	if p.outer != s {
		p.chunks = slices.Clone(p.chunks)
		p.outer = s
	}
	if p.owned[k] != s {
		p.chunks[k] = append(make([]*entry, 0, len(p.chunks[k])+1), p.chunks[k]...)
		p.owned[k] = s
	}
}

// apply applies a change of version ver, unless the entry is newer, and
// returns how the part's size changed.
func (p *part) apply(ver uint64, ch *storeapi.ActiveChange) int64 {
	if len(p.chunks) == 0 {
		if !ch.Active {
			return 0
		}
		e := newEntry(ch.ActiveEntry, true)
		p.chunks, p.vers, p.owned = [][]*entry{{e}}, [][]uint64{{ver}}, []uint64{p.snaps.Load()}
		p.outer, p.memo = p.snaps.Load(), new(memo)
		p.bytes += entrySize(e)
		p.tell(ch)
		return entrySize(e)
	}
	k, i, found := p.find(ch.SubjectID, ch.ID)
	if (found && ver < p.vers[k][i]) || (!found && !ch.Active) {
		return 0
	}
	p.memo = new(memo)
	p.own(k)
	var delta int64
	if found {
		delta -= entrySize(p.chunks[k][i])
	}
	switch {
	case !ch.Active:
		p.chunks[k] = slices.Delete(p.chunks[k], i, i+1)
		p.vers[k] = slices.Delete(p.vers[k], i, i+1)
		if len(p.chunks[k]) == 0 {
			p.chunks = slices.Delete(p.chunks, k, k+1)
			p.vers = slices.Delete(p.vers, k, k+1)
			p.owned = slices.Delete(p.owned, k, k+1)
		}
	case found:
		e := newEntry(ch.ActiveEntry, true)
		delta += entrySize(e)
		p.chunks[k][i], p.vers[k][i] = e, ver
	default:
		e := newEntry(ch.ActiveEntry, true)
		delta += entrySize(e)
		p.chunks[k] = slices.Insert(p.chunks[k], i, e)
		p.vers[k] = slices.Insert(p.vers[k], i, ver)
		if c := p.chunks[k]; len(c) > 2*chunkSize { // split in two
			v, s := p.vers[k], p.snaps.Load()
			p.chunks[k], p.vers[k] = slices.Clone(c[:chunkSize]), slices.Clone(v[:chunkSize])
			p.chunks = slices.Insert(p.chunks, k+1, slices.Clone(c[chunkSize:]))
			p.vers = slices.Insert(p.vers, k+1, slices.Clone(v[chunkSize:]))
			p.owned = slices.Insert(p.owned, k+1, s)
		}
	}
	p.bytes += delta
	p.tell(ch)
	return delta
}

// tell tells the part's followers of a change it applied.
func (p *part) tell(ch *storeapi.ActiveChange) {
	for _, f := range p.followers {
		if ch.Active {
			f.f.Set(ch.ActiveEntry)
		} else {
			f.f.Remove(ch.ID)
		}
	}
}

// partView is what a reader holds of a part: its entries in the index's
// key order, in chunks (a change copies the chunk a reader holds, not all
// of them), and a memo for what a reader derives from all of them, new
// whenever they change.
type partView struct {
	chunks [][]*entry
	memo   *memo
}

// len returns the number of entries.
func (v partView) len() int {
	n := 0
	for _, c := range v.chunks {
		n += len(c)
	}
	return n
}

// entries returns the entries in one slice, a new one: a reader that
// needs them so keeps it in the memo.
func (v partView) entries() []*entry {
	out := make([]*entry, 0, v.len())
	for _, c := range v.chunks {
		out = append(out, c...)
	}
	return out
}

// entry is an active record as the index holds it. Entries of a part are
// shared by readers: never changed once made.
type entry struct {
	storeapi.ActiveEntry
	// lower is Summary in lower case, and memo a place for what readers
	// derive from Summary, in entries of a part; both are empty in
	// entries a read scans from the store.
	lower string
	memo  *memo
}

// cachedEntry holds an entry and its memo in one allocation.
type cachedEntry struct {
	e entry
	m memo
}

// newEntry returns the entry of e: with its lower-case text and a memo
// when it is to be kept in a part.
func newEntry(e storeapi.ActiveEntry, kept bool) *entry {
	if !kept {
		return &entry{ActiveEntry: e}
	}
	c := &cachedEntry{e: entry{ActiveEntry: e, lower: strings.ToLower(e.Summary)}}
	c.e.memo = &c.m
	return &c.e
}

// text returns the entry's summary in lower case.
func (e *entry) text() string {
	if e.memo == nil {
		return strings.ToLower(e.Summary)
	}
	return e.lower
}

// entrySize estimates what an entry of a part costs, readers' memos
// included. With 41-byte summaries, 10,000 entries measured ~500 bytes
// each in the heap once List had joined their text, ~1,100 once the Mem0
// search had also counted their terms; this counts them as the latter.
func entrySize(e *entry) int64 {
	return int64(896 + len(e.ID) + len(e.SubjectID) + len(e.Layer) + len(e.Scope.UserID) + len(e.Scope.AgentID) +
		len(e.Scope.AppID) + len(e.Scope.RunID) + 4*len(e.Summary))
}

// memo holds what readers derived from an entry's summary, or from the
// entries of a part (List keeps the summaries joined, the search term
// counts), one value per key: each reader keys with a type of its own.
// Concurrent readers may store under one key; they store the same thing.
type memo struct{ slots atomic.Pointer[[]memoSlot] }

type memoSlot struct{ key, val any }

// load returns what was stored under key, or nil (also on a nil memo).
func (m *memo) load(key any) any {
	if m == nil {
		return nil
	}
	if s := m.slots.Load(); s != nil {
		for _, e := range *s {
			if e.key == key {
				return e.val
			}
		}
	}
	return nil
}

// store keeps val under key; a nil memo keeps nothing.
func (m *memo) store(key, val any) {
	if m == nil {
		return
	}
	for {
		old := m.slots.Load()
		var s []memoSlot
		if old != nil {
			for _, e := range *old {
				if e.key != key {
					s = append(s, e)
				}
			}
		}
		s = append(s, memoSlot{key, val})
		if m.slots.CompareAndSwap(old, &s) {
			return
		}
	}
}
