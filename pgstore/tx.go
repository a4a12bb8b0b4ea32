package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/memory"
)

// tx is a transaction as memory sees it. Its methods take no context:
// they run under the one Update or View was given.
type tx struct {
	ctx context.Context
	tx  pgx.Tx
	// err is the first error the database returned: after it the server
	// refuses every statement of the transaction, and the runner decides
	// on it (a lost race is retried) whatever fn made of it.
	err error
	// writes are the statements written since the last read, sent in one
	// round trip (a pipeline) before the next read or COMMIT: a write
	// returns nothing fn needs, and a read sees every write before it. A
	// write's error is therefore returned by the read or the Update
	// after it.
	writes pgx.Batch
	// events are the ids of the audit events appended: after the commit
	// the sealer is woken to put them into the chain (chain.go).
	events []string
}

var (
	_ memory.Tx               = (*tx)(nil)
	_ memory.ActorSlotScanner = (*tx)(nil)
)

// fail records err as the transaction's database error (the first one
// counts) and returns it.
func (t *tx) fail(err error) error {
	if t.err == nil {
		t.err = err
	}
	return err
}

// exec queues a write.
func (t *tx) exec(sql string, args ...any) error {
	if t.err != nil {
		return t.err // the server would refuse it
	}
	t.writes.Queue(sql, args...)
	return nil
}

// flush sends the queued writes.
func (t *tx) flush() error {
	if t.err != nil || t.writes.Len() == 0 {
		return t.err
	}
	b := t.writes
	t.writes = pgx.Batch{}
	if err := t.tx.SendBatch(t.ctx, &b).Close(); err != nil {
		return fmt.Errorf("write: %w", t.fail(err))
	}
	return nil
}

// getDoc decodes the doc column of the row query finds into v; no row is
// ENOTFOUND, worded as the Badger store words it.
func (t *tx) getDoc(query, what, id string, v any) error {
	if err := t.flush(); err != nil {
		return err
	}
	var doc []byte
	err := t.tx.QueryRow(t.ctx, query, id).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Errorf(memory.ENOTFOUND, "%s %s not found", what, id)
	} else if err != nil {
		return fmt.Errorf("get %s %s: %w", what, id, t.fail(err))
	}
	if err := json.Unmarshal(doc, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", what, id, err)
	}
	return nil
}

func encode(what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	return b, nil
}

// pageSize is the number of rows a scan reads at a time. A scan reads a
// page, then calls fn for each row, so fn may use the transaction (one
// connection runs one query at a time) and a long scan holds one page.
const pageSize = 256

// activePageSize is the page of ScanActiveIndex, which search runs for
// every query on this store: its rows are small, and each page is a round
// trip (a search of 10,000 entries: 5 pages instead of 40).
const activePageSize = 2048

// cursor is the sort key of the last row of a page: one or two columns.
type cursor [2]string

// scan runs query page after page, each page after the cursor of the last
// row of the one before (start for the first), and calls fn with each row
// until it returns false or an error.
func scan[T any](t *tx, start cursor, query func(after cursor) (string, []any),
	row func(pgx.CollectableRow) (T, cursor, error), fn func(T) (bool, error)) error {
	return scanPages(t, pageSize, start, query, row, fn)
}

// scanPages is scan with pages of page rows (query's LIMIT).
func scanPages[T any](t *tx, page int, start cursor, query func(after cursor) (string, []any),
	row func(pgx.CollectableRow) (T, cursor, error), fn func(T) (bool, error)) error {
	type item struct {
		v T
		c cursor
	}
	after := start
	for {
		// fn may have written since the last page: the next one sees it.
		if err := t.flush(); err != nil {
			return err
		}
		q, args := query(after)
		rows, err := t.tx.Query(t.ctx, q, args...)
		if err != nil {
			return t.fail(err)
		}
		items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (item, error) {
			v, c, err := row(r)
			return item{v, c}, err
		})
		if err != nil {
			return t.fail(err)
		}
		for _, it := range items {
			if more, err := fn(it.v); err != nil || !more {
				return err
			}
		}
		if len(items) < page {
			return nil
		}
		after = items[len(items)-1].c
	}
}

