package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// memStore is a Store in memory for the governor's tests: no Badger, the
// same contract. Updates are serialised and each runs on a copy of the
// state that replaces it only when fn succeeds, so an Update is atomic and
// never conflicts; a View reads the state as it was when it began (a
// snapshot), however many Updates commit meanwhile. Values are kept as
// JSON, so nothing a caller holds aliases what is stored, as with a real
// store.
//
// With retry set, every Update runs fn twice and discards the first run,
// as a store does after a conflict: fn must keep no state across runs.
type memStore struct {
	mu    sync.Mutex // serialises Updates
	state *memState  // replaced, never changed, once committed
	retry bool
	// updates counts the attempts of Update, committed or not.
	updates int
}

type memState struct {
	records map[string][]byte
	actors  map[string][]string // record id → "run\x00id"/"actor\x00id", fixed on first write
	slots   map[string][]byte
	points  map[string][]byte
	events  map[string][]byte
	notices map[string][]byte
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{state: &memState{records: map[string][]byte{}, actors: map[string][]string{},
		slots: map[string][]byte{}, points: map[string][]byte{}, events: map[string][]byte{}, notices: map[string][]byte{}}}
}

func (s *memState) clone() *memState {
	return &memState{records: maps.Clone(s.records), actors: maps.Clone(s.actors), slots: maps.Clone(s.slots),
		points: maps.Clone(s.points), events: maps.Clone(s.events), notices: maps.Clone(s.notices)}
}

func (m *memStore) Update(ctx context.Context, fn func(Tx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	attempts := 1
	if m.retry {
		attempts = 2
	}
	for i := range attempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.updates++
		next := m.state.clone()
		if err := fn(&memTx{s: next}); err != nil {
			return err
		}
		if i == attempts-1 {
			m.state = next
		}
	}
	return nil
}

func (m *memStore) View(ctx context.Context, fn func(ReadTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	snap := m.state
	m.mu.Unlock()
	return fn(&memTx{s: snap, readOnly: true})
}

type memTx struct {
	s        *memState
	readOnly bool
}

var _ Tx = (*memTx)(nil)

func get[T any](m map[string][]byte, what, id string) (*T, error) {
	b, ok := m[id]
	if !ok {
		return nil, Errorf(ENOTFOUND, "%s %s not found", what, id)
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", what, id, err)
	}
	return v, nil
}

func (t *memTx) put(m map[string][]byte, id string, v any) error {
	if t.readOnly {
		return fmt.Errorf("write in a read-only transaction")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	m[id] = b
	return nil
}

// all decodes every value of m in key order.
func all[T any](m map[string][]byte) []*T {
	var out []*T
	for _, id := range slices.Sorted(maps.Keys(m)) {
		v := new(T)
		if err := json.Unmarshal(m[id], v); err != nil {
			panic(err) // put encoded it
		}
		out = append(out, v)
	}
	return out
}

func (t *memTx) records(keep func(*Record) bool) []*Record {
	out := []*Record{}
	for _, r := range all[Record](t.s.records) {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func (t *memTx) Record(id string) (*Record, error) { return get[Record](t.s.records, "memory", id) }
func (t *memTx) Slot(id string) (*Slot, error)     { return get[Slot](t.s.slots, "slot", id) }
func (t *memTx) RollbackPoint(id string) (*RollbackPoint, error) {
	return get[RollbackPoint](t.s.points, "rollback point", id)
}

func (t *memTx) SlotRecords(slotID string) ([]*Record, error) {
	return t.records(func(r *Record) bool { return r.SlotID == slotID }), nil
}

func (t *memTx) SlotPending(slotID string) ([]*Record, error) {
	return t.records(func(r *Record) bool { return r.SlotID == slotID && r.Status == StatusPending }), nil
}

func (t *memTx) SubjectSlots(subjectID string) ([]string, error) {
	out := []string{}
	for _, s := range all[Slot](t.s.slots) {
		if s.SubjectID == subjectID {
			out = append(out, s.ID)
		}
	}
	return out, nil
}

// ScanActive orders by subject, then id, as a store's index keyed so does.
func (t *memTx) ScanActive(subjectID string, fn func(*Record) bool) error {
	recs := t.records(func(r *Record) bool {
		return r.Status == StatusActive && (subjectID == "" || r.SubjectID == subjectID)
	})
	slices.SortStableFunc(recs, func(a, b *Record) int { return cmp.Compare(a.SubjectID, b.SubjectID) })
	return each(recs, fn)
}

func (t *memTx) ScanPending(fn func(*Record) bool) error {
	return each(t.records(func(r *Record) bool { return r.Status == StatusPending }), fn)
}

func (t *memTx) ScanByActor(kind, id string, fn func(*Record) bool) error {
	if kind != "run" && kind != "actor" {
		return Errorf(EINVALID, "unknown actor kind %q", kind)
	}
	return each(t.records(func(r *Record) bool { return slices.Contains(t.s.actors[r.ID], kind+"\x00"+id) }), fn)
}

func each[T any](vs []*T, fn func(*T) bool) error {
	for _, v := range vs {
		if !fn(v) {
			break
		}
	}
	return nil
}

func (t *memTx) ScanEvents(after string, fn func(*Event) bool) error {
	var evs []*Event
	for _, ev := range all[Event](t.s.events) {
		if ev.ID > after {
			evs = append(evs, ev)
		}
	}
	return each(evs, fn)
}

func (t *memTx) ScanShadowed(after string, newest bool, fn func(*Event) bool) error {
	evs := []*Event{}
	for _, ev := range all[Event](t.s.events) {
		if IsShadowed(ev) {
			evs = append(evs, ev)
		}
	}
	if newest {
		slices.Reverse(evs)
	}
	if after != "" {
		i := slices.IndexFunc(evs, func(e *Event) bool { return (e.ID > after) != newest && e.ID != after })
		if i < 0 {
			i = len(evs)
		}
		evs = evs[i:]
	}
	return each(evs, fn)
}

func (t *memTx) RecordEvents(recordID string) ([]*Event, error) {
	out := []*Event{}
	for _, ev := range all[Event](t.s.events) {
		if ev.RecordID == recordID {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (t *memTx) ScanNotices(fn func(*Notice) bool) error { return each(all[Notice](t.s.notices), fn) }

func (t *memTx) PutRecord(r *Record) error {
	if t.readOnly {
		return fmt.Errorf("write in a read-only transaction")
	}
	if _, ok := t.s.actors[r.ID]; !ok {
		var keys []string
		for _, k := range []string{"run\x00" + r.Actor.RunID, "run\x00" + r.Actor.SessionID,
			"actor\x00" + r.Actor.AgentID, "actor\x00" + r.Actor.UserID} {
			if k[len(k)-1] != 0 {
				keys = append(keys, k)
			}
		}
		t.s.actors[r.ID] = keys
	}
	return t.put(t.s.records, r.ID, r)
}

func (t *memTx) PutSlot(s *Slot) error                   { return t.put(t.s.slots, s.ID, s) }
func (t *memTx) PutRollbackPoint(p *RollbackPoint) error { return t.put(t.s.points, p.ID, p) }
func (t *memTx) PutNotice(n *Notice) error               { return t.put(t.s.notices, n.ID, n) }

func (t *memTx) AppendEvent(e *Event) error {
	if e.ID == "" {
		return fmt.Errorf("append event: no id")
	}
	return t.put(t.s.events, e.ID, e)
}

func (t *memTx) DeleteNotice(id string) error {
	if t.readOnly {
		return fmt.Errorf("write in a read-only transaction")
	}
	delete(t.s.notices, id)
	return nil
}
