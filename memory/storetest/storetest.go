// Package storetest is the conformance suite every memory.Store passes:
// what one entity written reads back as, the order of every scan, the
// codes of lookups that find nothing, atomic updates, snapshots and
// concurrent updates. Each store's tests call Run, so the stores are
// proven to behave alike.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

// Open returns an empty store for one subtest; the store is closed by the
// test's cleanups.
type Open func(t *testing.T) memory.Store

// Run runs the suite, each case on a store of its own.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		run  func(t *testing.T, s memory.Store)
	}{
		{"entities read back as written", testEntities},
		{"unknown ids are not found", testNotFound},
		{"slot records and pending in id order", testSlotRecords},
		{"subject slots", testSubjectSlots},
		{"active records by subject then id", testScanActive},
		{"pending queue follows status", testScanPending},
		{"records by run and actor", testScanByActor},
		{"events in id order after a cursor", testScanEvents},
		{"shadowed events both ways", testScanShadowed},
		{"events of a record", testRecordEvents},
		{"notices put, scanned, deleted", testNotices},
		{"a failed update writes nothing", testAtomicUpdate},
		{"an update reads its own writes", testReadYourWrites},
		{"a view reads one snapshot", testSnapshot},
		{"conflicting updates all apply", testConflictingUpdates},
		{"a scan stops when fn says so", testScanStops},
		{"the audit log is a chain in commit order", testAuditChain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func record(id, slot, subject string, status memory.Status) *memory.Record {
	return &memory.Record{ID: id, SlotID: slot, SubjectID: subject, Layer: memory.LayerState, FactType: "f",
		Summary: "summary of " + id, Status: status, CandidateSource: memory.SourceUser, CreatedAt: base}
}

func update(t *testing.T, s memory.Store, fn func(memory.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("update: %v", err)
	}
}

func view(t *testing.T, s memory.Store, fn func(memory.ReadTx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("view: %v", err)
	}
}

func putRecords(t *testing.T, s memory.Store, rs ...*memory.Record) {
	t.Helper()
	update(t, s, func(tx memory.Tx) error {
		for _, r := range rs {
			if err := tx.PutRecord(r); err != nil {
				return err
			}
		}
		return nil
	})
}

func ids[T any](vs []*T, id func(*T) string) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, id(v))
	}
	return out
}

func recordIDs(rs []*memory.Record) []string {
	return ids(rs, func(r *memory.Record) string { return r.ID })
}
func eventIDs(es []*memory.Event) []string {
	return ids(es, func(e *memory.Event) string { return e.ID })
}