// limit and activeLimit end the page queries (set once, never changed).
var (
	limit       = fmt.Sprintf(" LIMIT %d", pageSize)
	activeLimit = fmt.Sprintf(" LIMIT %d", activePageSize)
)

// docRow reads (id, doc) rows of entities encoded as T; the cursor is the
// id. what names the entity in errors.
func docRow[T any](what string) func(pgx.CollectableRow) (*T, cursor, error) {
	return func(r pgx.CollectableRow) (*T, cursor, error) {
		var id string
		var doc []byte
		if err := r.Scan(&id, &doc); err != nil {
			return nil, cursor{}, err
		}
		v := new(T)
		if err := json.Unmarshal(doc, v); err != nil {
			return nil, cursor{}, fmt.Errorf("decode %s %s: %w", what, id, err)
		}
		return v, cursor{id}, nil
	}
}

var (
	recordRow = docRow[memory.Record]("memory")
	eventRow  = docRow[memory.Event]("event")
	noticeRow = docRow[memory.Notice]("notice")
)

// each adapts a callback that cannot fail.
func each[T any](fn func(T) bool) func(T) (bool, error) {
	return func(v T) (bool, error) { return fn(v), nil }
}

// appendTo collects into *out.
func appendTo[T any](out *[]T) func(T) (bool, error) {
	return func(v T) (bool, error) { *out = append(*out, v); return true, nil }
}

func (t *tx) Record(id string) (*memory.Record, error) {
	var r memory.Record
	if err := t.getDoc("SELECT doc FROM memgate_records WHERE id = $1", "memory", id, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (t *tx) Slot(id string) (*memory.Slot, error) {
	var s memory.Slot
	if err := t.getDoc("SELECT doc FROM memgate_slots WHERE id = $1", "slot", id, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (t *tx) RollbackPoint(id string) (*memory.RollbackPoint, error) {
	var p memory.RollbackPoint
	if err := t.getDoc("SELECT doc FROM memgate_rollback_points WHERE id = $1", "rollback point", id, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// slotRecords lists a slot's records, of one status when status is set.
func (t *tx) slotRecords(slotID, where string) ([]*memory.Record, error) {
	out := []*memory.Record{}
	err := scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT id, doc FROM memgate_records WHERE slot_id = $1 AND id > $2" + where + " ORDER BY id" + limit,
			[]any{slotID, c[0]}
	}, recordRow, appendTo(&out))
	return out, err
}

func (t *tx) SlotRecords(slotID string) ([]*memory.Record, error) {
	return t.slotRecords(slotID, "")
}

func (t *tx) SlotPending(slotID string) ([]*memory.Record, error) {
	return t.slotRecords(slotID, " AND status = 'pending_review'")
}

func (t *tx) SubjectSlots(subjectID string) ([]string, error) {
	out := []string{}
	err := scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT id FROM memgate_slots WHERE subject_id = $1 AND id > $2 ORDER BY id" + limit, []any{subjectID, c[0]}
	}, func(r pgx.CollectableRow) (string, cursor, error) {
		var id string
		err := r.Scan(&id)
		return id, cursor{id}, err
	}, appendTo(&out))
	return out, err
}

// ScanActive walks active records by (subject, id), the order of the
// Badger store's a/ keys.
func (t *tx) ScanActive(subjectID string, fn func(*memory.Record) bool) error {
	if subjectID != "" {
		return scan(t, cursor{}, func(c cursor) (string, []any) {
			return "SELECT id, doc FROM memgate_records WHERE status = 'active' AND subject_id = $1 AND id > $2 ORDER BY id" + limit,
				[]any{subjectID, c[0]}
		}, recordRow, each(fn))
	}
	return scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT id, doc FROM memgate_records WHERE status = 'active' AND (subject_id, id) > ($1, $2) ORDER BY subject_id, id" + limit,
			[]any{c[0], c[1]}
	}, func(r pgx.CollectableRow) (*memory.Record, cursor, error) {
		rec, c, err := recordRow(r)
		if err != nil {
			return nil, c, err
		}
		return rec, cursor{rec.SubjectID, rec.ID}, nil
	}, each(fn))
}

