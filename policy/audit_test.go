package policy

// The audit log is linear in the writes (issue 14): an event references the
// slot's pending writes by id instead of embedding them, and a replay
// resolves the ids. These tests park hundreds of writes in one slot with the
// default policy on a real Badger store on disk, measure the log and the
// store, and replay the log.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// auditWrites is how many writes park in one slot.
const auditWrites = 300

// auditRun is the sidecar's governor (default policy, secret scanner) on a
// Badger store in dir, and what the test did to it.
type auditRun struct {
	t   *testing.T
	dir string
	st  *store.Store
	gov *memory.Governor
	c   *Compiled
	// pending are the ids of the slot's pending writes now, oldest first;
	// expect the pending ids each candidate was decided with.
	pending []string
	expect  map[string][]string
	parked  []string // every write that parked, in order
}

func newAuditRun(t *testing.T) *auditRun {
	a := &auditRun{t: t, dir: t.TempDir(), c: compileDefault(t), expect: map[string][]string{}}
	a.open()
	t.Cleanup(func() {
		if a.st != nil {
			a.st.Close()
		}
	})
	return a
}

func (a *auditRun) open() {
	a.t.Helper()
	st, err := store.Open(store.Options{Dir: a.dir, NoSync: true})
	if err != nil {
		a.t.Fatal(err)
	}
	a.st = st
	a.gov = memory.NewGovernor(memory.Options{Store: st, Classifier: a.c, Secrets: testScanner(a.t),
		PolicyTimeout: time.Minute}) // no write may fail closed on a slow race-detector run
}

func (a *auditRun) close() {
	a.t.Helper()
	if err := a.st.Close(); err != nil {
		a.t.Fatal(err)
	}
	a.st = nil
}

var auditWords = strings.Fields(`publish release channel blog newsletter draft editor review schedule weekday
morning evening campaign audience region europe asia launch embargo partner legal approval checklist
owner marketing engineering staging production banner article podcast video caption headline summary`)

// auditSummary is a policy statement of about 500 bytes, different for each
// i; its words are pseudo-random so that compression does not flatter the
// sizes measured.
func auditSummary(i int) string {
	rng := rand.New(rand.NewPCG(uint64(i), 14))
	var b strings.Builder
	fmt.Fprintf(&b, "Auto-publish for project alpha is allowed only after review step %d, and only for", i)
	for b.Len() < 500 {
		b.WriteString(" " + auditWords[rng.IntN(len(auditWords))])
	}
	return b.String()[:500]
}

// write submits write i to the slot; it must park.
func (a *auditRun) write(ctx context.Context, i int) string {
	a.t.Helper()
	res, err := a.gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha",
		FactType: "publish.auto", Summary: auditSummary(i), Value: json.RawMessage(fmt.Sprintf(`{"afterStep":%d}`, i)),
		CandidateSource: memory.SourceUser,
		Evidence:        memory.Evidence{Excerpt: "as agreed in the weekly sync"},
		Actor:           memory.Actor{AgentID: "openclaw", UserID: "user-1", RunID: "run-1", Dialect: "native"}})
	if err != nil {
		a.t.Fatal(err)
	}
	if res.Outcome != memory.OutcomeParked {
		a.t.Fatalf("write %d: %s (%v), want it parked", i, res.Outcome, res.Record.Decision)
	}
	id := res.Record.ID
	a.expect[id] = slices.Clone(a.pending)
	a.pending = append(a.pending, id)
	a.parked = append(a.parked, id)
	return id
}

func (a *auditRun) decide(ctx context.Context, id string, approve bool) {
	a.t.Helper()
	rv := memory.Review{By: "ann", Route: "cli", Mode: memory.ModeOverride}
	var err error
	if approve {
		_, err = a.gov.Approve(ctx, id, rv)
	} else {
		_, err = a.gov.Reject(ctx, id, rv)
	}
	if err != nil {
		a.t.Fatal(err)
	}
	a.pending = slices.DeleteFunc(a.pending, func(p string) bool { return p == id })
}

func (a *auditRun) events(ctx context.Context) []*memory.Event {
	a.t.Helper()
	evs, err := a.gov.Events(ctx, "", 0)
	if err != nil {
		a.t.Fatal(err)
	}
	return evs
}

// diskBytes is what Badger keeps in dir: its tables and value logs.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext != ".sst" && ext != ".vlog" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

func encodedSize(t *testing.T, v any) int {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}

