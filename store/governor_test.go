package store_test

// Integration tests of the rules of DESIGN §1, on a real Badger database on
// disk. Decisions come from a small rule classifier (injected through the
// memory.Classifier interface) so each test states the policy it relies on.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

type env struct {
	t     *testing.T
	dir   string
	st    *store.Store
	gov   *memory.Governor
	clock *testkit.Clock
	cls   memory.Classifier
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, memory.ClassifierFunc(testkit.Rules))
}

// newEnvWith is newEnv with another classifier.
func newEnvWith(t *testing.T, cls memory.Classifier) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: testkit.NewTicking(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), time.Millisecond), cls: cls}
	e.open()
	t.Cleanup(func() { e.st.Close() })
	return e
}

func (e *env) open() {
	e.t.Helper()
	st := badgertest.Open(e.t, store.Options{Dir: e.dir})
	e.st = st
	e.gov = memory.NewGovernor(memory.Options{Store: st, Classifier: e.cls, Now: e.clock.Now, Outbox: true})
}

// restart closes and reopens the database, as a process restart would.
func (e *env) restart() {
	e.t.Helper()
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

func (e *env) submit(c memory.Candidate) *memory.SubmitResult {
	e.t.Helper()
	res, err := e.gov.Submit(context.Background(), c)
	if err != nil {
		e.t.Fatalf("submit %+v: %v", c, err)
	}
	return res
}

func (e *env) active(subject string) []*memory.Record {
	e.t.Helper()
	recs, err := e.gov.List(context.Background(), memory.ListFilter{SubjectID: subject})
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

func (e *env) get(id string) *memory.Record {
	e.t.Helper()
	r, err := e.gov.Get(context.Background(), id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return r
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if memory.ErrorCode(err) != code {
		t.Fatalf("got error %v (code %q), want code %q", err, memory.ErrorCode(err), code)
	}
}

func state(subject, fact, summary string) memory.Candidate {
	return memory.Candidate{Layer: memory.LayerState, SubjectID: subject, FactType: fact, Summary: summary,
		Actor: memory.Actor{AgentID: "agent-1", RunID: "run-1", Dialect: "native"}}
}

// checkOneActive asserts invariant 1 over the whole slot: at most one active
// version, it is the slot's head, and the active index agrees.
func checkOneActive(t *testing.T, e *env, subject, fact string) *memory.Record {
	t.Helper()
	versions, err := e.gov.History(context.Background(), memory.KeyedSlotID(subject, fact))
	if err != nil {
		t.Fatal(err)
	}
	var active []*memory.Record
	for _, v := range versions {
		if v.Status == memory.StatusActive {
			active = append(active, v)
		}
	}
	if len(active) > 1 {
		t.Fatalf("slot %s/%s has %d active versions", subject, fact, len(active))
	}
	var listed []*memory.Record
	for _, r := range e.active(subject) {
		if r.FactType == fact {
			listed = append(listed, r)
		}
	}
	if len(listed) != len(active) || len(active) == 1 && listed[0].ID != active[0].ID {
		t.Fatalf("active index lists %d records for the slot, history has %d", len(listed), len(active))
	}
	if len(active) == 0 {
		return nil
	}
	return active[0]
}

func TestLowRiskWriteApplies(t *testing.T) {
	e := newEnv(t)
	res := e.submit(state("project-alpha", "stage", "alpha is in beta"))
	if res.Outcome != memory.OutcomeApplied || res.Record.Status != memory.StatusActive {
		t.Fatalf("outcome %s status %s, want applied/active", res.Outcome, res.Record.Status)
	}
	if res.Record.RollbackPoint == "" || res.Record.RiskLevel != memory.RiskLow {
		t.Fatalf("applied record lacks rollback point or risk: %+v", res.Record)
	}
	again := e.submit(state("project-alpha", "stage", "alpha is in beta"))
	if again.Outcome != memory.OutcomeUnchanged || again.Record.ID != res.Record.ID {
		t.Fatalf("repeating the active fact: outcome %s id %s, want unchanged %s", again.Outcome, again.Record.ID, res.Record.ID)
	}
}

func TestOneActiveVersionUnderConcurrentWriters(t *testing.T) {
	e := newEnv(t)
	const writers = 100
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Knowledge with a fact type applies and supersedes: every writer races for the head.
			_, err := e.gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerKnowledge,
				SubjectID: "project-alpha", FactType: "owner", Summary: fmt.Sprintf("owner is user %d", i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	head := checkOneActive(t, e, "project-alpha", "owner")
	if head == nil {
		t.Fatal("no active version after 100 writes")
	}
	versions, _ := e.gov.History(context.Background(), memory.KeyedSlotID("project-alpha", "owner"))
	if len(versions) != writers {
		t.Fatalf("%d versions, want %d", len(versions), writers)
	}
	// The versions form one line: each superseded one names its successor and
	// following supersedes from the head visits every version once.
	byID := map[string]*memory.Record{}
	for _, v := range versions {
		byID[v.ID] = v
	}
	seen := 0
	for r := head; r != nil; r = byID[r.Supersedes] {
		seen++
		if r != head && (r.Status != memory.StatusSuperseded || byID[r.SupersededBy] == nil) {
			t.Fatalf("version %s: status %s superseded by %q", r.ID, r.Status, r.SupersededBy)
		}
	}
	if seen != writers {
		t.Fatalf("the chain from the head has %d versions, want %d", seen, writers)
	}
	e.restart()
	if h := checkOneActive(t, e, "project-alpha", "owner"); h == nil || h.ID != head.ID {
		t.Fatalf("after restart the head is %v, want %s", h, head.ID)
	}
}

func TestParkedWriteChangesNothingTheAgentReads(t *testing.T) {
	e := newEnv(t)
	e.submit(state("project-alpha", "stage", "alpha is in beta"))
	before := e.active("project-alpha")

	res := e.submit(state("project-alpha", "stage", "alpha is in production"))
	if res.Outcome != memory.OutcomeParked || res.Record.Status != memory.StatusPending {
		t.Fatalf("override: outcome %s, want parked", res.Outcome)
	}
	if res.Replaced == nil || res.Replaced.ID != before[0].ID {
		t.Fatalf("parked write should name the version it would replace")
	}
	pol := e.submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "publish.auto", Summary: "auto-publish is disabled"})
	if pol.Outcome != memory.OutcomeParked {
		t.Fatalf("new strategy constraint: outcome %s, want parked", pol.Outcome)
	}
	after := e.active("project-alpha")
	if len(after) != len(before) || after[0].ID != before[0].ID || after[0].Summary != "alpha is in beta" {
		t.Fatalf("active layer changed by a parked write: before %v after %v", before, after)
	}
	if got, err := e.gov.List(context.Background(), memory.ListFilter{Query: "production"}); err != nil || len(got) != 0 {
		t.Fatalf("search finds the parked text: %v %v", got, err)
	}
	if r, err := e.gov.Get(context.Background(), memory.KeyedSlotID("project-alpha", "publish.auto")); memory.ErrorCode(err) != memory.ENOTFOUND {
		t.Fatalf("the parked policy's slot reads as %v, %v; want not found", r, err)
	}
}

func TestApprovalIsCompareAndSwap(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v1 := e.submit(state("project-alpha", "stage", "beta")).Record
	parked := e.submit(state("project-alpha", "stage", "production")).Record
	if parked.ExpectedHead != v1.ID {
		t.Fatalf("parked against %q, want %q", parked.ExpectedHead, v1.ID)
	}
	// The slot moves on while the write waits: another parked write is approved first.
	other := e.submit(state("project-alpha", "stage", "paused")).Record
	if _, err := e.gov.Approve(ctx, other.ID, memory.Review{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.gov.Approve(ctx, parked.ID, memory.Review{By: "bob"})
	wantCode(t, err, memory.ESTALE)
	if head := checkOneActive(t, e, "project-alpha", "stage"); head.ID != other.ID || head.Summary != "paused" {
		t.Fatalf("stale approval overwrote the newer truth: head %s %q", head.ID, head.Summary)
	}
	re := e.get(parked.ID)
	if re.Status != memory.StatusPending || re.ExpectedHead != other.ID {
		t.Fatalf("stale write should stay pending against the new head: %s against %q", re.Status, re.ExpectedHead)
	}
	// A fresh decision on the re-evaluated item applies it.
	if _, err := e.gov.Approve(ctx, parked.ID, memory.Review{By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if head := checkOneActive(t, e, "project-alpha", "stage"); head.ID != parked.ID {
		t.Fatalf("head %s after the second approval, want %s", head.ID, parked.ID)
	}
}

func TestDoubleApprovalDecidesOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.submit(state("project-alpha", "stage", "beta"))
	parked := e.submit(state("project-alpha", "stage", "production")).Record
	var ok, decided atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = e.gov.Approve(ctx, parked.ID, memory.Review{By: fmt.Sprintf("r%d", i), Route: "slack"})
			} else {
				_, err = e.gov.Reject(ctx, parked.ID, memory.Review{By: fmt.Sprintf("r%d", i), Route: "slack"})
			}
			switch memory.ErrorCode(err) {
			case "":
				ok.Add(1)
			case memory.EDECIDED:
				decided.Add(1)
			default:
				t.Errorf("unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || decided.Load() != 19 {
		t.Fatalf("%d decisions succeeded, %d refused as already decided; want 1 and 19", ok.Load(), decided.Load())
	}
	ex, err := e.gov.Explain(ctx, parked.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range ex.Events {
		if ev.Type == memory.EventApproved || ev.Type == memory.EventDenied {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d decision events in the audit log, want 1", n)
	}
}

// failingStore makes one kind of write fail inside the transaction.
type failingStore struct {
	memory.Store
	failPoint bool
}

type failingTx struct {
	memory.Tx
	failPoint bool
}

func (f *failingStore) Update(ctx context.Context, fn func(memory.Tx) error) error {
	return f.Store.Update(ctx, func(tx memory.Tx) error { return fn(&failingTx{Tx: tx, failPoint: f.failPoint}) })
}

func (f *failingTx) PutRollbackPoint(p *memory.RollbackPoint) error {
	if f.failPoint {
		return errors.New("disk full")
	}
	return f.Tx.PutRollbackPoint(p)
}

func TestRollbackPointIsWrittenWithTheOverride(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Knowledge over knowledge applies under the test policy (over a state,
	// the write would be judged as state, and parked).
	v1 := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "stage", Summary: "beta"}).Record
	v2 := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "stage", Summary: "ga"}).Record
	if v2.Status != memory.StatusActive {
		t.Fatalf("the override is %s, want active", v2.Status)
	}
	ex, err := e.gov.Explain(ctx, v2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ex.RollbackPoint == nil || ex.RollbackPoint.Replaced != v1.ID || ex.RollbackPoint.RecordID != v2.ID {
		t.Fatalf("rollback point %+v, want one restoring %s", ex.RollbackPoint, v1.ID)
	}
	// If the rollback point cannot be written, the override does not happen.
	fs := &failingStore{Store: e.st, failPoint: true}
	gov := memory.NewGovernor(memory.Options{Store: fs, Classifier: e.cls, Now: e.clock.Now})
	if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "stage", Summary: "retired"}); err == nil {
		t.Fatal("submit succeeded although its rollback point failed")
	}
	if head := checkOneActive(t, e, "project-alpha", "stage"); head.ID != v2.ID {
		t.Fatalf("head is %s (%q) after a failed override, want %s", head.ID, head.Summary, v2.ID)
	}
	versions, _ := e.gov.History(ctx, v2.SlotID)
	if len(versions) != 2 {
		t.Fatalf("%d versions after a failed override, want 2", len(versions))
	}
}

func TestRollbackRestoresExactlyWhatWasReplaced(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	know := func(s string) memory.Candidate {
		return memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "owner", Summary: s,
			Value: []byte(`{"owner":"` + s + `"}`)}
	}
	v1 := e.submit(know("alice")).Record
	v2 := e.submit(know("bob")).Record
	v3 := e.submit(know("carol")).Record

	// Not the head: refused without cascade.
	_, err := e.gov.Rollback(ctx, v2.ID, false, "wrong", "ops")
	wantCode(t, err, memory.ECONFLICT)

	res, err := e.gov.Rollback(ctx, v3.ID, false, "carol left", "ops")
	if err != nil {
		t.Fatal(err)
	}
	head := checkOneActive(t, e, "project-alpha", "owner")
	if head.ID != v2.ID || head.Summary != "bob" || string(head.Value) != `{"owner":"bob"}` || head.SupersededBy != "" {
		t.Fatalf("after rolling back v3 the head is %+v, want v2 exactly", head)
	}
	if res.Restored == nil || res.Restored.ID != v2.ID {
		t.Fatalf("result names restored %v", res.Restored)
	}
	if r := e.get(v3.ID); r.Status != memory.StatusRolledBack || r.RollbackReason != "carol left" {
		t.Fatalf("v3 is %s (%q), want rolled_back with its reason", r.Status, r.RollbackReason)
	}
	_, err = e.gov.Rollback(ctx, v3.ID, false, "again", "ops")
	wantCode(t, err, memory.ECONFLICT)

	// Cascade from v1 undoes v2 then v1: the slot is empty again.
	v4 := e.submit(know("dave")).Record
	res, err = e.gov.Rollback(ctx, v1.ID, true, "bad import", "ops")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range res.RolledBack {
		order = append(order, r.ID)
	}
	if strings.Join(order, ",") != strings.Join([]string{v4.ID, v2.ID, v1.ID}, ",") {
		t.Fatalf("cascade order %v, want newest first %v", order, []string{v4.ID, v2.ID, v1.ID})
	}
	if head := checkOneActive(t, e, "project-alpha", "owner"); head != nil {
		t.Fatalf("slot should be empty after cascading to its first version, has %s", head.ID)
	}
	// Rolled-back versions are never resurrected by a later rollback.
	v5 := e.submit(know("erin")).Record
	if v5.Supersedes != "" {
		t.Fatalf("a write into an empty slot supersedes %q", v5.Supersedes)
	}
	if _, err := e.gov.Rollback(ctx, v5.ID, false, "test", "ops"); err != nil {
		t.Fatal(err)
	}
	if head := checkOneActive(t, e, "project-alpha", "owner"); head != nil {
		t.Fatalf("rolling back into an emptied slot restored %s", head.ID)
	}
}

func TestQuarantineUndoesARun(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := memory.Actor{AgentID: "agent-x", RunID: "run-bad"}
	good := memory.Actor{AgentID: "agent-y", RunID: "run-good"}
	write := func(a memory.Actor, layer memory.Layer, fact, s string) *memory.SubmitResult {
		return e.submit(memory.Candidate{Layer: layer, SubjectID: "project-alpha", FactType: fact, Summary: s, Actor: a})
	}
	g1 := write(good, memory.LayerKnowledge, "owner", "alice").Record
	b1 := write(bad, memory.LayerKnowledge, "owner", "mallory")                     // overrides good's fact
	b2 := write(bad, memory.LayerKnowledge, "deadline", "friday")                   // new fact
	b3 := write(bad, memory.LayerKnowledge, "deadline", "saturday")                 // its own override
	b4 := write(bad, memory.LayerKnowledge, "budget", "1000")                       // later replaced by good
	g2 := write(good, memory.LayerKnowledge, "budget", "2000").Record               // someone else's newer truth
	b5 := write(bad, memory.LayerPolicy, "publish.auto", "auto-publish is enabled") // parked
	if b5.Outcome != memory.OutcomeParked {
		t.Fatal("policy write should park")
	}
	noticesBefore := countNotices(t, e)
	res, err := e.gov.Quarantine(ctx, "run", "run-bad", "prompt injection", "ops")
	if err != nil {
		t.Fatal(err)
	}
	// One summary for reviewers, not one message per undone version; the
	// pending write's rejection is announced so its message is updated.
	added := countNotices(t, e)
	if added[memory.NoticeQuarantine]-noticesBefore[memory.NoticeQuarantine] != 1 || added[memory.NoticeRollback] != noticesBefore[memory.NoticeRollback] {
		t.Fatalf("notices before %v after %v: want one quarantine notice and no per-version rollback notices", noticesBefore, added)
	}
	if len(res.RolledBack) != 3 || len(res.Retracted) != 1 || len(res.Rejected) != 1 {
		t.Fatalf("quarantine result %+v, want 3 rolled back, 1 retracted, 1 rejected", res)
	}
	if h := checkOneActive(t, e, "project-alpha", "owner"); h == nil || h.ID != g1.ID {
		t.Fatalf("owner head %v, want good's %s restored", h, g1.ID)
	}
	if h := checkOneActive(t, e, "project-alpha", "deadline"); h != nil {
		t.Fatalf("deadline should be empty, has %s %q", h.ID, h.Summary)
	}
	if h := checkOneActive(t, e, "project-alpha", "budget"); h == nil || h.ID != g2.ID {
		t.Fatalf("budget head %v, want good's newer %s kept", h, g2.ID)
	}
	for _, r := range []*memory.Record{b1.Record, b2.Record, b3.Record, b4.Record} {
		if got := e.get(r.ID).Status; got != memory.StatusRolledBack {
			t.Fatalf("%s (%q) is %s, want rolled_back", r.ID, r.Summary, got)
		}
	}
	if got := e.get(b5.Record.ID).Status; got != memory.StatusRejected {
		t.Fatalf("pending write is %s, want rejected", got)
	}
	// Rolling back good's budget now must not resurrect the quarantined 1000.
	if _, err := e.gov.Rollback(ctx, g2.ID, false, "test", "ops"); err != nil {
		t.Fatal(err)
	}
	if h := checkOneActive(t, e, "project-alpha", "budget"); h != nil {
		t.Fatalf("rollback resurrected quarantined %s %q", h.ID, h.Summary)
	}
	for _, r := range e.active("project-alpha") {
		if r.Actor.RunID == "run-bad" {
			t.Fatalf("active layer still holds %s from the quarantined run", r.ID)
		}
	}
}

func TestRestoreSubjectToPointInTime(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	know := func(fact, s string) *memory.Record {
		return e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: fact, Summary: s}).Record
	}
	o1 := know("owner", "alice")
	d1 := know("deadline", "friday")
	cut := e.clock.Now()
	know("owner", "bob")
	know("owner", "carol")
	know("stage", "ga")
	res, err := e.gov.Restore(ctx, "project-alpha", cut, "bad afternoon", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RolledBack) != 3 {
		t.Fatalf("restore rolled back %d versions, want 3", len(res.RolledBack))
	}
	got := map[string]string{}
	for _, r := range e.active("project-alpha") {
		got[r.FactType] = r.ID
	}
	if len(got) != 2 || got["owner"] != o1.ID || got["deadline"] != d1.ID {
		t.Fatalf("after restore the active layer is %v, want owner=%s deadline=%s", got, o1.ID, d1.ID)
	}
}

