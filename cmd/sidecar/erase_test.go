package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/proxy/mem0"
	"github.com/memgate/memgate/store"
)

// grepDir returns, for each of needles that a file under dir holds, the
// files that hold it.
func grepDir(t *testing.T, dir string, needles ...string) map[string][]string {
	t.Helper()
	hits := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range needles {
			if bytes.Contains(b, []byte(s)) {
				hits[s] = append(hits[s], filepath.Base(path))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// eraseClassifier parks policy-layer writes, rejects text that asks for
// it, applies the rest.
var eraseClassifier = memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	switch {
	case strings.Contains(in.Candidate.Summary, "reject me"):
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReject,
			Reasons: []memory.Reason{{Rule: "test.reject", Message: "refused: " + in.Candidate.Summary}}}, nil
	case in.Candidate.Layer == memory.LayerPolicy:
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Reasons: []memory.Reason{{Rule: "test.review", Message: "needs a human"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
})

// eraseWorld is a store with memories of alice in every state a memory
// can be in, and in Mem0's event log, and bob's.
type eraseWorld struct {
	st        memory.Store
	gov       *memory.Governor
	events    *mem0.EventLog
	pendingID string
	// blobs are large texts of alice that do not compress: a record's
	// value (60 KiB) and evidence (15 KiB), and a Mem0 request (512 KiB).
	blobs []string
}

// randomText is n bytes of base64 that no compression shortens.
func randomText(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n*3/4+3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// blobPieces returns 64-byte pieces of each blob, every 4 KiB: a file or
// value holding any part of a blob holds one of them.
func (w *eraseWorld) blobPieces() []string {
	var out []string
	for _, b := range w.blobs {
		for i := 0; i+64 <= len(b); i += 4 << 10 {
			out = append(out, b[i:i+64])
		}
	}
	return out
}

func newEraseWorld(t *testing.T, st memory.Store, events *mem0.EventLog) *eraseWorld {
	t.Helper()
	ctx := context.Background()
	w := &eraseWorld{st: st, gov: memory.NewGovernor(memory.Options{Store: st, Classifier: eraseClassifier, Outbox: true}), events: events}
	w.blobs = []string{randomText(t, 60<<10), randomText(t, 15<<10), randomText(t, 512<<10)}
	alice := memory.Scope{UserID: "alice"}
	writes := []memory.Candidate{
		{Layer: memory.LayerPreference, SubjectID: "alice", FactType: "drink", Summary: "ZEBRA-alice-old prefers tea", Scope: alice},
		{Layer: memory.LayerPreference, SubjectID: "alice", FactType: "drink", Summary: "ZEBRA-alice-now prefers coffee", Scope: alice,
			Evidence: memory.Evidence{Excerpt: "ZEBRA-alice-evidence I switched " + w.blobs[1]}, Metadata: map[string]any{"note": "ZEBRA-alice-meta"},
			Value: json.RawMessage(`{"drink":"ZEBRA-alice-value","notes":"` + w.blobs[0] + `"}`)},
		{Layer: memory.LayerPolicy, SubjectID: "alice", FactType: "publish", Summary: "ZEBRA-alice-pending may publish", Scope: alice},
		{Layer: memory.LayerKnowledge, SubjectID: "alice", Summary: "ZEBRA-alice-rejected reject me", Scope: alice},
		{Layer: memory.LayerKnowledge, SubjectID: "bob", Summary: "BISON-bob stays", Scope: memory.Scope{UserID: "bob"}},
	}
	for _, c := range writes {
		out, err := w.gov.Submit(ctx, c)
		if err != nil && memory.ErrorCode(err) != memory.EREJECTED {
			t.Fatalf("submit %q: %v", c.Summary, err)
		}
		if out != nil && out.Outcome == memory.OutcomeParked {
			w.pendingID = out.Record.ID
		}
	}
	if w.pendingID == "" {
		t.Fatal("nothing was parked")
	}
	if err := events.Put(ctx, &mem0.Event{ID: "01MEM0EVENT", Type: "ADD",
		Payload: json.RawMessage(`{"user_id":"alice","messages":[{"role":"user","content":"ZEBRA-alice-mem0 ` + w.blobs[2] + `"}]}`)}); err != nil {
		t.Fatal(err)
	}
	return w
}

// erase erases alice through an eraser and checks what reads see.
func (w *eraseWorld) erase(t *testing.T, kv storeapi.KV, compact func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	er := &eraser{gov: w.gov, kv: kv, events: w.events, compact: compact, newID: memory.NewULIDSource(), log: slog.New(slog.DiscardHandler)}
	ans, err := er.Erase(ctx, memory.ErasureRequest{Scope: memory.ErasureScope{UserID: "alice"}, Reason: "ticket 42", By: "dpo"})
	if err != nil {
		t.Fatal(err)
	}
	if c := ans.Counts; c.Records != 4 || c.Active != 1 || c.Pending != 1 || ans.Mem0Events != 1 || !ans.Compacted {
		t.Fatalf("counts %+v, mem0 %d, compacted %v", c, ans.Mem0Events, ans.Compacted)
	}
	if len(ans.StillHeldBy) == 0 || !strings.Contains(ans.StillHeldBy[0], "backup") {
		t.Fatalf("the answer does not name backups: %v", ans.StillHeldBy)
	}
	// The pending write is withdrawn, bob's memory untouched, the chain
	// intact, the erasure audited.
	rec, err := w.gov.Get(ctx, w.pendingID)
	if err != nil || rec.Status != memory.StatusRejected || rec.Summary != "" || rec.Erased == nil {
		t.Fatalf("the pending write after the erasure: %+v %v", rec, err)
	}
	active, err := w.gov.List(ctx, memory.ListFilter{})
	if err != nil || len(active) != 1 || active[0].Summary != "BISON-bob stays" {
		t.Fatalf("the active layer: %+v %v", active, err)
	}
	rep, err := memory.VerifyChain(ctx, w.st.(memory.AuditChain))
	if err != nil || !rep.OK || rep.Erased == 0 {
		t.Fatalf("the chain after the erasure: %+v %v %v", rep, rep.Problem, err)
	}
	page, err := w.gov.EventsPage(ctx, "", 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var done *memory.Event
	for _, e := range page.Events {
		if e.Type == memory.EventErasureDone {
			done = e
		}
	}
	if done == nil || done.By != "dpo" || done.Reason != "ticket 42" || done.Erasure.Counts.Records != 4 || done.Erasure.Scope.UserID != "alice" {
		t.Fatalf("the erasure is not audited: %+v", done)
	}
	// Run again (as after a crash): nothing more to do.
	again, err := er.Erase(ctx, memory.ErasureRequest{ID: ans.ID, Scope: memory.ErasureScope{UserID: "alice"}, Reason: "ticket 42"})
	if err != nil || again.Counts.Records != 0 || again.Counts.Events != 0 || again.Mem0Events != 0 {
		t.Fatalf("the erasure run again: %+v %v", again, err)
	}
	if pending, err := er.journal(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("the journal after the erasure: %v %v", pending, err)
	}
}

// TestEraseLeavesNoByteOnDisk erases alice on Badger and greps every file
// of the data directory, while the store runs and after it closed: for
// her short texts and for every 4 KiB of her large ones (a 60 KiB value,
// 15 KiB of evidence, a 512 KiB Mem0 request), which would sit in the
// value log Badger is appending to were they not in its tree
// (store.valueThreshold).
func TestEraseLeavesNoByteOnDisk(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	st, err := store.Open(store.Options{Dir: dir, GroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	w := newEraseWorld(t, st, mem0.NewEventLog(st))
	needles := append([]string{"ZEBRA-alice"}, w.blobPieces()...)
	hits := grepDir(t, dir, needles...)
	for _, s := range needles {
		if len(hits[s]) == 0 {
			t.Fatalf("%.20s… is not on disk before the erasure: the grep proves nothing", s)
		}
	}
	w.erase(t, st, st.Compact)
	noVersionHolds(t, st, needles...)
	onDisk := func(when string) {
		t.Helper()
		hits := grepDir(t, dir, needles...)
		for _, s := range needles {
			if len(hits[s]) > 0 {
				t.Fatalf("erased text %.20s… is still on disk %s, in %v (%d of %d pieces)", s, when, hits[s], len(hits), len(needles))
			}
		}
	}
	onDisk("after the erasure")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	onDisk("after closing")
	st, err = store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rep, err := memory.VerifyChain(ctx, st); err != nil || !rep.OK {
		t.Fatalf("the chain after reopening: %+v %v", rep, err)
	}
}

// TestEraseOnPostgreSQLLeavesNothingInADump erases alice on PostgreSQL
// and greps a pg_dump of the database.
func TestEraseOnPostgreSQLLeavesNothingInADump(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	st, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dump := func() string {
		bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
		bin, err := exec.LookPath("pg_dump")
		if len(bins) > 0 {
			bin, err = bins[len(bins)-1], nil
		}
		if err != nil {
			t.Skip("no pg_dump")
		}
		out, err := exec.CommandContext(ctx, bin, "--data-only", "--dbname="+url).Output()
		if err != nil {
			t.Fatalf("pg_dump: %v", err)
		}
		return string(out)
	}
	w := newEraseWorld(t, st, mem0.NewEventLog(st))
	if err := st.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump(), "ZEBRA-alice") {
		t.Fatal("the strings are not in the dump before the erasure: the grep proves nothing")
	}
	w.erase(t, st, st.Compact)
	if err := st.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	d := dump()
	for _, s := range append([]string{"ZEBRA-alice"}, w.blobPieces()...) {
		if i := strings.Index(d, s); i >= 0 {
			t.Fatalf("erased text is in the dump: …%s…", d[max(0, i-300):min(len(d), i+100)])
		}
	}
	if !strings.Contains(d, "BISON-bob") {
		t.Fatal("bob's memory is not in the dump")
	}
}

// TestEraseResumesWhatTheJournalHolds: a sidecar killed after journaling
// an erasure (before or during it) finishes it at its next start.
func TestEraseResumesWhatTheJournalHolds(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	st, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w := newEraseWorld(t, st, mem0.NewEventLog(st))
	er := &eraser{gov: w.gov, kv: st, events: w.events, compact: st.Compact, newID: memory.NewULIDSource(), log: slog.New(slog.DiscardHandler)}
	req := memory.ErasureRequest{ID: "01ERASURE", Scope: memory.ErasureScope{UserID: "alice"}, Reason: "ticket 7"}
	if err := er.writeJournal(ctx, []memory.ErasureRequest{req}); err != nil {
		t.Fatal(err)
	}
	// Half done: the governor's part ran for the pending write only... as
	// far as a crash could take it, the records' part may or may not have
	// run; here it has not.
	st.Close()
	st, err = store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: eraseClassifier, Outbox: true})
	er = &eraser{gov: gov, kv: st, events: mem0.NewEventLog(st), compact: st.Compact, newID: memory.NewULIDSource(), log: slog.New(slog.DiscardHandler)}
	if err := er.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if pending, err := er.journal(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("the journal after resuming: %v %v", pending, err)
	}
	rec, err := gov.Get(ctx, w.pendingID)
	if err != nil || rec.Erased == nil || rec.Erased.ID != "01ERASURE" || rec.Summary != "" {
		t.Fatalf("the erasure was not resumed: %+v %v", rec, err)
	}
	noVersionHolds(t, st, "ZEBRA-alice")
	if hits := grepDir(t, dir, "ZEBRA-alice"); len(hits) > 0 {
		t.Fatalf("erased text is still on disk in %v", hits)
	}
}

// noVersionHolds checks, through Badger, that no version of any key, live
// or old, holds s: the grep of the files cannot see into compressed
// tables, this can.
func noVersionHolds(t *testing.T, st *store.Store, needles ...string) {
	t.Helper()
	err := st.DB().View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.AllVersions = true
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			for _, s := range needles {
				if bytes.Contains(v, []byte(s)) || bytes.Contains(it.Item().Key(), []byte(s)) {
					t.Errorf("key %q (version %d) holds %.20q…: %.300s", it.Item().Key(), it.Item().Version(), s, v)
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