// TestAuditLogIsLinear parks auditWrites writes of 500 bytes in one slot
// that has an active version, in two sessions, and measures the audit log
// and the store: a parked event's size stops growing once the slot holds
// MaxEventPending writes, and bytes per parked write stay bounded.
func TestAuditLogIsLinear(t *testing.T) {
	ctx := context.Background()
	a := newAuditRun(t)
	a.decide(ctx, a.write(ctx, 0), true) // the slot's active version
	a.close()
	base := diskBytes(t, a.dir)

	first := auditWrites / 3
	a.open()
	for i := 1; i <= first; i++ {
		a.write(ctx, i)
	}
	a.close()
	mid := diskBytes(t, a.dir)
	a.open()
	for i := first + 1; i <= auditWrites; i++ {
		a.write(ctx, i)
	}
	evs := a.events(ctx)
	a.close()
	end := diskBytes(t, a.dir)

	parked := map[string]bool{}
	for _, id := range a.parked[1:] {
		parked[id] = true
	}
	var sizes []int
	var logBytes, logFirst int
	for _, ev := range evs {
		n := encodedSize(t, ev)
		logBytes += n
		if ev.RecordID == a.parked[first] && ev.Type == memory.EventParked {
			logFirst = logBytes // the log up to and with the first session's last write
		}
		if ev.Type == memory.EventParked && parked[ev.RecordID] {
			// What grows with the slot's pending writes is measured
			// without the decision: its reasons are what each text
			// says (the classifier reads each write's own words).
			bare := *ev
			bare.Decision = nil
			sizes = append(sizes, encodedSize(t, &bare))
		}
	}
	if len(sizes) != auditWrites {
		t.Fatalf("%d parked events, want %d", len(sizes), auditWrites)
	}
	// Up to MaxEventPending ids in pendingIds and in related (about 30
	// bytes each), then nothing more.
	bound := 2*memory.MaxEventPending*32 + 256
	if sizes[auditWrites-1] > sizes[0]+bound {
		t.Errorf("the last parked event is %d bytes, the first %d: it grows with the slot's pending writes", sizes[auditWrites-1], sizes[0])
	}
	plateau := sizes[memory.MaxEventPending+1:]
	if lo, hi := slices.Min(plateau), slices.Max(plateau); hi-lo > 64 {
		t.Errorf("parked events past %d pending writes range from %d to %d bytes", memory.MaxEventPending, lo, hi)
	}

	const maxPerWrite = 8 << 10
	perWrite := logBytes / (auditWrites + 1)
	early, late := logFirst/(first+1), (logBytes-logFirst)/(auditWrites-first)
	if perWrite > maxPerWrite || late > early*5/4 {
		t.Errorf("audit log: %d bytes per parked write (%d in the first %d writes, %d after), want at most %d and no growth",
			perWrite, early, first+1, late, maxPerWrite)
	}
	diskPerWrite := (end - mid) / int64(auditWrites-first)
	if diskPerWrite > 3*maxPerWrite || diskPerWrite <= 0 {
		t.Errorf("Badger grew by %d bytes per parked write, want at most %d", diskPerWrite, 3*maxPerWrite)
	}
	t.Logf("%d parked writes of 500 bytes in one slot: parked event %d bytes first, %d last; audit log %d bytes (%d per write: %d in the first %d, %d after)",
		auditWrites, sizes[0], sizes[auditWrites-1], logBytes, perWrite, early, first+1, late)
	t.Logf("Badger tables and value logs: %d bytes with the active version, %d after %d parked writes (%d per write), %d after %d (%d per write over the last %d, %d overall)",
		base, mid, first, (mid-base)/int64(first), end, auditWrites, diskPerWrite, auditWrites-first, (end-base)/auditWrites)

	// What the last event would have held with the pending writes embedded.
	a.open()
	defer a.close()
	var all []*memory.Record
	for _, id := range a.parked[1:auditWrites] {
		r, err := a.gov.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	t.Logf("for comparison: the last write's input with its %d pending writes embedded would be %d bytes",
		len(all), encodedSize(t, &memory.PolicyInput{Pending: all}))
}

// checking wraps a classifier: it records each decision by candidate and,
// when expect is set, checks that the pending writes replayed are the ones
// the governor decided with, as they were while pending.
type checking struct {
	t      *testing.T
	c      memory.Classifier
	expect map[string][]string // nil: no check
	seen   map[string]memory.Decision
}

func (k *checking) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	if k.expect != nil {
		var ids []string
		for _, p := range in.Pending {
			ids = append(ids, p.ID)
			if p.Status != memory.StatusPending || p.SlotID != in.Candidate.SlotID || p.Review != nil || !p.ActivatedAt.IsZero() {
				k.t.Errorf("candidate %s: pending write %s replayed as %s in %s", in.Candidate.ID, p.ID, p.Status, p.SlotID)
			}
		}
		if want := k.expect[in.Candidate.ID]; !slices.Equal(ids, want) && len(ids)+len(want) > 0 {
			k.t.Errorf("candidate %s replayed with %d pending writes, want %d", in.Candidate.ID, len(ids), len(want))
		}
	}
	d, err := k.c.Classify(ctx, in)
	k.seen[in.Candidate.ID] = d
	return d, err
}

func rulesOf(d *memory.Decision) string {
	var rules []string
	for _, r := range d.Reasons {
		rules = append(rules, r.Rule)
	}
	return fmt.Sprintf("%s/%s/%v/%v", d.Action, d.Risk, d.Categories, rules)
}

