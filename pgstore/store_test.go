package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/pgstore"
)

// withConn runs fn on a connection to url of its own, outside any store.
func withConn(t *testing.T, url string, fn func(context.Context, *pgx.Conn) error) error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	return fn(ctx, conn)
}

// sql runs a statement outside any store.
func sql(t *testing.T, url, q string, args ...any) error {
	t.Helper()
	return withConn(t, url, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, q, args...)
		return err
	})
}

// count runs a query of one integer outside any store.
func count(t *testing.T, url, q string) int {
	t.Helper()
	var n int
	if err := withConn(t, url, func(ctx context.Context, conn *pgx.Conn) error { return conn.QueryRow(ctx, q).Scan(&n) }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOpenMigratesOnceWhenInstancesStartTogether opens one fresh database
// from several goroutines at once: each Open succeeds, each migration is
// applied once, and opening again applies nothing.
func TestOpenMigratesOnceWhenInstancesStartTogether(t *testing.T) {
	url := pgtest.New(t)
	const instances = 8
	var wg sync.WaitGroup
	errs := make(chan error, instances)
	for i := range instances {
		wg.Go(func() {
			st, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, Instance: fmt.Sprint("i", i)})
			if err == nil {
				err = st.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("open: %v", err)
		}
	}
	migrations := count(t, url, "SELECT count(*) FROM memgate_schema_migrations")
	if migrations == 0 {
		t.Fatal("no migration recorded")
	}
	if dup := count(t, url, "SELECT count(*) - count(DISTINCT name) FROM memgate_schema_migrations"); dup != 0 {
		t.Fatalf("%d migrations recorded twice", dup)
	}
	open(t, url)
	if after := count(t, url, "SELECT count(*) FROM memgate_schema_migrations"); after != migrations {
		t.Fatalf("reopening: %d migrations recorded, %d before", after, migrations)
	}
}

// TestOpenRefusesANewerSchema: a database migrated by a later memgate is
// not written by this one.
func TestOpenRefusesANewerSchema(t *testing.T) {
	url := pgtest.New(t)
	open(t, url)
	if err := sql(t, url, "INSERT INTO memgate_schema_migrations (version, name) VALUES (9999, '9999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	if st, err := pgstore.Open(context.Background(), pgstore.Options{URL: url}); err == nil {
		st.Close()
		t.Fatal("opened a database whose schema is newer than this binary's")
	}
}

// TestAuditLogIsAppendOnly: the database itself refuses to change or
// remove an event, whoever asks.
func TestAuditLogIsAppendOnly(t *testing.T) {
	url := pgtest.New(t)
	st := open(t, url)
	if err := st.Update(context.Background(), func(tx memory.Tx) error {
		return tx.AppendEvent(&memory.Event{ID: "e1", Type: memory.EventApplied, RecordID: "r1"})
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"UPDATE memgate_events SET shadowed = true",
		"DELETE FROM memgate_events WHERE id = 'e1'",
		"TRUNCATE memgate_events",
	} {
		if err := sql(t, url, q); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}
	// Appending an event id again does not replace it either.
	err := st.Update(context.Background(), func(tx memory.Tx) error {
		return tx.AppendEvent(&memory.Event{ID: "e1", Type: memory.EventRolledBack})
	})
	if err == nil {
		t.Error("an event was appended over another with its id")
	}
	if n := count(t, url, "SELECT count(*) FROM memgate_events"); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

func TestKV(t *testing.T) {
	st := open(t, pgtest.New(t))
	ctx := context.Background()
	if _, err := st.Get(ctx, "slack", "missing"); !errors.Is(err, storeapi.ErrNotFound) {
		t.Fatalf("get of a missing key: %v, want storeapi.ErrNotFound", err)
	}
	puts := []struct{ ns, k, v string }{{"slack", "b", "1"}, {"slack", "a", "2"}, {"mem0", "z", "3"}, {"slack", "b", "4"}, {"slack", "e", ""}}
	for _, p := range puts {
		if err := st.Put(ctx, p.ns, p.k, []byte(p.v)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := st.Get(ctx, "slack", "b"); err != nil || string(v) != "4" {
		t.Fatalf("get slack/b: %q, %v; want the last value put", v, err)
	}
	if _, err := st.Get(ctx, "mem0", "b"); !errors.Is(err, storeapi.ErrNotFound) {
		t.Fatalf("namespaces are apart: %v", err)
	}
	var got []string
	err := st.View(ctx, func(tx memory.ReadTx) error {
		got = nil
		return tx.(storeapi.ExportTx).ScanKV(func(ns, k string, v []byte) bool {
			got = append(got, ns+"/"+k+"="+string(v))
			return true
		})
	})
	if want := []string{"mem0/z=3", "slack/a=2", "slack/b=4", "slack/e="}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("scan kv: %v, %v; want %v", got, err, want)
	}
}

func TestExportScans(t *testing.T) {
	st := open(t, pgtest.New(t))
	ctx := context.Background()
	err := st.Update(ctx, func(tx memory.Tx) error {
		for i, status := range []memory.Status{memory.StatusRolledBack, memory.StatusActive, memory.StatusPending, memory.StatusSuperseded} {
			id := fmt.Sprintf("r%d", 4-i)
			if err := errors.Join(
				tx.PutRecord(&memory.Record{ID: id, SlotID: "s" + id, SubjectID: "a", Status: status}),
				tx.PutSlot(&memory.Slot{ID: "s" + id, SubjectID: "a"}),
				tx.PutRollbackPoint(&memory.RollbackPoint{ID: memory.RollbackPointID(id), RecordID: id}),
			); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var recs, slots, points []string
	err = st.View(ctx, func(rtx memory.ReadTx) error {
		tx, ok := rtx.(storeapi.ExportTx)
		if !ok {
			t.Fatal("a read transaction offers no export scans")
		}
		recs, slots, points = nil, nil, nil
		return errors.Join(
			tx.ScanRecords(func(r *memory.Record) bool { recs = append(recs, r.ID+":"+string(r.Status)); return true }),
			tx.ScanSlots(func(s *memory.Slot) bool { slots = append(slots, s.ID); return true }),
			tx.ScanRollbackPoints(func(p *memory.RollbackPoint) bool { points = append(points, p.ID); return true }),
		)
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRecs := []string{"r1:superseded", "r2:pending_review", "r3:active", "r4:rolled_back"}
	if !slices.Equal(recs, wantRecs) || !slices.Equal(slots, []string{"sr1", "sr2", "sr3", "sr4"}) ||
		!slices.Equal(points, []string{"rp_r1", "rp_r2", "rp_r3", "rp_r4"}) {
		t.Fatalf("export scans: records %v slots %v points %v", recs, slots, points)
	}
}

func TestScanActiveIndex(t *testing.T) {
	st := open(t, pgtest.New(t))
	ctx := context.Background()
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC)
	rec := func(id, subject string, status memory.Status, scope memory.Scope) *memory.Record {
		return &memory.Record{ID: id, SlotID: "s" + id, SubjectID: subject, Status: status, Layer: memory.LayerKnowledge,
			Summary: "about " + id, Scope: scope, CreatedAt: at, ActivatedAt: at.Add(time.Second)}
	}
	alice, bob := memory.Scope{UserID: "alice"}, memory.Scope{UserID: "bob", AgentID: "bot"}
	put := func(rs ...*memory.Record) {
		t.Helper()
		if err := st.Update(ctx, func(tx memory.Tx) error {
			for _, r := range rs {
				if err := tx.PutRecord(r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(rec("r3", "p", memory.StatusActive, alice), rec("r1", "q", memory.StatusActive, bob),
		rec("r2", "p", memory.StatusActive, bob), rec("r4", "p", memory.StatusPending, alice))
	scan := func(subject string, scope memory.Scope) (ids []string, entries map[string]storeapi.ActiveEntry, versions map[string]uint64) {
		t.Helper()
		err := st.View(ctx, func(tx memory.ReadTx) error {
			ids, entries, versions = nil, map[string]storeapi.ActiveEntry{}, map[string]uint64{}
			return tx.(storeapi.ActiveScanner).ScanActiveIndex(ctx, subject, scope, func(e storeapi.ActiveEntry, v uint64) bool {
				ids = append(ids, e.ID)
				entries[e.ID], versions[e.ID] = e, v
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids, entries, versions
	}
	cases := []struct {
		subject string
		scope   memory.Scope
		want    []string
	}{
		{"", memory.Scope{}, []string{"r2", "r3", "r1"}}, // subject, then id
		{"p", memory.Scope{}, []string{"r2", "r3"}},
		{"", memory.Scope{UserID: "bob"}, []string{"r2", "r1"}},
		{"", memory.Scope{UserID: "bob", AgentID: "other"}, nil},
		{"q", memory.Scope{AgentID: "bot"}, []string{"r1"}},
	}
	for _, c := range cases {
		if got, _, _ := scan(c.subject, c.scope); !slices.Equal(got, c.want) {
			t.Errorf("subject %q scope %+v: %v, want %v", c.subject, c.scope, got, c.want)
		}
	}
	_, entries, before := scan("", memory.Scope{})
	want := storeapi.ActiveEntry{ID: "r3", SubjectID: "p", Layer: memory.LayerKnowledge, Scope: alice, Summary: "about r3",
		CreatedAt: at, ActivatedAt: at.Add(time.Second)}
	if entries["r3"] != want {
		t.Errorf("entry r3: %+v, want %+v", entries["r3"], want)
	}
	changed := rec("r3", "p", memory.StatusActive, alice)
	changed.Summary = "about r3, edited"
	put(changed)
	_, entries, after := scan("", memory.Scope{})
	if after["r3"] <= before["r3"] || after["r2"] != before["r2"] || entries["r3"].Summary != changed.Summary {
		t.Errorf("versions before %v after %v, entry %+v: want r3's version grown, r2's kept", before, after, entries["r3"])
	}
}

// TestClaimNoticesLeasesEachOnce: instances claiming at once get disjoint
// notices, oldest first, only due ones; a lease that ended (its holder
// died) or a rescheduled notice is claimed again.
func TestClaimNoticesLeasesEachOnce(t *testing.T) {
	url := pgtest.New(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	const notices = 40
	err := a.Update(ctx, func(tx memory.Tx) error {
		for i := range notices {
			if err := tx.PutNotice(&memory.Notice{ID: fmt.Sprintf("o%03d", i), Kind: memory.NoticeParked}); err != nil {
				return err
			}
		}
		return tx.PutNotice(&memory.Notice{ID: "o999", NextAttempt: time.Now().Add(time.Hour)}) // not due
	})
	if err != nil {
		t.Fatal(err)
	}
	first := claim(t, a, "a", time.Minute, 3, []string{"o000", "o001", "o002"})
	// Four claimers on two instances take the rest, a few at a time.
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for i := range 4 {
		st := []*pgstore.Store{a, b}[i%2]
		wg.Go(func() {
			for {
				ns, err := st.ClaimNotices(ctx, fmt.Sprint("claimer", i), time.Minute, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ns) == 0 {
					return
				}
				mu.Lock()
				for _, n := range ns {
					claimed[n.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for id, n := range claimed {
		if n != 1 || slices.Contains(first, id) || id == "o999" {
			t.Errorf("notice %s claimed %d times by the claimers", id, n)
		}
	}
	if len(claimed) != notices-3 {
		t.Errorf("the claimers took %d notices, want %d", len(claimed), notices-3)
	}
	// A lease that has ended (its holder died) frees its notice; so does
	// a reschedule of a leased one.
	if err := a.Update(ctx, func(tx memory.Tx) error {
		return errors.Join(tx.PutNotice(&memory.Notice{ID: "o500"}), tx.PutNotice(&memory.Notice{ID: "o600"}))
	}); err != nil {
		t.Fatal(err)
	}
	claim(t, b, "dead", -time.Second, 1, []string{"o500"})
	if err := a.Update(ctx, func(tx memory.Tx) error {
		return tx.PutNotice(&memory.Notice{ID: "o001", Attempts: 1, NextAttempt: time.Now().Add(-time.Second)})
	}); err != nil {
		t.Fatal(err)
	}
	claim(t, b, "b", time.Minute, 10, []string{"o001", "o500", "o600"})
}

// claim claims notices and fails unless it got want, in order.
func claim(t *testing.T, st *pgstore.Store, owner string, lease time.Duration, limit int, want []string) []string {
	t.Helper()
	ns, err := st.ClaimNotices(context.Background(), owner, lease, limit)
	if got := noticeIDs(ns); err != nil || !slices.Equal(got, want) {
		t.Fatalf("%s claims %d for %v: %v, %v; want %v", owner, limit, lease, got, err, want)
	}
	return want
}

func noticeIDs(ns []*memory.Notice) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// TestUnreachableAndClosedAreUnavailable: a database that refuses
// connections at Open, and a store used after Close, answer EUNAVAILABLE
// (503), not an internal error.
func TestUnreachableAndClosedAreUnavailable(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = pgstore.Open(ctx, pgstore.Options{URL: "postgres://memgate@" + addr + "/memgate?connect_timeout=5"})
	if memory.ErrorCode(err) != memory.EUNAVAILABLE {
		t.Errorf("open of an unreachable database: %v, want code %s", err, memory.EUNAVAILABLE)
	}
	st, err := pgstore.Open(ctx, pgstore.Options{URL: pgtest.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Writable(); err != nil {
		t.Fatalf("writable when open: %v", err)
	}
	st.Close()
	calls := map[string]error{
		"update":   st.Update(ctx, func(memory.Tx) error { return nil }),
		"view":     st.View(ctx, func(memory.ReadTx) error { return nil }),
		"put":      st.Put(ctx, "n", "k", nil),
		"writable": st.Writable(),
	}
	_, calls["get"] = st.Get(ctx, "n", "k")
	_, calls["claim"] = st.ClaimNotices(ctx, "me", time.Minute, 1)
	for name, err := range calls {
		if memory.ErrorCode(err) != memory.EUNAVAILABLE {
			t.Errorf("%s after close: %v, want code %s", name, err, memory.EUNAVAILABLE)
		}
	}
}
