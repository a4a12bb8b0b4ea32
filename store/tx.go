package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// Key layout. Ids never contain control characters (memory validates them),
// so 0x00 separates the parts of composite keys unambiguously.
//
//	r/<record>                 record
//	s/<slot>                   slot
//	p/<point>                  rollback point
//	sr/<slot>\0<record>        every record of a slot
//	sp/<slot>\0<record>        pending records of a slot
//	ss/<subject>\0<slot>       slots of a subject
//	a/<subject>\0<record>      active records (value: what a list filter tests)
//	q/<record>                 review queue
//	xr/<run or session>\0<rec> records by run
//	xa/<agent or user>\0<rec>  records by actor
//	e/<event>                  audit log (ids sort by time), sealed (chain.go)
//	ec/<position>              the audit chain: position (8 bytes) -> event id
//	ch/head, ch/migrated       the audit chain's head; all events are in it
//	er/<record>\0<event>       events of a record
//	sh/<event>                 shadowed writes' events (memory.IsShadowed)
//	o/<notice>                 outbox
const sep = "\x00"

func key(parts ...string) []byte {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 1 {
			b.WriteString(sep)
		}
		b.WriteString(p)
	}
	return b.Bytes()
}

type tx struct {
	txn *badger.Txn
	db  *badger.DB
	// The changes this transaction made to the index of active records,
	// for the store's feed, and the records it read: a change is refused
	// for a record it did not read (feed.go).
	changes []storeapi.ActiveChange
	read    map[string]struct{}
	// readOnly is set in a View.
	readOnly bool
	// bytes estimates what committing adds to Badger's logs, for the disk
	// guard (diskguard.go), where values of threshold bytes or more go to
	// the value log (Store.threshold).
	bytes     int64
	threshold int64
	// events are the audit events appended, in order, sealed onto the
	// chain when the transaction commits (chain.go).
	events []*memory.Event
}

var _ memory.Tx = (*tx)(nil)

func (t *tx) get(k []byte, v any, what, id string) error {
	item, err := t.txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return memory.Errorf(memory.ENOTFOUND, "%s %s not found", what, id)
	} else if err != nil {
		return fmt.Errorf("get %s %s: %w", what, id, err)
	}
	return item.Value(func(b []byte) error {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("decode %s %s: %w", what, id, err)
		}
		return nil
	})
}

func (t *tx) put(k []byte, v any) error {
	b, err := memory.MarshalStored(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", k, err)
	}
	return t.set(k, b)
}

func (t *tx) set(k, v []byte) error {
	if err := t.txn.Set(k, v); err != nil {
		return fmt.Errorf("set %q: %w", k, err)
	}
	t.wrote(entryBytes(k, len(v), t.threshold))
	return nil
}

// wrote counts n bytes of logs for the disk guard, and the transaction's
// ending entry with the first.
func (t *tx) wrote(n int64) {
	if t.bytes == 0 {
		n += txnOverhead
	}
	t.bytes += n
}

func (t *tx) del(k []byte) error {
	if err := t.txn.Delete(k); err != nil {
		return fmt.Errorf("delete %q: %w", k, err)
	}
	t.wrote(entryBytes(k, 0, t.threshold))
	return nil
}