func TestExplainAnswersTheFiveQuestions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v1 := e.submit(state("project-alpha", "stage", "beta")).Record
	c := state("project-alpha", "stage", "production")
	c.Evidence = memory.Evidence{Excerpt: "we shipped today", SourceRef: "chat:42"}
	parked := e.submit(c).Record
	if _, err := e.gov.Approve(ctx, parked.ID, memory.Review{By: "alice", Route: "slack", Note: "confirmed"}); err != nil {
		t.Fatal(err)
	}
	ex, err := e.gov.Explain(ctx, parked.ID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case ex.Who.AgentID != "agent-1" || ex.Who.RunID != "run-1":
		t.Fatalf("who: %+v", ex.Who)
	case ex.Replaced == nil || ex.Replaced.ID != v1.ID:
		t.Fatalf("replaced: %+v", ex.Replaced)
	case ex.Evidence.Excerpt != "we shipped today":
		t.Fatalf("evidence: %+v", ex.Evidence)
	case ex.RollbackPoint == nil || ex.RollbackPoint.Replaced != v1.ID:
		t.Fatalf("rollback point: %+v", ex.RollbackPoint)
	case len(ex.Rules) == 0 || ex.Rules[0].Rule != "override":
		t.Fatalf("rules: %+v", ex.Rules)
	case ex.Review == nil || ex.Review.By != "alice" || ex.Review.Outcome != memory.OutcomeApproved:
		t.Fatalf("review: %+v", ex.Review)
	}
	var types []string
	for _, ev := range ex.Events {
		types = append(types, string(ev.Type))
	}
	if strings.Join(types, ",") != "parked,applied,approved" {
		t.Fatalf("audit trail %v", types)
	}
}