func (t *tx) ScanPending(fn func(*memory.Record) bool) error {
	return scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT id, doc FROM memgate_records WHERE status = 'pending_review' AND id > $1 ORDER BY id" + limit, []any{c[0]}
	}, recordRow, each(fn))
}

// actorQuery selects columns of the records written by a run or an actor,
// in id order.
func actorQuery(cols, kind, id string) func(c cursor) (string, []any) {
	return func(c cursor) (string, []any) {
		return "SELECT " + cols + ` FROM memgate_record_actors a JOIN memgate_records r ON r.id = a.record_id
			WHERE a.kind = $1 AND a.actor_id = $2 AND a.record_id > $3 ORDER BY a.record_id` + limit, []any{kind, id, c[0]}
	}
}

func checkActorKind(kind string) error {
	if kind != "run" && kind != "actor" {
		return memory.Errorf(memory.EINVALID, "unknown actor kind %q", kind)
	}
	return nil
}

func (t *tx) ScanByActor(kind, id string, fn func(*memory.Record) bool) error {
	if err := checkActorKind(kind); err != nil {
		return err
	}
	return scan(t, cursor{}, actorQuery("r.id, r.doc", kind, id), recordRow, each(fn))
}

// ScanActorSlots lists a run's or an actor's records with their slots
// without decoding them (memory.ActorSlotScanner).
func (t *tx) ScanActorSlots(kind, id string, fn func(recordID, slotID string) bool) error {
	if err := checkActorKind(kind); err != nil {
		return err
	}
	return scan(t, cursor{}, actorQuery("r.id, r.slot_id", kind, id), func(r pgx.CollectableRow) ([2]string, cursor, error) {
		var ids [2]string
		err := r.Scan(&ids[0], &ids[1])
		return ids, cursor{ids[0]}, err
	}, func(ids [2]string) (bool, error) { return fn(ids[0], ids[1]), nil })
}

func (t *tx) ScanEvents(after string, fn func(*memory.Event) bool) error {
	return scan(t, cursor{after}, func(c cursor) (string, []any) {
		return "SELECT id, doc FROM memgate_events WHERE id > $1 ORDER BY id" + limit, []any{c[0]}
	}, eventRow, each(fn))
}

func (t *tx) ScanShadowed(after string, newest bool, fn func(*memory.Event) bool) error {
	return scan(t, cursor{after}, func(c cursor) (string, []any) {
		switch {
		case !newest:
			return "SELECT id, doc FROM memgate_events WHERE shadowed AND id > $1 ORDER BY id" + limit, []any{c[0]}
		case c[0] == "":
			return "SELECT id, doc FROM memgate_events WHERE shadowed ORDER BY id DESC" + limit, nil
		}
		return "SELECT id, doc FROM memgate_events WHERE shadowed AND id < $1 ORDER BY id DESC" + limit, []any{c[0]}
	}, eventRow, each(fn))
}

func (t *tx) RecordEvents(recordID string) ([]*memory.Event, error) {
	out := []*memory.Event{}
	err := scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT id, doc FROM memgate_events WHERE record_id = $1 AND id > $2 ORDER BY id" + limit, []any{recordID, c[0]}
	}, eventRow, appendTo(&out))
	return out, err
}

func (t *tx) ScanNotices(fn func(*memory.Notice) bool) error {
	return scan(t, cursor{}, func(c cursor) (string, []any) {
		return "SELECT id, doc FROM memgate_notices WHERE id > $1 ORDER BY id" + limit, []any{c[0]}
	}, noticeRow, each(fn))
}

