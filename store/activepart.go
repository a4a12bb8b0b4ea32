package store

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/memgate/memgate/memory"
)

// chunkSize is how many entries a chunk of a part holds, up to twice as
// many before it splits. Readers hold the chunks without copying them; a
// change copies the one chunk it touches (and the list of chunks) if a
// reader may hold them: a few kilobytes, not the whole part.
const chunkSize = 256

// activePart is the cached index of one subject or entity id: its entries
// in index key order (subject, id), in chunks, none empty. The cache's
// lock guards everything but snaps and used.
type activePart struct {
	key    string
	chunks [][]*memory.ActiveEntry // readers may hold the list and each chunk
	vers   [][]uint64              // each entry's version (activeCache), by chunk; writers only
	owned  []uint64                // by chunk: snapshots handed out when it was last copied
	outer  uint64                  // the same for the list of chunks
	snaps  atomic.Uint64           // snapshots handed out
	memo   *memory.Memo            // for readers (memory.ActivePart), new on every change
	bytes  int64
	used   atomic.Int64 // LRU clock at the last read

	loading bool
	buf     []pendingChange // changes that arrived while loading
	done    chan struct{}   // closed when loading ends
}

// set replaces the part's entries (sorted) and their versions.
func (p *activePart) set(es []*memory.ActiveEntry, vers []uint64) {
	p.chunks, p.vers, p.owned = nil, nil, nil
	for i := 0; i < len(es); i += chunkSize {
		j := min(i+chunkSize, len(es))
		p.chunks = append(p.chunks, slices.Clip(es[i:j]))
		p.vers = append(p.vers, slices.Clip(vers[i:j]))
		p.owned = append(p.owned, p.snaps.Load())
	}
	p.outer = p.snaps.Load()
	p.memo = new(memory.Memo)
}

// snapshot hands the entries to a reader, under the cache's read lock.
func (p *activePart) snapshot() memory.ActivePart {
	p.snaps.Add(1)
	return memory.ActivePart{Chunks: p.chunks, Memo: p.memo}
}

// all returns the entries in one slice.
func (p *activePart) all() []*memory.ActiveEntry {
	return memory.ActivePart{Chunks: p.chunks}.Entries()
}

func compareKey(e *memory.ActiveEntry, subject, id string) int {
	if c := strings.Compare(e.SubjectID, subject); c != 0 {
		return c
	}
	return strings.Compare(e.ID, id)
}

// find returns the chunk and the position in it where the entry of
// (subject, id) is or would go (past the last chunk's end if it sorts
// after everything).
func (p *activePart) find(subject, id string) (k, i int, found bool) {
	k, _ = slices.BinarySearchFunc(p.chunks, 0, func(c []*memory.ActiveEntry, _ int) int {
		return compareKey(c[len(c)-1], subject, id)
	})
	if k == len(p.chunks) {
		if k == 0 {
			return 0, 0, false
		}
		return k - 1, len(p.chunks[k-1]), false
	}
	i, found = slices.BinarySearchFunc(p.chunks[k], 0, func(e *memory.ActiveEntry, _ int) int { return compareKey(e, subject, id) })
	return k, i, found
}

// own makes chunk k, and the list of chunks, the writer's: copies of what
// a reader may hold.
func (p *activePart) own(k int) {
	s := p.snaps.Load()
	if p.outer != s {
		p.chunks = slices.Clone(p.chunks)
		p.outer = s
	}
	if p.owned[k] != s {
		p.chunks[k] = append(make([]*memory.ActiveEntry, 0, len(p.chunks[k])+1), p.chunks[k]...)
		p.owned[k] = s
	}
}

// apply applies a change of version ver, unless the entry is newer, and
// returns how the part's size changed.
func (p *activePart) apply(ver uint64, ch *activeChange) int64 {
	if len(p.chunks) == 0 {
		if !ch.active {
			return 0
		}
		e := ch.entry()
		p.chunks, p.vers, p.owned = [][]*memory.ActiveEntry{{e}}, [][]uint64{{ver}}, []uint64{p.snaps.Load()}
		p.outer, p.memo = p.snaps.Load(), new(memory.Memo)
		p.bytes += entrySize(e)
		return entrySize(e)
	}
	k, i, found := p.find(ch.subject, ch.id)
	if (found && ver < p.vers[k][i]) || (!found && !ch.active) {
		return 0
	}
	p.memo = new(memory.Memo)
	p.own(k)
	var delta int64
	if found {
		delta -= entrySize(p.chunks[k][i])
	}
	switch {
	case !ch.active:
		p.chunks[k] = slices.Delete(p.chunks[k], i, i+1)
		p.vers[k] = slices.Delete(p.vers[k], i, i+1)
		if len(p.chunks[k]) == 0 {
			p.chunks = slices.Delete(p.chunks, k, k+1)
			p.vers = slices.Delete(p.vers, k, k+1)
			p.owned = slices.Delete(p.owned, k, k+1)
		}
	case found:
		e := ch.entry()
		delta += entrySize(e)
		p.chunks[k][i], p.vers[k][i] = e, ver
	default:
		e := ch.entry()
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
	return delta
}
