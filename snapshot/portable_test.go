package snapshot_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
	"github.com/memgate/memgate/pgstore"
	"github.com/memgate/memgate/snapshot"
	"github.com/memgate/memgate/store"
)

// The store-neutral snapshot, Badger to file to a fresh Badger: every
// entity and every index the store answers from must come back as it was,
// and the imported store must keep working under a governor.

// gatedPolicy applies writes, parks those whose summary starts with
// "review", rejects those starting with "reject".
var gatedPolicy = memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	switch s := in.Candidate.Summary; {
	case strings.HasPrefix(s, "review"):
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{memory.CategoryStrategy},
			Reasons: []memory.Reason{{Rule: "test.review", Message: "needs a human"}}, Affects: []string{"releases"}}, nil
	case strings.HasPrefix(s, "reject"):
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReject,
			Reasons: []memory.Reason{{Rule: "test.reject", Message: "forbidden"}}}, nil
	}
	return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
})

// testStore is a store a snapshot is exported from and imported into.
type testStore interface {
	memory.Store
	storeapi.KV
}

// storeKinds are the stores the round trip runs between, each way.
var storeKinds = []struct {
	name string
	open func(t *testing.T) testStore
}{
	{"badger", func(t *testing.T) testStore { return badgertest.New(t) }},
	{"postgres", openPostgres},
}

func TestMain(m *testing.M) { pgtest.Main(m) }

func openPostgres(t *testing.T) testStore {
	t.Helper()
	st, err := pgstore.Open(context.Background(), pgstore.Options{URL: pgtest.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func governor(st memory.Store) *memory.Governor {
	return memory.NewGovernor(memory.Options{Store: st, Classifier: gatedPolicy, Outbox: true})
}

// history is what the fixture made, for the checks that follow an import.
type history struct {
	pending  string // a write still waiting for review
	stageNow string // the active version of project-alpha/stage
}

// writeHistory drives a governor through every transition the store
// records: applies, overrides with rollback points, parks, approvals,
// rejections by a reviewer and by policy, a rollback, a quarantine, a
// deletion, a shadowed write, and kv values beside the records.
func writeHistory(t *testing.T, st testStore) history {
	t.Helper()
	ctx := context.Background()
	gov := governor(st)
	submit := func(c memory.Candidate) *memory.Record {
		t.Helper()
		res, err := gov.Submit(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return res.Record
	}
	stage := func(summary, run string) memory.Candidate {
		return memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: summary,
			Actor: memory.Actor{AgentID: "agent-1", RunID: run}}
	}
	reviewer := memory.Review{By: "U123", Route: "cli", Note: "checked"}

	submit(stage("beta", "run-1"))
	gamma := submit(stage("gamma", "run-1")) // an override: a rollback point
	launched := submit(stage("review: launched", "run-2"))
	if _, err := gov.Approve(ctx, launched.ID, reviewer); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Rollback(ctx, launched.ID, false, "premature", "ops"); err != nil {
		t.Fatal(err)
	}
	denied := submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "publish.auto",
		Summary: "review: auto-publish is on", Value: json.RawMessage(`{"enabled":true}`)})
	if _, err := gov.Reject(ctx, denied.ID, memory.Review{By: "U123", Route: "slack", Note: "no"}); err != nil {
		t.Fatal(err)
	}
	pending := submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "publish.auto",
		Summary: "review: auto-publish stays off", Evidence: memory.Evidence{Excerpt: "用户说：先别自动发布", SourceRef: "chat-7"}})
	submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "region", Summary: "reject: eu-west"})
	submit(memory.Candidate{Layer: memory.LayerKnowledge, Summary: "Alice prefers dark mode in every editor",
		Scope: memory.Scope{UserID: "alice", AgentID: "agent-1"}, Metadata: map[string]any{"source": "chat", "turn": 3.0},
		CandidateSource: memory.SourceUser})
	owner := submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-beta", FactType: "owner", Summary: "bob"})
	if _, err := gov.Submit(ctx, memory.Candidate{Op: memory.OpDelete, SlotID: owner.SlotID, Summary: "bob left"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"carol owns beta", "dave owns beta"} {
		submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-beta", FactType: "owner", Summary: s,
			Actor: memory.Actor{RunID: "run-bad", SessionID: "sess-9"}})
	}
	if _, err := gov.Quarantine(ctx, "run", "run-bad", "poisoned run", "ops"); err != nil {
		t.Fatal(err)
	}
	if err := gov.SetPolicyMode(memory.PolicyShadow); err != nil {
		t.Fatal(err)
	}
	submit(memory.Candidate{Layer: memory.LayerPreference, SubjectID: "project-alpha", FactType: "tone", Summary: "review: terse answers"})
	if err := gov.SetPolicyMode(memory.PolicyEnforce); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][3]string{{"slack", pending.ID, `{"channel":"C1","ts":"1.2"}`}, {"remind", pending.ID, "\x00\x01binary"}} {
		if err := st.Put(ctx, kv[0], kv[1], []byte(kv[2])); err != nil {
			t.Fatal(err)
		}
	}
	return history{pending: pending.ID, stageNow: gamma.ID}
}