// scanKeys calls fn with the last part of every key under prefix, in key
// order (reverse if asked), until fn returns false or an error.
func (t *tx) scanKeys(prefix []byte, fn func(suffix string) (bool, error)) error {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = prefix
	it := t.txn.NewIterator(opts)
	defer it.Close()
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		k := it.Item().Key()
		more, err := fn(string(k[len(prefix):]))
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// scanRecords resolves each index key's trailing record id.
func (t *tx) scanRecords(prefix []byte, fn func(*memory.Record) bool) error {
	return t.scanKeys(prefix, func(suffix string) (bool, error) {
		id := suffix
		if i := bytes.LastIndexByte([]byte(suffix), 0); i >= 0 {
			id = suffix[i+1:]
		}
		r, err := t.Record(id)
		if err != nil {
			return false, err
		}
		return fn(r), nil
	})
}

func (t *tx) Record(id string) (*memory.Record, error) {
	t.readRecord(id)
	var r memory.Record
	if err := t.get(key("r/", id), &r, "memory", id); err != nil {
		return nil, err
	}
	return &r, nil
}

func (t *tx) Slot(id string) (*memory.Slot, error) {
	var s memory.Slot
	if err := t.get(key("s/", id), &s, "slot", id); err != nil {
		return nil, err
	}
	return &s, nil
}

func (t *tx) RollbackPoint(id string) (*memory.RollbackPoint, error) {
	var p memory.RollbackPoint
	if err := t.get(key("p/", id), &p, "rollback point", id); err != nil {
		return nil, err
	}
	return &p, nil
}

func (t *tx) collect(prefix []byte) ([]*memory.Record, error) {
	out := []*memory.Record{}
	err := t.scanRecords(prefix, func(r *memory.Record) bool { out = append(out, r); return true })
	return out, err
}

func (t *tx) SlotRecords(slotID string) ([]*memory.Record, error) {
	return t.collect(append(key("sr/", slotID), 0))
}

func (t *tx) SlotPending(slotID string) ([]*memory.Record, error) {
	return t.collect(append(key("sp/", slotID), 0))
}

func (t *tx) SubjectSlots(subjectID string) ([]string, error) {
	out := []string{}
	err := t.scanKeys(append(key("ss/", subjectID), 0), func(slot string) (bool, error) {
		out = append(out, slot)
		return true, nil
	})
	return out, err
}

func (t *tx) ScanActive(subjectID string, fn func(*memory.Record) bool) error {
	prefix := []byte("a/")
	if subjectID != "" {
		prefix = append(key("a/", subjectID), 0)
	}
	return t.scanRecords(prefix, fn)
}

func (t *tx) ScanPending(fn func(*memory.Record) bool) error {
	return t.scanRecords([]byte("q/"), fn)
}

func (t *tx) ScanByActor(kind, id string, fn func(*memory.Record) bool) error {
	switch kind {
	case "run":
		return t.scanRecords(append(key("xr/", id), 0), fn)
	case "actor":
		return t.scanRecords(append(key("xa/", id), 0), fn)
	}
	return memory.Errorf(memory.EINVALID, "unknown actor kind %q", kind)
}

func (t *tx) ScanEvents(after string, fn func(*memory.Event) bool) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte("e/")
	it := t.txn.NewIterator(opts)
	defer it.Close()
	start := key("e/", after)
	for it.Seek(start); it.ValidForPrefix(opts.Prefix); it.Next() {
		item := it.Item()
		if after != "" && bytes.Equal(item.Key(), start) {
			continue
		}
		var ev memory.Event
		if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &ev) }); err != nil {
			return fmt.Errorf("decode event %s: %w", item.Key(), err)
		}
		if !fn(&ev) {
			return nil
		}
	}
	return nil
}

// ScanShadowed walks the sh/ index AppendEvent keeps of shadowed writes
// (memory.IsShadowed): a key per event, no value, so listing a page reads
// its own events only, however long the audit log.
func (t *tx) ScanShadowed(after string, newest bool, fn func(*memory.Event) bool) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix, opts.Reverse, opts.PrefetchValues = []byte("sh/"), newest, false
	it := t.txn.NewIterator(opts)
	defer it.Close()
	start := key("sh/", after)
	if newest && after == "" {
		start = append([]byte("sh/"), 0xff) // past every id: ULIDs are ASCII
	}
	for it.Seek(start); it.ValidForPrefix(opts.Prefix); it.Next() {
		k := it.Item().Key()
		if after != "" && bytes.Equal(k, start) {
			continue
		}
		id := string(k[len(opts.Prefix):])
		var ev memory.Event
		if err := t.get(key("e/", id), &ev, "event", id); err != nil {
			return err
		}
		if !fn(&ev) {
			return nil
		}
	}
	return nil
}

