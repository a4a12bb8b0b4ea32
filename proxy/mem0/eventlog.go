package mem0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
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

// EventLog keeps Mem0 events in the Badger database beside the records,
// under a key prefix of its own, one small JSON value each. Event ids are
// ULIDs, so iterating the prefix backwards lists the newest first. It
// writes through the store (PutKey), so an event is durable before Put
// returns in every durable mode, group commit included: the add that
// answers with its event id is acknowledged only after that.
type EventLog struct{ db EventDB }

// EventDB is the database the log lives in: a *store.Store.
type EventDB interface {
	// DB is the Badger database, read directly.
	DB() *badger.DB
	// PutKey writes one key of the log's own prefix and returns once it
	// is durable.
	PutKey(ctx context.Context, k, v []byte) error
}

// eventPrefix is the key prefix of events; the store's own prefixes
// (r/, s/, kv/, ...) never start with it.
const eventPrefix = "mem0/ev/"

// NewEventLog returns the event log kept in db.
func NewEventLog(db EventDB) *EventLog { return &EventLog{db: db} }

// Put stores an event, durably.
func (l *EventLog) Put(ctx context.Context, ev *Event) error {
	if l == nil { // a Handler without a log (only through api.go): its events are its versions
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("mem0 events: encode %s: %w", ev.ID, err)
	}
	if err := l.db.PutKey(ctx, []byte(eventPrefix+ev.ID), b); err != nil {
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
	err := l.db.DB().View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(eventPrefix + id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return memory.Errorf(memory.ENOTFOUND, "Event not found or you don't have permission to access it.")
		} else if err != nil {
			return err
		}
		if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &ev) }); err != nil {
			return err
		}
		if !memory.TenantOf(ctx).Sees(ev.Tenant) {
			return memory.Errorf(memory.ENOTFOUND, "Event not found or you don't have permission to access it.")
		}
		return nil
	})
	if err != nil {
		if memory.ErrorCode(err) == memory.ENOTFOUND {
			return nil, err
		}
		return nil, fmt.Errorf("mem0 events: get %s: %w", id, err)
	}
	return &ev, nil
}

// List returns up to limit events after skipping offset, newest first,
// and how many events there are in all: those of the caller's tenant.
func (l *EventLog) List(ctx context.Context, offset, limit int) ([]*Event, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	out := []*Event{}
	total := 0
	err := l.db.DB().View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		tenant := memory.TenantOf(ctx)
		// Without a tenant every event counts, and only those returned are
		// read; a tenant's must be read to be told apart.
		opts.Reverse, opts.Prefix, opts.PrefetchValues = true, []byte(eventPrefix), tenant.Bound()
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek([]byte(eventPrefix + "\xff")); it.Valid(); it.Next() {
			var ev *Event
			if tenant.Bound() || (total >= offset && len(out) < limit) {
				ev = new(Event)
				if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, ev) }); err != nil {
					return fmt.Errorf("decode %s: %w", it.Item().Key(), err)
				}
				if !tenant.Sees(ev.Tenant) {
					continue
				}
			}
			total++
			if total <= offset || len(out) >= limit {
				continue // counted, not returned
			}
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("mem0 events: list: %w", err)
	}
	return out, total, nil
}