func collect[T any](t *testing.T, s memory.Store, scan func(memory.ReadTx, func(*T) bool) error) []*T {
	t.Helper()
	var out []*T
	view(t, s, func(tx memory.ReadTx) error {
		out = nil // a store may run fn again
		return scan(tx, func(v *T) bool { out = append(out, v); return true })
	})
	return out
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func testEntities(t *testing.T, s memory.Store) {
	rec := record("r1", "s1", "subj", memory.StatusActive)
	rec.Value = json.RawMessage(`{"b":1,"a":[true,null]}`)
	rec.Scope = memory.Scope{UserID: "u", AgentID: "a"}
	rec.Actor = memory.Actor{AgentID: "agent", RunID: "run"}
	rec.Metadata = map[string]any{"k": "v"}
	rec.ActivatedAt = base.Add(time.Nanosecond * 123456789)
	slot := &memory.Slot{ID: "s1", SubjectID: "subj", FactType: "f", Layer: memory.LayerState, Head: "r1", Versions: 1, Rev: 7, CreatedAt: base, UpdatedAt: base}
	point := &memory.RollbackPoint{ID: memory.RollbackPointID("r1"), SlotID: "s1", SubjectID: "subj", RecordID: "r1", CreatedAt: base}
	update(t, s, func(tx memory.Tx) error {
		return errors.Join(tx.PutRecord(rec), tx.PutSlot(slot), tx.PutRollbackPoint(point))
	})
	view(t, s, func(tx memory.ReadTx) error {
		r, err := tx.Record("r1")
		if err != nil {
			return err
		}
		same(t, "record", r, rec)
		if string(r.Value) != string(rec.Value) {
			t.Errorf("value bytes: got %s, want %s", r.Value, rec.Value)
		}
		sl, err := tx.Slot("s1")
		if err != nil {
			return err
		}
		same(t, "slot", sl, slot)
		p, err := tx.RollbackPoint(point.ID)
		if err != nil {
			return err
		}
		same(t, "rollback point", p, point)
		return nil
	})
	// A second write replaces the first.
	rec2 := *rec
	rec2.Status, rec2.SupersededBy = memory.StatusSuperseded, "r2"
	putRecords(t, s, &rec2)
	view(t, s, func(tx memory.ReadTx) error {
		r, err := tx.Record("r1")
		if err != nil {
			return err
		}
		same(t, "record rewritten", r, &rec2)
		return nil
	})
}

func testNotFound(t *testing.T, s memory.Store) {
	cases := []struct {
		what string
		get  func(memory.ReadTx) error
	}{
		{"record", func(tx memory.ReadTx) error { _, err := tx.Record("nope"); return err }},
		{"slot", func(tx memory.ReadTx) error { _, err := tx.Slot("nope"); return err }},
		{"rollback point", func(tx memory.ReadTx) error { _, err := tx.RollbackPoint("nope"); return err }},
	}
	for _, c := range cases {
		var got error
		view(t, s, func(tx memory.ReadTx) error { got = c.get(tx); return nil })
		if memory.ErrorCode(got) != memory.ENOTFOUND {
			t.Errorf("%s: got %v, want code %s", c.what, got, memory.ENOTFOUND)
		}
	}
	var got error
	view(t, s, func(tx memory.ReadTx) error {
		got = tx.ScanByActor("nobody", "x", func(*memory.Record) bool { return true })
		return nil
	})
	if memory.ErrorCode(got) != memory.EINVALID {
		t.Errorf("unknown actor kind: got %v, want code %s", got, memory.EINVALID)
	}
	// Empty answers are empty, not nil, as JSON shows them.
	view(t, s, func(tx memory.ReadTx) error {
		rs, err1 := tx.SlotRecords("nope")
		ps, err2 := tx.SlotPending("nope")
		ss, err3 := tx.SubjectSlots("nope")
		es, err4 := tx.RecordEvents("nope")
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return err
		}
		if rs == nil || ps == nil || ss == nil || es == nil || len(rs)+len(ps)+len(ss)+len(es) != 0 {
			t.Errorf("empty lookups: got %v %v %v %v, want four empty non-nil lists", rs, ps, ss, es)
		}
		return nil
	})
}

func testSlotRecords(t *testing.T, s memory.Store) {
	// Written out of order, in two slots, one slot id a prefix of the other.
	putRecords(t, s,
		record("r3", "s", "subj", memory.StatusPending),
		record("r1", "s", "subj", memory.StatusSuperseded),
		record("r2", "s", "subj", memory.StatusActive),
		record("r4", "s", "subj", memory.StatusPending),
		record("r0", "s2", "subj", memory.StatusPending),
	)
	view(t, s, func(tx memory.ReadTx) error {
		all, err := tx.SlotRecords("s")
		if err != nil {
			return err
		}
		same(t, "slot records", recordIDs(all), []string{"r1", "r2", "r3", "r4"})
		pending, err := tx.SlotPending("s")
		if err != nil {
			return err
		}
		same(t, "slot pending", recordIDs(pending), []string{"r3", "r4"})
		return nil
	})
	// Leaving pending leaves the slot's pending list; moving slots moves.
	r3 := record("r3", "s", "subj", memory.StatusRejected)
	r4 := record("r4", "s2", "subj", memory.StatusPending)
	putRecords(t, s, r3, r4)
	view(t, s, func(tx memory.ReadTx) error {
		all, err1 := tx.SlotRecords("s")
		pending, err2 := tx.SlotPending("s")
		other, err3 := tx.SlotPending("s2")
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		same(t, "slot records after", recordIDs(all), []string{"r1", "r2", "r3"})
		same(t, "slot pending after", recordIDs(pending), []string{})
		same(t, "other slot pending", recordIDs(other), []string{"r0", "r4"})
		return nil
	})
}