func (t *tx) RecordEvents(recordID string) ([]*memory.Event, error) {
	out := []*memory.Event{}
	err := t.scanKeys(append(key("er/", recordID), 0), func(id string) (bool, error) {
		var ev memory.Event
		if err := t.get(key("e/", id), &ev, "event", id); err != nil {
			return false, err
		}
		out = append(out, &ev)
		return true, nil
	})
	return out, err
}

func (t *tx) ScanNotices(fn func(*memory.Notice) bool) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte("o/")
	it := t.txn.NewIterator(opts)
	defer it.Close()
	for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix); it.Next() {
		var n memory.Notice
		if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &n) }); err != nil {
			return fmt.Errorf("decode notice %s: %w", it.Item().Key(), err)
		}
		if !fn(&n) {
			return nil
		}
	}
	return nil
}

// PutRecord writes a record and keeps every index in step with its status.
func (t *tx) PutRecord(r *memory.Record) error {
	old, err := t.Record(r.ID)
	if memory.ErrorCode(err) == memory.ENOTFOUND {
		old, err = nil, nil
	} else if err != nil {
		return err
	}
	return t.putRecord(old, r)
}

// putRecord writes r over old, its stored version (nil if new), keeping
// every index in step; ReplaceRecord (bulk.go) calls it with an old
// version its caller already read.
func (t *tx) putRecord(old, r *memory.Record) error {
	if old == nil {
		for _, k := range actorKeys(r) {
			if err := t.set(k, nil); err != nil {
				return err
			}
		}
	}
	if old == nil || old.SlotID != r.SlotID {
		if old != nil {
			if err := t.del(key("sr/", old.SlotID, r.ID)); err != nil {
				return err
			}
		}
		if err := t.set(key("sr/", r.SlotID, r.ID), nil); err != nil {
			return err
		}
	}
	if err := t.index(old, r, memory.StatusPending, func(x *memory.Record) [][]byte {
		return [][]byte{key("sp/", x.SlotID, x.ID), key("q/", x.ID)}
	}); err != nil {
		return err
	}
	if old != nil && old.Status == memory.StatusActive {
		if err := t.del(key("a/", old.SubjectID, old.ID)); err != nil {
			return err
		}
		if err := t.activeChanged(old, false); err != nil {
			return err
		}
	}
	if r.Status == memory.StatusActive {
		if err := t.set(key("a/", r.SubjectID, r.ID), activeValue(r)); err != nil {
			return err
		}
		if err := t.activeChanged(r, true); err != nil {
			return err
		}
	}
	return t.put(key("r/", r.ID), r)
}

// The index of active records (a/) holds, as the value of each key, the
// fields a read filters on (storeapi.ActiveEntry): a version byte, in
// version 2 the record's creation and activation times (Unix nanoseconds,
// big-endian, 0 for none), then layer and scope ids each ended by 0x00
// (ids never hold control characters), then the summary. A record with a
// summary too long to keep the value small gets an empty value, as do
// entries written before the index held fields: readers then load the
// record. Version 1, without the times, is still read, and written for a
// time Unix nanoseconds cannot hold.
const (
	activeValueV1     = 1
	activeValueV2     = 2
	maxIndexedSummary = 2 << 10
)

func activeValue(r *memory.Record) []byte {
	if len(r.Summary) > maxIndexedSummary {
		return nil
	}
	var b bytes.Buffer
	created, ok1 := unixNanos(r.CreatedAt)
	activated, ok2 := unixNanos(r.ActivatedAt)
	if ok1 && ok2 {
		b.WriteByte(activeValueV2)
		b.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(created)), uint64(activated)))
	} else {
		b.WriteByte(activeValueV1)
	}
	for _, f := range []string{string(r.Layer), r.Scope.UserID, r.Scope.AgentID, r.Scope.AppID, r.Scope.RunID} {
		b.WriteString(f)
		b.WriteByte(0)
	}
	b.WriteString(r.Summary)
	return b.Bytes()
}