// contents is everything a store holds and answers from: the entities,
// and each of memory.ReadTx's indexes and the active index's entries.
type contents struct {
	Records  []*memory.Record
	Slots    []*memory.Slot
	Points   []*memory.RollbackPoint
	Events   []*memory.Event
	Notices  []*memory.Notice
	KV       []string
	Active   []string
	Pending  []string
	Indexes  map[string][]string
	Shadowed []string
	Entries  []storeapi.ActiveEntry
}

func contentsOf(t *testing.T, st memory.Store) contents {
	t.Helper()
	if ac, ok := st.(memory.AuditChain); ok {
		if rep, err := memory.VerifyChain(context.Background(), ac); err != nil || !rep.OK {
			t.Errorf("the audit chain does not verify: %+v %v", rep, err)
		}
	}
	c := contents{Indexes: map[string][]string{}}
	ids := func(rs []*memory.Record) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	err := st.View(context.Background(), func(rtx memory.ReadTx) error {
		tx := rtx.(storeapi.ExportTx)
		err := errors.Join(
			tx.ScanRecords(func(r *memory.Record) bool { c.Records = append(c.Records, r); return true }),
			tx.ScanSlots(func(s *memory.Slot) bool { c.Slots = append(c.Slots, s); return true }),
			tx.ScanRollbackPoints(func(p *memory.RollbackPoint) bool { c.Points = append(c.Points, p); return true }),
			tx.ScanEvents("", func(e *memory.Event) bool {
				// Each store seals the events into a chain of its own:
				// a snapshot does not carry their places (portable.go).
				e.Seq, e.Prev, e.PrevID, e.Salt, e.TextHash = 0, "", "", "", ""
				c.Events = append(c.Events, e)
				return true
			}),
			tx.ScanNotices(func(n *memory.Notice) bool { c.Notices = append(c.Notices, n); return true }),
			tx.ScanKV(func(ns, k string, v []byte) bool { c.KV = append(c.KV, ns+"/"+k+"="+string(v)); return true }),
			tx.ScanActive("", func(r *memory.Record) bool { c.Active = append(c.Active, r.ID); return true }),
			tx.ScanPending(func(r *memory.Record) bool { c.Pending = append(c.Pending, r.ID); return true }),
			tx.ScanShadowed("", true, func(e *memory.Event) bool { c.Shadowed = append(c.Shadowed, e.ID); return true }),
		)
		if err != nil {
			return err
		}
		index := func(name string, got []string, err error) error {
			c.Indexes[name] = got
			return err
		}
		for _, s := range c.Slots {
			recs, err1 := tx.SlotRecords(s.ID)
			pend, err2 := tx.SlotPending(s.ID)
			subj, err3 := tx.SubjectSlots(s.SubjectID)
			if err := errors.Join(err1, err2, err3, index("slot records "+s.ID, ids(recs), nil),
				index("slot pending "+s.ID, ids(pend), nil), index("subject slots "+s.SubjectID, subj, nil)); err != nil {
				return err
			}
		}
		for _, r := range c.Records {
			evs, err := tx.RecordEvents(r.ID)
			if err != nil {
				return err
			}
			var evIDs []string
			for _, e := range evs {
				evIDs = append(evIDs, e.ID)
			}
			c.Indexes["record events "+r.ID] = evIDs
			for kind, id := range map[string]string{"run": r.Actor.RunID, "actor": r.Actor.AgentID} {
				if id == "" {
					continue
				}
				var got []string
				if err := tx.ScanByActor(kind, id, func(r *memory.Record) bool { got = append(got, r.ID); return true }); err != nil {
					return err
				}
				c.Indexes[kind+" "+id] = got
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Entries = activeEntries(t, st)
	return c
}

// activeEntries lists a store's index of active records, times in UTC so
// stores that hand back another location compare equal.
func activeEntries(t *testing.T, st memory.Store) []storeapi.ActiveEntry {
	t.Helper()
	ctx := context.Background()
	var out []storeapi.ActiveEntry
	collect := func(e storeapi.ActiveEntry, _ uint64) bool {
		e.CreatedAt, e.ActivatedAt = e.CreatedAt.UTC(), e.ActivatedAt.UTC()
		out = append(out, e)
		return true
	}
	var err error
	if b, ok := st.(*store.Store); ok { // Badger offers it on its aligned snapshots
		err = b.ViewSnapshot(ctx, func(sn storeapi.Snapshot) error { return sn.ScanActiveIndex(ctx, "", memory.Scope{}, collect) })
	} else {
		err = st.View(ctx, func(rtx memory.ReadTx) error {
			s, ok := rtx.(storeapi.ActiveScanner)
			if !ok {
				return fmt.Errorf("%T offers no ScanActiveIndex", rtx)
			}
			return s.ScanActiveIndex(ctx, "", memory.Scope{}, collect)
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func export(t *testing.T, st memory.Store) ([]byte, snapshot.Counts) {
	t.Helper()
	var buf bytes.Buffer
	n, err := snapshot.Export(context.Background(), st, &buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), n
}

func TestExportImportKeepsEverything(t *testing.T) {
	for _, from := range storeKinds {
		for _, to := range storeKinds {
			t.Run(from.name+" to "+to.name, func(t *testing.T) { roundTrip(t, from.open(t), to.open(t)) })
		}
	}
}

func roundTrip(t *testing.T, src, dst testStore) {
	ctx := context.Background()
	h := writeHistory(t, src)
	want := contentsOf(t, src)
	file, counts := export(t, src)

	if counts.Records != len(want.Records) || counts.Slots != len(want.Slots) || counts.RollbackPoints != len(want.Points) ||
		counts.Events != len(want.Events) || counts.Notices != len(want.Notices) || counts.KV != len(want.KV) {
		t.Fatalf("export counted %s, the store holds %d records, %d slots, %d points, %d events, %d notices, %d kv",
			counts, len(want.Records), len(want.Slots), len(want.Points), len(want.Events), len(want.Notices), len(want.KV))
	}
	// The fixture reaches every kind and every status.
	statuses := map[memory.Status]bool{}
	for _, r := range want.Records {
		statuses[r.Status] = true
	}
	for _, s := range []memory.Status{memory.StatusActive, memory.StatusPending, memory.StatusSuperseded,
		memory.StatusRejected, memory.StatusRolledBack, memory.StatusDeleted} {
		if !statuses[s] {
			t.Fatalf("the fixture has no %s record", s)
		}
	}
	if len(want.Points) == 0 || len(want.Notices) == 0 || len(want.Shadowed) == 0 || len(want.KV) != 2 || len(want.Entries) == 0 {
		t.Fatalf("the fixture lacks a kind: %d points, %d notices, %d shadowed, %d kv, %d active entries",
			len(want.Points), len(want.Notices), len(want.Shadowed), len(want.KV), len(want.Entries))
	}

	got, err := snapshot.Import(ctx, dst, dst, bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if got != counts {
		t.Fatalf("import wrote %s, export %s", got, counts)
	}
	compareContents(t, want, contentsOf(t, dst))

	// Exporting the import gives the same stream but for its header's time.
	again, _ := export(t, dst)
	if a, b := entityLines(t, file), entityLines(t, again); a != b {
		t.Fatalf("a second export differs from the first:\n%s\n---\n%s", a, b)
	}

	// The imported store keeps working: approve the write parked before the
	// export, override, roll back.
	gov := governor(dst)
	if _, err := gov.Approve(ctx, h.pending, memory.Review{By: "U123", Route: "cli"}); err != nil {
		t.Fatalf("approve after import: %v", err)
	}
	res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: "ga"})
	if err != nil || res.Outcome != memory.OutcomeApplied || res.Replaced == nil || res.Replaced.ID != h.stageNow {
		t.Fatalf("override after import: %+v %v", res, err)
	}
	if _, err := gov.Rollback(ctx, res.Record.ID, false, "too early", "ops"); err != nil {
		t.Fatalf("rollback after import: %v", err)
	}
	if act, err := gov.GetActive(ctx, res.Record.SlotID); err != nil || act.ID != h.stageNow {
		t.Fatalf("after the rollback the slot's active version is %v (%v), want %s", act, err, h.stageNow)
	}
	hist, err := gov.History(ctx, res.Record.SlotID)
	if err != nil || len(hist) != len(want.Indexes["slot records "+res.Record.SlotID])+1 {
		t.Fatalf("history after import: %d versions, %v", len(hist), err)
	}
}

func compareContents(t *testing.T, want, got contents) {
	t.Helper()
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range wv.NumField() {
		if w, g := wv.Field(i).Interface(), gv.Field(i).Interface(); !reflect.DeepEqual(w, g) {
			wj, _ := json.MarshalIndent(w, "", " ")
			gj, _ := json.MarshalIndent(g, "", " ")
			t.Errorf("%s differ after import:\nwant %s\ngot  %s", wv.Type().Field(i).Name, wj, gj)
		}
	}
}

// entityLines is the stream without its header and trailer, which hold
// the time of the export and a hash over it.
func entityLines(t *testing.T, b []byte) string {
	t.Helper()
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) < 3 {
		t.Fatalf("a stream of %d lines", len(lines))
	}
	return string(bytes.Join(lines[1:len(lines)-2], nil))
}

func TestExportStreamShape(t *testing.T) {
	src := badgertest.New(t)
	writeHistory(t, src)
	file, counts := export(t, src)
	sc := bufio.NewScanner(bytes.NewReader(file))
	var types []string
	perType := map[string]int{}
	for sc.Scan() {
		var l struct {
			Type    string `json:"type"`
			Format  string `json:"format"`
			Version int    `json:"version"`
			Counts  *snapshot.Counts
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d is not JSON: %v", len(types)+1, err)
		}
		if len(types) == 0 && (l.Format != snapshot.Format || l.Version != snapshot.Version) {
			t.Fatalf("header %s", sc.Bytes())
		}
		if l.Counts != nil && *l.Counts != counts {
			t.Fatalf("trailer counts %s, Export returned %s", l.Counts, counts)
		}
		types = append(types, l.Type)
		perType[l.Type]++
	}
	if types[0] != "header" || types[len(types)-1] != "trailer" {
		t.Fatalf("stream starts with %s, ends with %s", types[0], types[len(types)-1])
	}
	for typ, n := range map[string]int{"slot": counts.Slots, "record": counts.Records, "rollbackPoint": counts.RollbackPoints,
		"event": counts.Events, "notice": counts.Notices, "kv": counts.KV} {
		if perType[typ] != n {
			t.Errorf("%d %s lines, counts say %d", perType[typ], typ, n)
		}
	}
}

// A stream that is cut, altered or not a snapshot is refused before
// anything is written when it can be read twice (a file).
func TestImportRefusesADamagedStream(t *testing.T) {
	src := badgertest.New(t)
	writeHistory(t, src)
	file, _ := export(t, src)
	lines := bytes.SplitAfter(file, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty string after the last newline
	join := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	var backup bytes.Buffer
	if err := snapshot.Save(context.Background(), src, &backup); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		stream     []byte
	}{
		{"cut at a line", "truncated", join(lines[:len(lines)/2]...)},
		{"cut inside a line", "corrupt", file[:len(file)/2+7]},
		{"no trailer", "truncated", join(lines[:len(lines)-1]...)},
		{"a line lost", "the trailer counts", join(append(append([][]byte{}, lines[:3]...), lines[4:]...)...)},
		{"a summary altered", "checksum mismatch", bytes.Replace(file, []byte(`"summary":"gamma"`), []byte(`"summary":"gammb"`), 1)},
		{"a line after the trailer", "after the trailer", join(file, lines[1])},
		{"empty", "empty file", nil},
		{"a Badger backup", "not a memgate snapshot", backup.Bytes()},
		{"a newer version", "versions up to", bytes.Replace(file, []byte(`"version":1`), []byte(`"version":99`), 1)},
		{"an unknown line", "unknown line type", bytes.Replace(file, []byte(`{"type":"slot"`), []byte(`{"type":"blob"`), 1)},
		{"a record line without its record", "without its record", bytes.Replace(file, []byte(`{"type":"record","record"`), []byte(`{"type":"record","x"`), 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if bytes.Equal(tc.stream, file) {
				t.Fatal("the damage left the stream unchanged")
			}
			dst := badgertest.New(t)
			_, err := snapshot.Import(context.Background(), dst, dst, bytes.NewReader(tc.stream))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("want an error saying %q and that nothing was written, got %v", tc.want, err)
			}
			if c := contentsOf(t, dst); len(c.Records)+len(c.Slots)+len(c.Events)+len(c.KV)+len(c.Notices) != 0 {
				t.Fatalf("a refused import left %d records, %d slots, %d events", len(c.Records), len(c.Slots), len(c.Events))
			}
		})
	}
}

// From a pipe the stream is checked as it is written: a damaged one is
// refused with ErrPartialImport, and the store it left is refused next.
func TestImportFromAPipeSaysTheStoreMustBeDiscarded(t *testing.T) {
	src := badgertest.New(t)
	writeHistory(t, src)
	file, _ := export(t, src)
	cut := file[:bytes.LastIndex(file, []byte(`{"type":"trailer"`))]
	dst := badgertest.New(t)
	_, err := snapshot.Import(context.Background(), dst, dst, io.MultiReader(bytes.NewReader(cut)))
	if !errors.Is(err, snapshot.ErrPartialImport) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("want a truncation wrapping ErrPartialImport, got %v", err)
	}
	if _, err := snapshot.Import(context.Background(), dst, dst, bytes.NewReader(file)); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("importing over a partial import: %v", err)
	}
	// The whole stream through a pipe imports as from a file.
	fresh := badgertest.New(t)
	if _, err := snapshot.Import(context.Background(), fresh, fresh, io.MultiReader(bytes.NewReader(file))); err != nil {
		t.Fatal(err)
	}
	compareContents(t, contentsOf(t, src), contentsOf(t, fresh))
}

func TestImportRefusesANonEmptyStore(t *testing.T) {
	ctx := context.Background()
	src := badgertest.New(t)
	writeHistory(t, src)
	file, _ := export(t, src)
	for _, tc := range []struct {
		name string
		fill func(*store.Store) error
	}{
		{"a record", func(st *store.Store) error {
			_, err := governor(st).Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", Summary: "already here"})
			return err
		}},
		{"a kv value only", func(st *store.Store) error { return st.Put(ctx, "slack", "r1", []byte("x")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := badgertest.New(t)
			if err := tc.fill(dst); err != nil {
				t.Fatal(err)
			}
			before := contentsOf(t, dst)
			if _, err := snapshot.Import(ctx, dst, dst, bytes.NewReader(file)); err == nil || !strings.Contains(err.Error(), "not empty") {
				t.Fatalf("want a refusal naming a non-empty store, got %v", err)
			}
			compareContents(t, before, contentsOf(t, dst))
		})
	}
}

// A snapshot larger than one import batch, into a store whose transactions
// hold less than a batch: Import splits what the store finds too big, and
// everything arrives.
func TestImportSplitsBatchesTheStoreFindsTooBig(t *testing.T) {
	ctx := context.Background()
	src := badgertest.NewWith(t, store.Options{NoSync: true})
	gov := governor(src)
	long := strings.Repeat("a fact long enough to fill a transaction quickly. ", 40) // 2 KB
	// Each write is a slot, a record, a rollback point and an event: 150 pass
	// one batch of lines.
	const n = 150
	for i := range n {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "bulk",
			Summary: fmt.Sprintf("%d: %s", i, long)}); err != nil {
			t.Fatal(err)
		}
	}
	file, counts := export(t, src)
	if counts.Records != n {
		t.Fatalf("exported %d records, wrote %d", counts.Records, n)
	}
	// A 1 MB memtable caps a Badger transaction near 150 KB, under the
	// import's batch size.
	dst := badgertest.NewWith(t, store.Options{NoSync: true, MemTableSize: 1 << 20})
	if _, err := snapshot.Import(ctx, dst, dst, bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	compareContents(t, contentsOf(t, src), contentsOf(t, dst))
}