func testSubjectSlots(t *testing.T, s memory.Store) {
	update(t, s, func(tx memory.Tx) error {
		for _, sl := range []*memory.Slot{{ID: "s2", SubjectID: "a"}, {ID: "s1", SubjectID: "a"}, {ID: "s3", SubjectID: "ab"}} {
			if err := tx.PutSlot(sl); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx memory.ReadTx) error {
		a, err1 := tx.SubjectSlots("a")
		ab, err2 := tx.SubjectSlots("ab")
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		same(t, "slots of a", a, []string{"s1", "s2"})
		same(t, "slots of ab", ab, []string{"s3"})
		return nil
	})
}

func testScanActive(t *testing.T, s memory.Store) {
	putRecords(t, s,
		record("r5", "s5", "b", memory.StatusActive),
		record("r1", "s1", "ab", memory.StatusActive),
		record("r4", "s4", "a", memory.StatusActive),
		record("r2", "s2", "a", memory.StatusActive),
		record("r3", "s3", "a", memory.StatusPending),
		record("r6", "s6", "a", memory.StatusDeleted),
	)
	scanActive := func(subject string) []string {
		return recordIDs(collect(t, s, func(tx memory.ReadTx, fn func(*memory.Record) bool) error {
			return tx.ScanActive(subject, fn)
		}))
	}
	same(t, "every active, by subject then id", scanActive(""), []string{"r2", "r4", "r1", "r5"})
	same(t, "active of a", scanActive("a"), []string{"r2", "r4"})
	// A record leaving active leaves the scan; one entering joins it.
	putRecords(t, s, record("r2", "s2", "a", memory.StatusSuperseded), record("r3", "s3", "a", memory.StatusActive))
	same(t, "active of a after", scanActive("a"), []string{"r3", "r4"})
	// A record moving subject moves in the scan.
	putRecords(t, s, record("r4", "s4", "b", memory.StatusActive))
	same(t, "every active after a move", scanActive(""), []string{"r3", "r1", "r4", "r5"})
}

func testScanPending(t *testing.T, s memory.Store) {
	putRecords(t, s,
		record("r3", "s1", "a", memory.StatusPending),
		record("r1", "s2", "b", memory.StatusPending),
		record("r2", "s1", "a", memory.StatusActive),
	)
	scan := func() []string {
		return recordIDs(collect(t, s, func(tx memory.ReadTx, fn func(*memory.Record) bool) error { return tx.ScanPending(fn) }))
	}
	same(t, "pending", scan(), []string{"r1", "r3"})
	putRecords(t, s, record("r1", "s2", "b", memory.StatusRejected))
	same(t, "pending after a decision", scan(), []string{"r3"})
}

func testScanByActor(t *testing.T, s memory.Store) {
	withActor := func(id string, a memory.Actor) *memory.Record {
		r := record(id, "s"+id, "subj", memory.StatusActive)
		r.Actor = a
		return r
	}
	putRecords(t, s,
		withActor("r3", memory.Actor{RunID: "run1", AgentID: "agent"}),
		withActor("r1", memory.Actor{SessionID: "run1", UserID: "user"}),
		withActor("r2", memory.Actor{RunID: "run2", SessionID: "run2", AgentID: "agent", UserID: "agent"}),
		withActor("r4", memory.Actor{RunID: "run10"}),
	)
	scan := func(kind, id string) []string {
		return recordIDs(collect(t, s, func(tx memory.ReadTx, fn func(*memory.Record) bool) error {
			return tx.ScanByActor(kind, id, fn)
		}))
	}
	cases := []struct {
		kind, id string
		want     []string
	}{
		{"run", "run1", []string{"r1", "r3"}},
		{"run", "run2", []string{"r2"}}, // run and session alike: once
		{"actor", "agent", []string{"r2", "r3"}},
		{"actor", "user", []string{"r1"}},
		{"actor", "run1", []string{}},
		{"run", "nobody", []string{}},
	}
	for _, c := range cases {
		same(t, c.kind+" "+c.id, scan(c.kind, c.id), c.want)
	}
	// Who wrote a record is fixed by its first write.
	putRecords(t, s, withActor("r3", memory.Actor{RunID: "run9"}))
	same(t, "run1 after a rewrite", scan("run", "run1"), []string{"r1", "r3"})
}

func event(id, record string, typ memory.EventType, shadowed bool) *memory.Event {
	e := &memory.Event{ID: id, Type: typ, At: base, RecordID: record}
	if shadowed {
		e.Decision = &memory.Decision{Action: memory.ActionReview, Shadow: &memory.Shadow{Action: memory.ActionApply}}
	}
	return e
}

func appendEvents(t *testing.T, s memory.Store, es ...*memory.Event) {
	t.Helper()
	update(t, s, func(tx memory.Tx) error {
		for _, e := range es {
			if err := tx.AppendEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
}

func testScanEvents(t *testing.T, s memory.Store) {
	appendEvents(t, s, event("e3", "r1", memory.EventApplied, false), event("e1", "r2", memory.EventParked, false))
	appendEvents(t, s, event("e2", "", memory.EventQuarantined, false), event("e10", "r1", memory.EventSuperseded, false))
	scan := func(after string) []string {
		return eventIDs(collect(t, s, func(tx memory.ReadTx, fn func(*memory.Event) bool) error { return tx.ScanEvents(after, fn) }))
	}
	cases := []struct {
		after string
		want  []string
	}{
		{"", []string{"e1", "e10", "e2", "e3"}},
		{"e1", []string{"e10", "e2", "e3"}},
		{"e15", []string{"e2", "e3"}}, // a cursor need not exist
		{"e3", []string{}},
	}
	for _, c := range cases {
		same(t, "events after "+c.after, scan(c.after), c.want)
	}
	if err := s.Update(context.Background(), func(tx memory.Tx) error { return tx.AppendEvent(&memory.Event{Type: memory.EventApplied}) }); err == nil {
		t.Error("an event without an id was appended")
	}
	// Events keep what was appended, and their place in the audit chain.
	got := collect(t, s, func(tx memory.ReadTx, fn func(*memory.Event) bool) error { return tx.ScanEvents("e2", fn) })
	for _, e := range got {
		e.Seq, e.Prev, e.PrevID, e.Salt, e.TextHash, e.Erased = 0, "", "", "", "", ""
	}
	same(t, "event e3", got, []*memory.Event{event("e3", "r1", memory.EventApplied, false)})
}

func testScanShadowed(t *testing.T, s memory.Store) {
	appendEvents(t, s,
		event("e1", "r1", memory.EventApplied, true),
		event("e2", "r2", memory.EventApplied, false),
		event("e3", "r3", memory.EventParked, true),
		event("e4", "r4", memory.EventRejected, true), // not a shadowed kind
		event("e5", "r5", memory.EventApplied, true),
	)
	scan := func(after string, newest bool) []string {
		return eventIDs(collect(t, s, func(tx memory.ReadTx, fn func(*memory.Event) bool) error {
			return tx.ScanShadowed(after, newest, fn)
		}))
	}
	cases := []struct {
		after  string
		newest bool
		want   []string
	}{
		{"", false, []string{"e1", "e3", "e5"}},
		{"e1", false, []string{"e3", "e5"}},
		{"", true, []string{"e5", "e3", "e1"}},
		{"e5", true, []string{"e3", "e1"}},
		{"e4", true, []string{"e3", "e1"}},
		{"e1", true, []string{}},
	}
	for _, c := range cases {
		same(t, fmt.Sprintf("shadowed after %q newest %v", c.after, c.newest), scan(c.after, c.newest), c.want)
	}
}

func testRecordEvents(t *testing.T, s memory.Store) {
	appendEvents(t, s, event("e2", "r1", memory.EventApplied, false), event("e1", "r1", memory.EventParked, false),
		event("e3", "r10", memory.EventApplied, false), event("e4", "", memory.EventQuarantined, false))
	view(t, s, func(tx memory.ReadTx) error {
		r1, err1 := tx.RecordEvents("r1")
		none, err2 := tx.RecordEvents("")
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		same(t, "events of r1", eventIDs(r1), []string{"e1", "e2"})
		same(t, "events of no record", eventIDs(none), []string{})
		return nil
	})
}

func testNotices(t *testing.T, s memory.Store) {
	n := func(id string) *memory.Notice {
		return &memory.Notice{ID: id, Kind: memory.NoticeParked, RecordID: "r", At: base}
	}
	update(t, s, func(tx memory.Tx) error {
		return errors.Join(tx.PutNotice(n("o2")), tx.PutNotice(n("o1")), tx.PutNotice(n("o3")))
	})
	retry := n("o2")
	retry.Attempts, retry.NextAttempt, retry.LastError = 1, base.Add(time.Minute), "slack down"
	update(t, s, func(tx memory.Tx) error {
		return errors.Join(tx.PutNotice(retry), tx.DeleteNotice("o3"), tx.DeleteNotice("never"))
	})
	got := collect(t, s, func(tx memory.ReadTx, fn func(*memory.Notice) bool) error { return tx.ScanNotices(fn) })
	same(t, "notices", got, []*memory.Notice{n("o1"), retry})
}

func testAtomicUpdate(t *testing.T, s memory.Store) {
	boom := errors.New("boom")
	err := s.Update(context.Background(), func(tx memory.Tx) error {
		if err := errors.Join(tx.PutRecord(record("r1", "s1", "a", memory.StatusActive)),
			tx.PutSlot(&memory.Slot{ID: "s1", SubjectID: "a"}), tx.AppendEvent(event("e1", "r1", memory.EventApplied, false)),
			tx.PutNotice(&memory.Notice{ID: "o1"})); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update: got %v, want fn's error", err)
	}
	view(t, s, func(tx memory.ReadTx) error {
		_, err1 := tx.Record("r1")
		_, err2 := tx.Slot("s1")
		if memory.ErrorCode(err1) != memory.ENOTFOUND || memory.ErrorCode(err2) != memory.ENOTFOUND {
			t.Errorf("a failed update left a record (%v) or a slot (%v)", err1, err2)
		}
		return nil
	})
	if es := collect(t, s, func(tx memory.ReadTx, fn func(*memory.Event) bool) error { return tx.ScanEvents("", fn) }); len(es) != 0 {
		t.Errorf("a failed update appended %d events", len(es))
	}
	if ns := collect(t, s, func(tx memory.ReadTx, fn func(*memory.Notice) bool) error { return tx.ScanNotices(fn) }); len(ns) != 0 {
		t.Errorf("a failed update queued %d notices", len(ns))
	}
}

func testReadYourWrites(t *testing.T, s memory.Store) {
	update(t, s, func(tx memory.Tx) error {
		r := record("r1", "s1", "a", memory.StatusPending)
		if err := errors.Join(tx.PutRecord(r), tx.PutSlot(&memory.Slot{ID: "s1", SubjectID: "a", Rev: 1}),
			tx.AppendEvent(event("e1", "r1", memory.EventParked, false))); err != nil {
			return err
		}
		r.Status = memory.StatusActive // the caller's record changes after the write: the write keeps what it was
		got, err := tx.Record("r1")
		if err != nil {
			return err
		}
		pending, err1 := tx.SlotPending("s1")
		events, err2 := tx.RecordEvents("r1")
		slot, err3 := tx.Slot("s1")
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		if got.Status != memory.StatusPending || len(pending) != 1 || len(events) != 1 || slot.Rev != 1 {
			t.Errorf("in the update: record %s, %d pending, %d events, slot rev %d; want its own writes", got.Status, len(pending), len(events), slot.Rev)
		}
		if err := tx.PutRecord(r); err != nil {
			return err
		}
		var active []string
		err = tx.ScanActive("a", func(r *memory.Record) bool { active = append(active, r.ID); return true })
		same(t, "active after a second write", active, []string{"r1"})
		return err
	})
}

func testSnapshot(t *testing.T, s memory.Store) {
	update(t, s, func(tx memory.Tx) error { return tx.PutSlot(&memory.Slot{ID: "s", SubjectID: "a", Rev: 1}) })
	var first, second uint64
	view(t, s, func(tx memory.ReadTx) error {
		sl, err := tx.Slot("s")
		if err != nil {
			return err
		}
		first = sl.Rev
		// Another update commits while this view is open.
		done := make(chan error, 1)
		go func() {
			done <- s.Update(context.Background(), func(tx memory.Tx) error {
				return tx.PutSlot(&memory.Slot{ID: "s", SubjectID: "a", Rev: 2})
			})
		}()
		if err := <-done; err != nil {
			return err
		}
		sl, err = tx.Slot("s")
		if err != nil {
			return err
		}
		second = sl.Rev
		return nil
	})
	if first != 1 || second != 1 {
		t.Errorf("a view read rev %d then %d, want 1 both times", first, second)
	}
	view(t, s, func(tx memory.ReadTx) error {
		if sl, err := tx.Slot("s"); err != nil || sl.Rev != 2 {
			t.Errorf("after the update: slot %+v, %v; want rev 2", sl, err)
		}
		return nil
	})
}

// testConflictingUpdates increments a slot's Rev from several goroutines:
// each Update reads it and writes it plus one, so a lost update (two
// transactions reading the same Rev and both committing) shows as a total
// below the number of updates. The store must detect the conflict and
// retry (or serialize).
func testConflictingUpdates(t *testing.T, s memory.Store) {
	const writers, each = 4, 10
	update(t, s, func(tx memory.Tx) error { return tx.PutSlot(&memory.Slot{ID: "s", SubjectID: "a"}) })
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for range writers {
		wg.Go(func() {
			for range each {
				errs <- s.Update(context.Background(), func(tx memory.Tx) error {
					sl, err := tx.Slot("s")
					if err != nil {
						return err
					}
					sl.Rev++
					return tx.PutSlot(sl)
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("update: %v", err)
		}
	}
	view(t, s, func(tx memory.ReadTx) error {
		sl, err := tx.Slot("s")
		if err != nil {
			return err
		}
		if sl.Rev != writers*each {
			t.Errorf("rev %d after %d increments: updates were lost", sl.Rev, writers*each)
		}
		return nil
	})
}

func testScanStops(t *testing.T, s memory.Store) {
	var rs []*memory.Record
	for i := range 600 { // more than a page of a paging store
		rs = append(rs, record(fmt.Sprintf("r%04d", i), "s", "a", memory.StatusActive))
	}
	putRecords(t, s, rs...)
	var seen []string
	view(t, s, func(tx memory.ReadTx) error {
		seen = nil
		return tx.ScanActive("a", func(r *memory.Record) bool {
			seen = append(seen, r.ID)
			return len(seen) < 300
		})
	})
	if len(seen) != 300 || seen[299] != "r0299" {
		t.Errorf("the scan went on after fn said stop: %d records, last %v", len(seen), seen[len(seen)-1:])
	}
	all := collect(t, s, func(tx memory.ReadTx, fn func(*memory.Record) bool) error { return tx.ScanActive("", fn) })
	if !slices.Equal(recordIDs(all), recordIDs(rs)) {
		t.Errorf("a long scan read %d records, want %d in order", len(all), len(rs))
	}
}

// testAuditChain appends events from concurrent updates and checks, on a
// store that keeps the audit log as a chain, that every one is in it once
// and the chain verifies.
func testAuditChain(t *testing.T, s memory.Store) {
	c, ok := s.(memory.AuditChain)
	if !ok {
		t.Skip("the store keeps no audit chain")
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := s.Update(context.Background(), func(tx memory.Tx) error {
					in := json.RawMessage(fmt.Sprintf(`{"candidate":{"summary":"text %d-%d"}}`, w, i))
					if err := tx.AppendEvent(&memory.Event{ID: fmt.Sprintf("w%d-%02d-a", w, i), Type: memory.EventParked, At: base, Input: in}); err != nil {
						return err
					}
					return tx.AppendEvent(&memory.Event{ID: fmt.Sprintf("w%d-%02d-b", w, i), Type: memory.EventApplied, At: base, Reason: "why"})
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep, err := memory.VerifyChain(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Events != writers*each*2 || rep.Last.Seq != writers*each*2 {
		t.Fatalf("want a chain of %d events, got %+v (%v)", writers*each*2, rep, rep.Problem)
	}
	// Each writer's events are in the chain in the order it committed them.
	last := map[string]uint64{}
	err = c.ScanChain(context.Background(), 1, func(pos uint64, id string, _ []byte) error {
		w := id[:2]
		if pos <= last[w] {
			return fmt.Errorf("event %s at %d, after %d", id, pos, last[w])
		}
		last[w] = pos
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// WantChainProblem verifies c's audit chain and checks what it finds: the
// first problem of kind with event id, or (kind "") an intact chain of n
// events. The stores' tamper tests share it.
func WantChainProblem(t *testing.T, c memory.AuditChain, kind, id string, n uint64) {
	t.Helper()
	rep, err := memory.VerifyChain(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if kind == "" {
		if !rep.OK || rep.Events != n {
			t.Fatalf("want %d events verified, got %+v %v", n, rep, rep.Problem)
		}
		return
	}
	if rep.OK || rep.Problem.Kind != kind || rep.Problem.EventID != id {
		t.Fatalf("want %s of %s, got %+v %+v", kind, id, rep, rep.Problem)
	}
}
