package policy

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// virtualCache is the topdown.VirtualCache of one evaluation: the values of
// the rules (and function calls) evaluated so far, so a rule referred to
// twice is evaluated once. A decision caches a handful of values, so a list
// compared by hash and then by ref costs a fraction of OPA's default, a
// trie of hash maps that allocates several maps per value; the lists are
// pooled across evaluations.
type virtualCache struct {
	entries []cacheEntry
	// frames holds where each frame pushed by `with` starts; a frame sees
	// only its own entries, as `with` may change what a rule evaluates to.
	frames []int
}

type cacheEntry struct {
	hash      int
	ref       ast.Ref
	value     *ast.Term
	undefined bool
}

var _ topdown.VirtualCache = (*virtualCache)(nil)

var virtualCaches = sync.Pool{New: func() any { return &virtualCache{} }}

func getVirtualCache() *virtualCache { return virtualCaches.Get().(*virtualCache) }

// release empties c, dropping its references to terms, and pools it.
func (c *virtualCache) release() {
	clear(c.entries)
	c.entries, c.frames = c.entries[:0], c.frames[:0]
	virtualCaches.Put(c)
}

func (c *virtualCache) frameStart() int {
	if len(c.frames) == 0 {
		return 0
	}
	return c.frames[len(c.frames)-1]
}

func (c *virtualCache) Push() { c.frames = append(c.frames, len(c.entries)) }

func (c *virtualCache) Pop() {
	if len(c.frames) == 0 {
		return
	}
	start := c.frameStart()
	clear(c.entries[start:])
	c.entries, c.frames = c.entries[:start], c.frames[:len(c.frames)-1]
}

// find returns the index of ref in the current frame, or -1.
func (c *virtualCache) find(ref ast.Ref, hash int) int {
	for i := len(c.entries) - 1; i >= c.frameStart(); i-- {
		if e := &c.entries[i]; e.hash == hash && e.ref.Equal(ref) {
			return i
		}
	}
	return -1
}

// Get returns the cached value of ref; (nil, true) when it was cached as
// undefined, (nil, false) when it was not cached.
func (c *virtualCache) Get(ref ast.Ref) (*ast.Term, bool) {
	i := c.find(ref, ref.Hash())
	if i < 0 {
		return nil, false
	}
	if c.entries[i].undefined {
		return nil, true
	}
	return c.entries[i].value, false
}

// Put caches the value of ref, a nil value as undefined. The evaluator may
// reuse the ref's slice, so the entry keeps a copy of it (its terms are
// not modified).
func (c *virtualCache) Put(ref ast.Ref, value *ast.Term) {
	hash := ref.Hash()
	e := cacheEntry{hash: hash, value: value, undefined: value == nil}
	if i := c.find(ref, hash); i >= 0 {
		// As OPA's own cache: once undefined, a ref stays undefined.
		e.ref, e.undefined = c.entries[i].ref, e.undefined || c.entries[i].undefined
		c.entries[i] = e
		return
	}
	e.ref = append(ast.Ref(nil), ref...)
	c.entries = append(c.entries, e)
}

// Keys lists the refs cached in the current frame.
func (c *virtualCache) Keys() []ast.Ref {
	var keys []ast.Ref
	for _, e := range c.entries[c.frameStart():] {
		keys = append(keys, e.ref)
	}
	return keys
}