// PutRecord writes a record with the columns its scans filter on. The
// runs and actors it was written by are kept from its first write, as the
// Badger store keeps them.
func (t *tx) PutRecord(r *memory.Record) error {
	doc, err := encode("memory "+r.ID, r)
	if err != nil {
		return err
	}
	var activated *int64
	if !r.ActivatedAt.IsZero() {
		at := r.ActivatedAt.UnixNano() // a copy: the write is sent later, r may change
		activated = &at
	}
	// One statement: the upsert, and the writers' rows when it inserted
	// (version 1).
	kinds, ids := actorRows(r)
	return t.exec(`WITH up AS (
			INSERT INTO memgate_records (id, slot_id, subject_id, status, layer,
				scope_user_id, scope_agent_id, scope_app_id, scope_run_id, summary, created_ns, activated_ns, doc)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
			ON CONFLICT (id) DO UPDATE SET slot_id = EXCLUDED.slot_id, subject_id = EXCLUDED.subject_id,
				status = EXCLUDED.status, layer = EXCLUDED.layer, scope_user_id = EXCLUDED.scope_user_id,
				scope_agent_id = EXCLUDED.scope_agent_id, scope_app_id = EXCLUDED.scope_app_id,
				scope_run_id = EXCLUDED.scope_run_id, summary = EXCLUDED.summary, created_ns = EXCLUDED.created_ns,
				activated_ns = EXCLUDED.activated_ns, doc = EXCLUDED.doc, version = memgate_records.version + 1
			RETURNING version)
		INSERT INTO memgate_record_actors (kind, actor_id, record_id)
		SELECT x.k, x.a, $1 FROM up, unnest($14::text[], $15::text[]) AS x(k, a) WHERE up.version = 1
		ON CONFLICT DO NOTHING`,
		r.ID, r.SlotID, r.SubjectID, string(r.Status), string(r.Layer), r.Scope.UserID, r.Scope.AgentID,
		r.Scope.AppID, r.Scope.RunID, r.Summary, r.CreatedAt.UnixNano(), activated, doc, kinds, ids)
}

// actorRows lists who wrote r: its run and session (kind "run"), its
// agent and user (kind "actor"), each once.
func actorRows(r *memory.Record) (kinds, ids []string) {
	seen := map[[2]string]bool{}
	for _, a := range [][2]string{{"run", r.Actor.RunID}, {"run", r.Actor.SessionID}, {"actor", r.Actor.AgentID}, {"actor", r.Actor.UserID}} {
		if a[1] != "" && !seen[a] {
			seen[a] = true
			kinds, ids = append(kinds, a[0]), append(ids, a[1])
		}
	}
	return kinds, ids
}

func (t *tx) PutSlot(s *memory.Slot) error {
	doc, err := encode("slot "+s.ID, s)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO memgate_slots (id, subject_id, doc) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET subject_id = EXCLUDED.subject_id, doc = EXCLUDED.doc`, s.ID, s.SubjectID, doc)
}

func (t *tx) PutRollbackPoint(p *memory.RollbackPoint) error {
	doc, err := encode("rollback point "+p.ID, p)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO memgate_rollback_points (id, doc) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc`, p.ID, doc)
}

// AppendEvent inserts an event; the audit log refuses to change one.
func (t *tx) AppendEvent(e *memory.Event) error {
	if e.ID == "" {
		return errors.New("append event: no id")
	}
	doc, err := encode("event "+e.ID, e)
	if err != nil {
		return err
	}
	var recordID *string
	if e.RecordID != "" {
		id := e.RecordID
		recordID = &id
	}
	if err := t.exec("INSERT INTO memgate_events (id, record_id, shadowed, doc) VALUES ($1, $2, $3, $4)",
		e.ID, recordID, memory.IsShadowed(e), doc); err != nil {
		return err
	}
	t.events = append(t.events, e.ID)
	return nil
}

// PutNotice writes a notice and ends its lease: a notice written again was
// rescheduled by the instance that held it.
func (t *tx) PutNotice(n *memory.Notice) error {
	doc, err := encode("notice "+n.ID, n)
	if err != nil {
		return err
	}
	var next *time.Time
	if !n.NextAttempt.IsZero() {
		at := n.NextAttempt
		next = &at
	}
	return t.exec(`INSERT INTO memgate_notices (id, next_attempt, doc) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET next_attempt = EXCLUDED.next_attempt, doc = EXCLUDED.doc,
			lease_owner = NULL, lease_until = NULL`, n.ID, next, doc)
}

func (t *tx) DeleteNotice(id string) error {
	return t.exec("DELETE FROM memgate_notices WHERE id = $1", id)
}
