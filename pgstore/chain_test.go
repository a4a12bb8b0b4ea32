package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storetest"
	"github.com/memgate/memgate/pgstore"
)

// sealedEvents opens a store on a fresh database with n events appended,
// each in an update of its own, and sealed, and a plain connection to it.
func sealedEvents(t *testing.T, n int) (*pgstore.Store, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.New(t)
	st := open(t, url)
	for i := range n {
		err := st.Update(ctx, func(tx memory.Tx) error {
			in := json.RawMessage(fmt.Sprintf(`{"candidate":{"summary":"plan number %d"}}`, i))
			return tx.AppendEvent(&memory.Event{ID: fmt.Sprintf("ev%02d", i), Type: memory.EventApplied,
				At: time.Unix(int64(i), 0).UTC(), Input: in})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return st, conn
}

// TestAuditVerifyFindsTamperingInTheDatabase edits, removes and reorders
// one event with SQL, behind memgate's back (triggers off, as an owner of
// the database can), and checks that verification names it.
func TestAuditVerifyFindsTamperingInTheDatabase(t *testing.T) {
	cases := []struct {
		name     string
		sql      []string
		kind, id string
	}{
		{"untouched", nil, "", ""},
		{"text edited", []string{
			`UPDATE memgate_events SET doc = convert_to(replace(convert_from(doc, 'UTF8'), 'plan number 4', 'plan number 5'), 'UTF8') WHERE id = 'ev04'`,
		}, memory.ChainChanged, "ev04"},
		{"decision edited", []string{
			`UPDATE memgate_events SET doc = convert_to(replace(convert_from(doc, 'UTF8'), '"type":"applied"', '"type":"rejected"'), 'UTF8') WHERE id = 'ev02'`,
		}, memory.ChainChanged, "ev02"},
		{"event deleted", []string{`DELETE FROM memgate_events WHERE id = 'ev06'`}, memory.ChainRemoved, "ev06"},
		{"newest event deleted", []string{`DELETE FROM memgate_events WHERE id = 'ev09'`}, memory.ChainRemoved, "ev09"},
		{"two events reordered", []string{
			`UPDATE memgate_events SET seq = -1 WHERE id = 'ev02'`,
			`UPDATE memgate_events SET seq = 3 WHERE id = 'ev03'`,
			`UPDATE memgate_events SET seq = 4 WHERE id = 'ev02'`,
		}, memory.ChainReordered, "ev03"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, conn := sealedEvents(t, 10)
			if len(tc.sql) > 0 {
				if _, err := conn.Exec(ctx, "SET session_replication_role = replica"); err != nil {
					t.Fatal(err)
				}
			}
			for _, q := range tc.sql {
				if tag, err := conn.Exec(ctx, q); err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("%s: %v (%d rows)", q, err, tag.RowsAffected())
				}
			}
			storetest.WantChainProblem(t, st, tc.kind, tc.id, 10)
		})
	}
}

// TestAuditLogRefusesChangesToSealedEvents: with triggers on, a sealed
// event cannot be updated or deleted by SQL.
func TestAuditLogRefusesChangesToSealedEvents(t *testing.T) {
	ctx := context.Background()
	_, conn := sealedEvents(t, 1)
	for _, q := range []string{
		`UPDATE memgate_events SET doc = '{}' WHERE id = 'ev00'`,
		`UPDATE memgate_events SET seq = NULL WHERE id = 'ev00'`,
		`DELETE FROM memgate_events WHERE id = 'ev00'`,
		`TRUNCATE memgate_events`,
	} {
		if _, err := conn.Exec(ctx, q); err == nil {
			t.Errorf("%s: done", q)
		}
	}
}

// TestAuditChainTakesInEventsWrittenBeforeIt: a database whose events were
// written before the chain (schema version 1) has them numbered by
// migration 0002, in id order, and sealed first; new events follow.
func TestAuditChainTakesInEventsWrittenBeforeIt(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE memgate_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		string(v1),
		`INSERT INTO memgate_schema_migrations (version, name) VALUES (1, '0001_init.sql')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"old03", "old01", "old02"} { // inserted out of id order
		doc, _ := json.Marshal(&memory.Event{ID: id, Type: memory.EventApplied, Reason: "from before"})
		if _, err := conn.Exec(ctx, "INSERT INTO memgate_events (id, record_id, shadowed, doc) VALUES ($1, NULL, false, $2)", id, doc); err != nil {
			t.Fatal(err)
		}
	}
	st := open(t, url) // applies 0002
	if err := st.Update(ctx, func(tx memory.Tx) error {
		return tx.AppendEvent(&memory.Event{ID: "new01", Type: memory.EventApplied})
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.WantChainProblem(t, st, "", "", 4)
	var order []string
	if err := st.ScanChain(ctx, 1, func(_ uint64, id string, _ []byte) error { order = append(order, id); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "old01,old02,old03,new01" {
		t.Fatalf("chain order %v", order)
	}
}
