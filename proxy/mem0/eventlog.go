package mem0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Event is what one Mem0 write (add, update, delete) produced. Its status
// is not stored: it is computed from the records' current statuses, so an
// event turns SUCCEEDED or FAILED when a reviewer decides, with no callback.
type Event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"` // ADD, UPDATE or DELETE
	Writes    []EventWrite    `json:"writes"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	LatencyMs float64         `json:"latencyMs"`
	// Tenant is the tenant of the key that made the event: only callers
	// of that tenant see it.
	Tenant memory.Tenant `json:"tenant,omitzero"`
}

// EventWrite is one candidate of an event and what the governor did with it.
type EventWrite struct {
	RecordID string         `json:"recordId"` // the record stored (the active one if unchanged)
	Outcome  memory.Outcome `json:"outcome"`
}

// EventLog keeps Mem0 events in the store's KV area, one small JSON value
// each, in a namespace of their own, keyed by the event id. Event ids are
// ULIDs, so listing keys in reverse byte order lists the newest first.
// Every write is durable before Put returns (group commit included): the
// add that answers with its event id is acknowledged only after that. On
// a shared database every instance sees every event, whichever answered
// the write.
type EventLog struct {
	kv storeapi.KVScanner
}

// eventNamespace is the KV namespace of events.
const eventNamespace = "mem0-events"

// NewEventLog returns the event log kept in the KV area of kv.
func NewEventLog(kv storeapi.KVScanner) *EventLog { return &EventLog{kv: kv} }

// KeyMover moves the keys of a prefix of its own into a KV namespace
// (store.Store.MoveKeys).
type KeyMover interface {
	MoveKeys(ctx context.Context, prefix, namespace string) (int, error)
}

// legacyEventPrefix is where releases before the KV contract kept events
// on the embedded Badger store, outside its KV area.
const legacyEventPrefix = "mem0/ev/"

// MoveLegacyEvents moves the events an earlier release kept on the
// embedded Badger store under a prefix of their own into the log's KV
// namespace, once, and returns how many it moved: a deployment reads its
// old events after an upgrade. A move cut short finishes at the next
// start.
func MoveLegacyEvents(ctx context.Context, m KeyMover) (int, error) {
	n, err := m.MoveKeys(ctx, legacyEventPrefix, eventNamespace)
	if err != nil {
		return n, fmt.Errorf("mem0 events: move the events of an earlier release: %w", err)
	}
	return n, nil
}

// errNoEvent answers an id that names no event the caller may see; a
// fresh error each time, as callers may annotate it.
func errNoEvent() error {
	return memory.Errorf(memory.ENOTFOUND, "Event not found or you don't have permission to access it.")
}

// Put stores an event, durably.
func (l *EventLog) Put(ctx context.Context, ev *Event) error {
	if l == nil { // a Handler without a log (only through api.go): its events are its versions
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := memory.MarshalStored(ev) // a payload takes the room it took sent
	if err != nil {
		return fmt.Errorf("mem0 events: encode %s: %w", ev.ID, err)
	}
	if err := l.kv.Put(ctx, eventNamespace, ev.ID, b); err != nil {
		return fmt.Errorf("mem0 events: put %s: %w", ev.ID, err)
	}
	return nil
}

// Get returns an event. Errors: ENOTFOUND.
func (l *EventLog) Get(ctx context.Context, id string) (*Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ev Event
	err := l.read(ctx, id, func(b []byte) error { return json.Unmarshal(b, &ev) })
	if err != nil {
		if memory.ErrorCode(err) == memory.ENOTFOUND {
			return nil, err
		}
		return nil, fmt.Errorf("mem0 events: get %s: %w", id, err)
	}
	if !memory.TenantOf(ctx).Sees(ev.Tenant) {
		return nil, errNoEvent()
	}
	return &ev, nil
}

// read calls decode with the stored value of event id; a missing one is
// errNoEvent.
func (l *EventLog) read(ctx context.Context, id string, decode func([]byte) error) error {
	if !storableID(id) {
		return errNoEvent() // no event was stored under it: the database would refuse the key
	}
	b, err := l.kv.Get(ctx, eventNamespace, id)
	if errors.Is(err, storeapi.ErrNotFound) {
		return errNoEvent()
	} else if err != nil {
		return err
	}
	return decode(b)
}

// storableID reports whether id can be a key of a text column: valid
// UTF-8 without NUL. Ids from a request path may be neither.
func storableID(id string) bool {
	return utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}

// List returns up to limit events after skipping offset, newest first,
// and how many events there are in all: those of the caller's tenant.
func (l *EventLog) List(ctx context.Context, offset, limit int) ([]*Event, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	out := []*Event{}
	total := 0
	tenant := memory.TenantOf(ctx)
	// Without a tenant every event counts, and only those returned are
	// decoded; a tenant's must be decoded to be told apart. The store then
	// counts the keys and the scan stops after the page, so a large log
	// is not read for a page near its start.
	counted := -1
	if !tenant.Bound() {
		n, err := l.kv.CountNamespace(ctx, eventNamespace)
		if err != nil {
			return nil, 0, fmt.Errorf("mem0 events: count: %w", err)
		}
		counted = n
	}
	err := l.scan(ctx, func(decode func(*Event) error) (bool, error) {
		var ev *Event
		if tenant.Bound() || (total >= offset && len(out) < limit) {
			ev = new(Event)
			if err := decode(ev); err != nil {
				return false, err
			}
			if !tenant.Sees(ev.Tenant) {
				return true, nil
			}
		}
		total++
		switch {
		case total <= offset:
			return true, nil // counted, not returned
		case len(out) >= limit:
			return counted < 0, nil // the page is full: go on only to count
		}
		out = append(out, ev)
		return true, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("mem0 events: list: %w", err)
	}
	if counted >= 0 {
		// Counted before the scan: an event added in between may be on
		// the page but not in the count.
		total = max(counted, total)
	}
	return out, total, nil
}

// scan calls fn with every event, newest first, as a function that
// decodes it, until fn returns false or an error.
func (l *EventLog) scan(ctx context.Context, fn func(decode func(*Event) error) (bool, error)) error {
	var ferr error
	err := l.kv.ScanNamespace(ctx, eventNamespace, true, func(id string, b []byte) bool {
		var more bool
		more, ferr = fn(func(ev *Event) error {
			if err := json.Unmarshal(b, ev); err != nil {
				return fmt.Errorf("decode %s: %w", id, err)
			}
			return nil
		})
		return more && ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	return err
}

// Erase removes the payload (the request's text) of every event match
// selects, keeping its id, type, writes and times, and returns how many
// it changed. An erasure calls it (see memory.Governor.Erase); it may run
// again and changes nothing twice.
func (l *EventLog) Erase(ctx context.Context, match func(*Event) bool) (int, error) {
	if l == nil {
		return 0, nil
	}
	var hit []*Event
	err := l.scan(ctx, func(decode func(*Event) error) (bool, error) {
		ev := new(Event)
		if err := decode(ev); err != nil {
			return false, err
		}
		if len(ev.Payload) > 0 && match(ev) {
			hit = append(hit, ev)
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("mem0 events: erase: %w", err)
	}
	for _, ev := range hit {
		ev.Payload = nil
		if err := l.Put(ctx, ev); err != nil {
			return 0, fmt.Errorf("mem0 events: erase: %w", err)
		}
	}
	return len(hit), nil
}