// unixNanos is t in Unix nanoseconds, 0 for the zero time; ok is false
// when they cannot hold it exactly.
func unixNanos(t time.Time) (int64, bool) {
	if t.IsZero() {
		return 0, true
	}
	n := t.UnixNano()
	return n, n != 0 && time.Unix(0, n).Equal(t)
}

func fromUnixNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// activeValueFields returns an index value's fields after its version and
// times, and the times (zero in version 1); ok is false for a value
// holding no fields.
func activeValueFields(v []byte) (fields []byte, created, activated time.Time, ok bool) {
	switch {
	case len(v) > 0 && v[0] == activeValueV1:
		return v[1:], time.Time{}, time.Time{}, true
	case len(v) >= 17 && v[0] == activeValueV2:
		return v[17:], fromUnixNanos(int64(binary.BigEndian.Uint64(v[1:]))),
			fromUnixNanos(int64(binary.BigEndian.Uint64(v[9:]))), true
	}
	return nil, time.Time{}, time.Time{}, false
}

func parseActiveValue(v []byte, e *storeapi.ActiveEntry) bool {
	v, created, activated, ok := activeValueFields(v)
	if !ok {
		return false
	}
	var fields [5]string
	for i := range fields {
		end := bytes.IndexByte(v, 0)
		if end < 0 {
			return false
		}
		fields[i], v = string(v[:end]), v[end+1:]
	}
	e.Layer = memory.Layer(fields[0])
	e.Scope = memory.Scope{UserID: fields[1], AgentID: fields[2], AppID: fields[3], RunID: fields[4]}
	e.Summary = string(v)
	e.CreatedAt, e.ActivatedAt = created, activated
	return true
}

// index keeps the keys of a status index: removed when a record leaves the
// status (or moves), added when it enters it.
func (t *tx) index(old, cur *memory.Record, status memory.Status, keys func(*memory.Record) [][]byte) error {
	if old != nil && old.Status == status {
		for _, k := range keys(old) {
			if err := t.del(k); err != nil {
				return err
			}
		}
	}
	if cur.Status == status {
		for _, k := range keys(cur) {
			if err := t.set(k, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func actorKeys(r *memory.Record) [][]byte {
	var out [][]byte
	seen := map[string]bool{}
	add := func(prefix, id string) {
		if id != "" && !seen[prefix+id] {
			seen[prefix+id] = true
			out = append(out, key(prefix, id, r.ID))
		}
	}
	add("xr/", r.Actor.RunID)
	add("xr/", r.Actor.SessionID)
	add("xa/", r.Actor.AgentID)
	add("xa/", r.Actor.UserID)
	return out
}

func (t *tx) PutSlot(s *memory.Slot) error {
	if err := t.set(key("ss/", s.SubjectID, s.ID), nil); err != nil {
		return err
	}
	return t.put(key("s/", s.ID), s)
}

func (t *tx) PutRollbackPoint(p *memory.RollbackPoint) error { return t.put(key("p/", p.ID), p) }

func (t *tx) AppendEvent(e *memory.Event) error {
	if e.ID == "" {
		return errors.New("append event: no id")
	}
	if e.RecordID != "" {
		if err := t.set(key("er/", e.RecordID, e.ID), nil); err != nil {
			return err
		}
	}
	if memory.IsShadowed(e) {
		if err := t.set(key("sh/", e.ID), nil); err != nil {
			return err
		}
	}
	// Written now so the transaction reads it back; sealed at commit.
	if err := t.put(key("e/", e.ID), e); err != nil {
		return err
	}
	t.wrote(chainEntryBytes)
	c := *e
	for i, x := range t.events {
		if x.ID == e.ID {
			t.events[i] = &c
			return nil
		}
	}
	t.events = append(t.events, &c)
	return nil
}

func (t *tx) PutNotice(n *memory.Notice) error { return t.put(key("o/", n.ID), n) }

func (t *tx) DeleteNotice(id string) error { return t.del(key("o/", id)) }