// oldForm rewrites the events' inputs as they were recorded before pending
// writes were referenced by id: the records embedded.
func oldForm(t *testing.T, a *auditRun, events []*memory.Event) []*memory.Event {
	t.Helper()
	out := make([]*memory.Event, len(events))
	for i, ev := range events {
		out[i] = ev
		if len(ev.Input) == 0 {
			continue
		}
		rin, err := memory.ParseRecordedInput(ev.Input)
		if err != nil {
			t.Fatal(err)
		}
		in := rin.PolicyInput
		in.Pending = []*memory.Record{}
		for _, id := range a.expect[in.Candidate.ID] {
			r, err := a.gov.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			in.Pending = append(in.Pending, memory.AsPending(r, in.Candidate))
		}
		raw, err := json.Marshal(&in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), `"pendingIds"`) || !strings.Contains(string(raw), `"pending":[`) {
			t.Fatalf("not the old form: %.200s", raw)
		}
		old := *ev
		old.Input = raw
		out[i] = &old
	}
	return out
}

// TestReplayResolvesPendingByID replays a log of writes parked in one slot,
// some of them decided since, with the default policy: the decisions are
// the ones taken, and each write sees the slot's pending writes again,
// loaded by id (past the ids an event keeps, known from the log). Old-form
// events, embedding the pending records, replay too, alone or before
// new-form ones.
func TestReplayResolvesPendingByID(t *testing.T) {
	ctx := context.Background()
	a := newAuditRun(t)
	const n = 100
	a.decide(ctx, a.write(ctx, 0), true)
	for i := 1; i <= n; i++ {
		a.write(ctx, i)
	}
	a.decide(ctx, a.parked[n], true)  // the newest becomes active: its record is no longer pending
	a.decide(ctx, a.parked[5], false) // one is rejected
	for i := n + 1; i <= n+5; i++ {
		a.write(ctx, i)
	}
	events := a.events(ctx)
	writes, references := 0, 0
	for _, ev := range events {
		if len(ev.Input) > 0 {
			writes++
			rin, err := memory.ParseRecordedInput(ev.Input)
			if err != nil {
				t.Fatal(err)
			}
			references += len(a.expect[rin.Candidate.ID])
			if rin.PendingCount != len(a.expect[rin.Candidate.ID]) || len(rin.PendingIDs) > memory.MaxEventPending {
				t.Fatalf("recorded %d of %d pending ids, want %d", len(rin.PendingIDs), rin.PendingCount, len(a.expect[rin.Candidate.ID]))
			}
		}
	}
	if writes != n+6 {
		t.Fatalf("%d recorded inputs, want %d", writes, n+6)
	}
	half := len(events) / 2
	cases := []struct {
		name      string
		events    []*memory.Event
		load      bool // resolve ids through the governor
		exact     bool // every write sees its pending writes, decisions as taken
		resolved  int  // -1: some
		missing   int  // -1: some
		evaluated int
	}{
		{"the whole log", events, true, true, references, 0, writes},
		{"old-form events", oldForm(t, a, events), false, true, 0, 0, writes},
		{"old-form events, then new", slices.Concat(oldForm(t, a, events[:half]), events[half:]), true, true, -1, 0, writes},
		{"no record loader", events, false, false, 0, references, writes},
		{"from the middle of the log", events[half:], true, false, -1, -1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := &checking{t: t, c: a.c, seen: map[string]memory.Decision{}}
			if tc.exact {
				k.expect = a.expect
			}
			var opts []ReplayOption
			if tc.load {
				opts = append(opts, WithRecords(a.gov.Get))
			}
			r, err := Replay(ctx, k, tc.events, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors != 0 || r.Evaluated+r.Skipped != len(tc.events) || (tc.evaluated >= 0 && r.Evaluated != tc.evaluated) {
				t.Fatalf("report %+v", r)
			}
			if (tc.resolved >= 0 && r.PendingResolved != tc.resolved) || (tc.resolved < 0 && r.PendingResolved == 0) ||
				(tc.missing >= 0 && r.PendingMissing != tc.missing) || (tc.missing < 0 && r.PendingMissing == 0) {
				t.Fatalf("%d pending writes resolved, %d missing; want %d and %d", r.PendingResolved, r.PendingMissing, tc.resolved, tc.missing)
			}
			if !tc.exact {
				return
			}
			if r.Same != r.Evaluated || r.Changed != 0 || r.Transitions["review->review"] != writes {
				t.Fatalf("replaying the deciding policy changed something: %+v", r)
			}
			for _, ev := range tc.events {
				if len(ev.Input) == 0 {
					continue
				}
				rin, _ := memory.ParseRecordedInput(ev.Input)
				got := k.seen[rin.Candidate.ID]
				if rulesOf(&got) != rulesOf(ev.Decision) {
					t.Errorf("write %s replayed as %s, decided as %s", rin.Candidate.ID, rulesOf(&got), rulesOf(ev.Decision))
				}
			}
		})
	}
}
