package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

// The optional scans of a read transaction: the active index package
// search reads, and the full scans a snapshot export reads.

var (
	_ storeapi.Snapshot = (*tx)(nil)
	_ storeapi.ExportTx = (*tx)(nil)
)

// ScanActiveIndex calls fn with each active record's entry, of one subject
// when subjectID is not empty, whose scope holds every non-empty id of
// scope, in (subject, record id) order, with the record's version (which
// grows with each write of it), until fn returns false. It has the
// meaning of storeapi.ActiveScanner, times to the nanosecond.
func (t *tx) ScanActiveIndex(ctx context.Context, subjectID string, scope memory.Scope, fn func(storeapi.ActiveEntry, uint64) bool) error {
	var where strings.Builder
	args := []any{"", ""} // the cursor: $1, $2
	cond := func(col, v string) {
		if v != "" {
			args = append(args, v)
			where.WriteString(" AND " + col + " = $" + strconv.Itoa(len(args)))
		}
	}
	cond("subject_id", subjectID)
	cond("scope_user_id", scope.UserID)
	cond("scope_agent_id", scope.AgentID)
	cond("scope_app_id", scope.AppID)
	cond("scope_run_id", scope.RunID)
	q := `SELECT subject_id, id, version, layer, scope_user_id, scope_agent_id, scope_app_id, scope_run_id,
			summary, created_ns, activated_ns
		FROM memgate_records WHERE status = 'active' AND (subject_id, id) > ($1, $2)` + where.String() +
		" ORDER BY subject_id, id" + activeLimit
	// Strings that repeat (subjects, layers, scope ids) are shared between
	// the entries of one scan, as the Badger store shares them.
	intern := map[string]string{}
	in := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		intern[s] = s
		return s
	}
	if err := t.flush(); err != nil {
		return err
	}
	st := &tx{ctx: ctx, tx: t.tx}
	err := scanPages(st, activePageSize, cursor{}, func(c cursor) (string, []any) {
		args[0], args[1] = c[0], c[1]
		return q, args
	}, func(r pgx.CollectableRow) (entryVersion, cursor, error) {
		var e storeapi.ActiveEntry
		var layer string
		var version int64
		var created int64
		var activated *int64
		if err := r.Scan(&e.SubjectID, &e.ID, &version, &layer, &e.Scope.UserID, &e.Scope.AgentID, &e.Scope.AppID,
			&e.Scope.RunID, &e.Summary, &created, &activated); err != nil {
			return entryVersion{}, cursor{}, err
		}
		c := cursor{e.SubjectID, e.ID}
		e.SubjectID, e.Layer = in(e.SubjectID), memory.Layer(in(layer))
		e.Scope = memory.Scope{UserID: in(e.Scope.UserID), AgentID: in(e.Scope.AgentID), AppID: in(e.Scope.AppID), RunID: in(e.Scope.RunID)}
		e.CreatedAt = time.Unix(0, created).UTC()
		if activated != nil {
			e.ActivatedAt = time.Unix(0, *activated).UTC()
		}
		return entryVersion{e, uint64(version)}, c, nil
	}, func(ev entryVersion) (bool, error) { return fn(ev.entry, ev.version), nil })
	if st.err != nil {
		t.fail(st.err)
	}
	if err != nil {
		return fmt.Errorf("pgstore: scan active index: %w", err)
	}
	return nil
}

type entryVersion struct {
	entry   storeapi.ActiveEntry
	version uint64
}

// ScanRecords calls fn with every record, whatever its status, in id
// order, until fn returns false.
func (t *tx) ScanRecords(fn func(*memory.Record) bool) error {
	return scanDocs(t, "memgate_records", "memory", fn)
}

// ScanSlots calls fn with every slot in id order, until fn returns false.
func (t *tx) ScanSlots(fn func(*memory.Slot) bool) error {
	return scanDocs(t, "memgate_slots", "slot", fn)
}

// ScanRollbackPoints calls fn with every rollback point in id order, until
// fn returns false.
func (t *tx) ScanRollbackPoints(fn func(*memory.RollbackPoint) bool) error {
	return scanDocs(t, "memgate_rollback_points", "rollback point", fn)
}

// scanDocs decodes the doc of each row of table, in id order.
func scanDocs[T any](t *tx, table, what string, fn func(*T) bool) error {
	return scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT id, doc FROM " + table + " WHERE id > $1 ORDER BY id" + limit, []any{c[0]}
	}, docRow[T](what), each(fn))
}

// ScanKV calls fn with every value Put kept, in (namespace, key) order,
// until fn returns false.
func (t *tx) ScanKV(fn func(namespace, key string, value []byte) bool) error {
	type kv struct {
		ns, k string
		v     []byte
	}
	return scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT namespace, key, value FROM memgate_kv WHERE (namespace, key) > ($1, $2) ORDER BY namespace, key" + limit,
			[]any{c[0], c[1]}
	}, func(r pgx.CollectableRow) (kv, cursor, error) {
		var e kv
		err := r.Scan(&e.ns, &e.k, &e.v)
		return e, cursor{e.ns, e.k}, err
	}, func(e kv) (bool, error) { return fn(e.ns, e.k, e.v), nil })
}