func TestPolicyFailureFailsClosed(t *testing.T) {
	cases := []struct {
		name string
		cls  memory.ClassifierFunc
	}{
		{"error", func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
			return memory.Decision{}, errors.New("rego: undefined decision")
		}},
		{"unknown action", func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
			return memory.Decision{Risk: memory.RiskLow, Action: "yolo"}, nil
		}},
		{"timeout", func(ctx context.Context, _ *memory.PolicyInput) (memory.Decision, error) {
			<-ctx.Done()
			return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := badgertest.New(t)
			gov := memory.NewGovernor(memory.Options{Store: st, Classifier: tc.cls, PolicyTimeout: 20 * time.Millisecond})
			res, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerCheckpoint, SubjectID: "task-1", FactType: "step", Summary: "step 3 done"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != memory.OutcomeParked || res.Record.Decision.Reasons[0].Rule != "policy_error" {
				t.Fatalf("outcome %s reasons %+v, want parked with policy_error", res.Outcome, res.Record.Decision.Reasons)
			}
		})
	}
}

func TestRejectedWriteIsKeptButNeverActive(t *testing.T) {
	e := newEnv(t)
	res := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "u1", Summary: "my password is hunter2"})
	if res.Outcome != memory.OutcomeRefused || res.Record.Status != memory.StatusRejected {
		t.Fatalf("outcome %s, want rejected", res.Outcome)
	}
	if len(e.active("u1")) != 0 {
		t.Fatal("a rejected write is readable")
	}
	if strings.Contains(res.Record.Summary, "hunter2") || !strings.HasPrefix(res.Record.Summary, "[redacted") {
		t.Fatalf("rejected record keeps its text: %q", res.Record.Summary)
	}
	// Nothing in the database, records, indexes or audit log, holds the secret.
	err := e.st.DB().View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if bytes.Contains(v, []byte("hunter2")) || bytes.Contains(it.Item().Key(), []byte("hunter2")) {
				t.Errorf("key %q holds the rejected secret", it.Item().Key())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGovernedDeleteAndAppend(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pol := e.submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "publish.auto", Summary: "auto-publish is disabled"}).Record
	if _, err := e.gov.Approve(ctx, pol.ID, memory.Review{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	// Deleting a policy memory is parked like any high-risk change.
	del := e.submit(memory.Candidate{Op: memory.OpDelete, SlotID: pol.SlotID})
	if del.Outcome != memory.OutcomeParked {
		t.Fatalf("delete of a policy: outcome %s, want parked", del.Outcome)
	}
	if h := checkOneActive(t, e, "project-alpha", "publish.auto"); h == nil || h.ID != pol.ID {
		t.Fatal("a parked delete removed the policy")
	}
	if _, err := e.gov.Approve(ctx, del.Record.ID, memory.Review{By: "alice", Mode: memory.ModeAppend}); memory.ErrorCode(err) != memory.EINVALID {
		t.Fatalf("append approval of a deletion: %v, want invalid", err)
	}
	if _, err := e.gov.Approve(ctx, del.Record.ID, memory.Review{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if h := checkOneActive(t, e, "project-alpha", "publish.auto"); h != nil {
		t.Fatal("approved delete left the policy active")
	}
	// Rolling back the deletion brings the policy back.
	if _, err := e.gov.Rollback(ctx, del.Record.ID, false, "deleted by mistake", "ops"); err != nil {
		t.Fatal(err)
	}
	if h := checkOneActive(t, e, "project-alpha", "publish.auto"); h == nil || h.ID != pol.ID {
		t.Fatal("rolling back a delete did not restore the policy")
	}

	// Append: a second opinion kept beside the first, never for state/policy.
	e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: "beta"})
	st := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: "ga"}).Record
	_, err := e.gov.Approve(ctx, st.ID, memory.Review{By: "alice", Mode: memory.ModeAppend})
	wantCode(t, err, memory.EINVALID)
	if e.get(st.ID).Status != memory.StatusPending {
		t.Fatal("a refused append approval decided the write")
	}
}

func TestEverythingSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	applied := e.submit(state("project-alpha", "stage", "beta")).Record
	approved := e.submit(state("project-alpha", "owner", "alice")).Record
	e.submit(state("project-alpha", "owner", "bob")) // parked, then approved
	pendingOwner := e.submit(state("project-alpha", "owner", "carol")).Record
	reviews, _ := e.gov.Reviews(ctx)
	if _, err := e.gov.Approve(ctx, reviews[0].Record.ID, memory.Review{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	rejected := e.submit(state("project-alpha", "stage", "ga")).Record
	if _, err := e.gov.Reject(ctx, rejected.ID, memory.Review{By: "bob", Note: "not yet"}); err != nil {
		t.Fatal(err)
	}
	before, _ := e.gov.Events(ctx, "", 0)

	e.restart()

	if got := e.get(applied.ID); got.Status != memory.StatusActive {
		t.Fatalf("applied write is %s after restart", got.Status)
	}
	if got := e.get(approved.ID); got.Status != memory.StatusSuperseded {
		t.Fatalf("superseded version is %s after restart", got.Status)
	}
	if got := e.get(rejected.ID); got.Status != memory.StatusRejected || got.Review.Note != "not yet" {
		t.Fatalf("rejection lost: %+v", got.Review)
	}
	q, err := e.gov.Reviews(ctx)
	if err != nil || len(q) != 1 || q[0].Record.ID != pendingOwner.ID || !q[0].Stale {
		t.Fatalf("review queue after restart: %v %v; want only %s, stale", q, err, pendingOwner.ID)
	}
	after, _ := e.gov.Events(ctx, "", 0)
	if len(after) != len(before) {
		t.Fatalf("audit log has %d events after restart, %d before", len(after), len(before))
	}
	var notices int
	e.st.View(ctx, func(tx memory.ReadTx) error {
		return tx.ScanNotices(func(*memory.Notice) bool { notices++; return true })
	})
	if notices == 0 {
		t.Fatal("outbox empty after restart")
	}
	checkOneActive(t, e, "project-alpha", "owner")
	checkOneActive(t, e, "project-alpha", "stage")
}

func TestInvalidCandidatesWriteNothing(t *testing.T) {
	e := newEnv(t)
	cases := []memory.Candidate{
		{Layer: "beliefs", SubjectID: "s", Summary: "x"},
		{Layer: memory.LayerState, Summary: "no subject"},
		{Layer: memory.LayerState, SubjectID: "s", Summary: ""},
		{Layer: memory.LayerState, SubjectID: "s", Summary: strings.Repeat("x", memory.MaxSummaryBytes+1)},
		{Layer: memory.LayerState, SubjectID: "bad\x00id", Summary: "x"},
		{Layer: memory.LayerState, SubjectID: "s", Summary: "x", CandidateSource: "rumour"},
		{Layer: memory.LayerState, SubjectID: "s", Summary: "x", Value: []byte("{not json")},
	}
	for _, c := range cases {
		_, err := e.gov.Submit(context.Background(), c)
		wantCode(t, err, memory.EINVALID)
	}
	evs, _ := e.gov.Events(context.Background(), "", 0)
	if len(evs) != 0 {
		t.Fatalf("invalid candidates wrote %d events", len(evs))
	}
}

func countNotices(t *testing.T, e *env) map[memory.NoticeKind]int {
	t.Helper()
	n := map[memory.NoticeKind]int{}
	err := e.st.View(context.Background(), func(tx memory.ReadTx) error {
		return tx.ScanNotices(func(x *memory.Notice) bool { n[x.Kind]++; return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPanicInAWriteReleasesTheSlot panics inside a write's transaction (in
// the classifier) and then writes to the same slot again: the slot's lock
// must have been released, as net/http recovers a handler's panic and the
// process goes on.
func TestPanicInAWriteReleasesTheSlot(t *testing.T) {
	st := badgertest.NewWith(t, store.Options{GroupCommit: true})
	var panicking atomic.Bool
	panicking.Store(true)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(
		func(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
			if panicking.Load() {
				panic("policy bug")
			}
			return testkit.Rules(ctx, in)
		})})
	cand := memory.Candidate{Layer: memory.LayerCheckpoint, SubjectID: "task", FactType: "progress", Summary: "step 1"}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the classifier's panic did not reach the caller")
			}
		}()
		gov.Submit(context.Background(), cand)
	}()
	panicking.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := gov.Submit(ctx, cand); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the slot is still locked after a panic in a write")
	}
}
