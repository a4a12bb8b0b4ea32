package search

import (
	"context"
	"fmt"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// A Follower keeps state derived from the active entries of one subject
// (package facts keeps the keys of their facts there), in step with the
// subject's part of the index: the part tells it every entry it holds when
// the Follower is made, then each change, in the order the part applies
// them (doc.go's invariants hold for it as for the part). Set and Remove
// run under the index's lock: they must be quick and must not call the
// index. What reads the Follower synchronizes with them itself.
type Follower interface {
	Set(e storeapi.ActiveEntry) // the entry is new or changed
	Remove(id string)           // the entry left the part
}

// Follow returns the Follower of key kept with the part of subject,
// making it with newFollower the first time, and loading the part if
// needed (Search and List do the same). It returns nil when the index
// keeps no part of subject: the store has no commit feed, the part is
// over budget, or the index is closed; the caller then reads otherwise.
//
// A part that is evicted drops its Followers; the next Follow loads the
// part again and makes a new one. Every commit that ended before Follow
// was called is in what the returned Follower was told.
func (x *Index) Follow(ctx context.Context, subject string, key any, newFollower func() Follower) (Follower, error) {
	if subject == "" {
		return nil, nil
	}
	pk := partKey(subject, memory.Scope{})
	ok, err := x.load(ctx, pk)
	if err != nil || !ok {
		return nil, err
	}
	if f, ok := x.follower(pk, key); ok { // the usual case: under the read lock
		return f, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.parts[pk]
	if p == nil || p.loading { // evicted since load: read otherwise this once
		return nil, nil
	}
	for _, f := range p.followers {
		if f.key == key {
			return f.f, nil
		}
	}
	f := newFollower()
	for _, c := range p.chunks {
		for _, e := range c {
			f.Set(e.ActiveEntry)
		}
	}
	p.followers = append(p.followers, keyedFollower{key, f})
	return f, nil
}

// follower returns the Follower of key of the ready part pk, if it has one.
func (x *Index) follower(pk string, key any) (Follower, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.parts[pk]
	if p == nil || p.loading {
		return nil, false
	}
	p.used.Store(x.tick.Add(1))
	for _, f := range p.followers {
		if f.key == key {
			return f.f, true
		}
	}
	return nil, false
}

// keyedFollower is a Follower kept with a part under its key.
type keyedFollower struct {
	key any
	f   Follower
}

// Active returns the record id if it is active and the caller's tenant's
// (memory.TenantOf), or nil: one read of the store, for a caller that
// found the id through a Follower and needs the whole record.
func (x *Index) Active(ctx context.Context, id string) (*memory.Record, error) {
	var out *memory.Record
	err := x.view(ctx, func(sn storeapi.Snapshot) error {
		r, err := sn.Record(id)
		switch {
		case memory.ErrorCode(err) == memory.ENOTFOUND:
			return nil
		case err != nil:
			return fmt.Errorf("search: load %s: %w", id, err)
		case r.Status == memory.StatusActive && memory.TenantOf(ctx).Covers(r.Scope):
			out = r
		}
		return nil
	})
	return out, err
}
