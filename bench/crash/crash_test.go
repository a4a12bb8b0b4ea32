package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/bench/sidecar"
	"github.com/memgate/memgate/bench/sidecar/fakefleet"
	"github.com/memgate/memgate/bench/sidecar/sidecartest"
)

// sidecarBin is cmd/sidecar, built once for the tests of this package.
var sidecarBin = sidecartest.New("memgate-crash-bin-")

func TestMain(m *testing.M) {
	fakefleet.MaybeRun() // this binary also plays the instances of a fleet
	code := m.Run()
	sidecarBin.Remove()
	os.Exit(code)
}

func claimsOf(acked []AckKind, tried ...Op) claims {
	c := claims{acked: map[AckKind]bool{}, tried: map[Op]bool{}}
	for _, k := range acked {
		c.acked[k] = true
	}
	for _, op := range tried {
		c.tried[op] = true
	}
	return c
}

func TestCheckRecord(t *testing.T) {
	approved := &sidecar.Review{Outcome: "approved"}
	rejected := &sidecar.Review{Outcome: "rejected"}
	for _, tc := range []struct {
		name   string
		claims claims
		rec    sidecar.Record
		ok     bool
	}{
		{"applied, still active", claimsOf([]AckKind{AckApplied}), sidecar.Record{Status: "active"}, true},
		{"applied, superseded since", claimsOf([]AckKind{AckApplied}), sidecar.Record{Status: "superseded"}, true},
		{"applied, back to pending", claimsOf([]AckKind{AckApplied}), sidecar.Record{Status: "pending_review"}, false},
		{"applied, rolled back by nobody", claimsOf([]AckKind{AckApplied}), sidecar.Record{Status: "rolled_back"}, false},
		{"applied, rollback cut off by the kill", claimsOf([]AckKind{AckApplied}, OpRollback), sidecar.Record{Status: "rolled_back"}, true},
		{"rollback acknowledged, active again", claimsOf([]AckKind{AckApplied, AckRolledBack}, OpRollback), sidecar.Record{Status: "active"}, false},
		{"rollback acknowledged", claimsOf([]AckKind{AckApplied, AckRolledBack}, OpRollback), sidecar.Record{Status: "rolled_back"}, true},
		{"parked, still pending", claimsOf([]AckKind{AckParked}), sidecar.Record{Status: "pending_review"}, true},
		{"parked, active without an approval", claimsOf([]AckKind{AckParked}), sidecar.Record{Status: "active"}, false},
		{"parked, approval cut off", claimsOf([]AckKind{AckParked}, OpApprove), sidecar.Record{Status: "active", Review: approved}, true},
		{"parked, rejected without a call", claimsOf([]AckKind{AckParked}), sidecar.Record{Status: "rejected"}, false},
		{"approval acknowledged, pending again", claimsOf([]AckKind{AckParked, AckApproved}, OpApprove), sidecar.Record{Status: "pending_review"}, false},
		{"approval acknowledged, superseded since", claimsOf([]AckKind{AckParked, AckApproved}, OpApprove), sidecar.Record{Status: "superseded", Review: approved}, true},
		{"approval acknowledged, review lost", claimsOf([]AckKind{AckParked, AckApproved}, OpApprove), sidecar.Record{Status: "active"}, false},
		{"approved then rolled back", claimsOf([]AckKind{AckParked, AckApproved}, OpApprove, OpRollback), sidecar.Record{Status: "rolled_back", Review: approved}, true},
		{"rejection acknowledged", claimsOf([]AckKind{AckParked, AckRejected}, OpReject), sidecar.Record{Status: "rejected", Review: rejected}, true},
		{"rejection acknowledged, but active", claimsOf([]AckKind{AckParked, AckRejected}, OpReject, OpApprove), sidecar.Record{Status: "active", Review: approved}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problem := checkRecord(tc.claims, tc.rec)
			if (problem == "") != tc.ok {
				t.Fatalf("checkRecord = %q, want ok=%v", problem, tc.ok)
			}
		})
	}
}

// TestCheckRecordHoldsRetentionToItsPromises: active and pending memories
// keep the text they were acknowledged with; a version whose text is gone
// lost it to the retention pass and kept its skeleton.
func TestCheckRecordHoldsRetentionToItsPromises(t *testing.T) {
	applied := claimsOf([]AckKind{AckApplied})
	applied.summary = "step 3"
	parked := claimsOf([]AckKind{AckParked})
	parked.summary = "deploys need a human"
	now := time.Now()
	decision := &sidecar.Decision{Risk: "low", Action: "apply"}
	purged := func(f func(*sidecar.Record)) sidecar.Record {
		r := sidecar.Record{ID: "r1", SlotID: "s1", Status: "superseded", SupersededBy: "r2", CreatedAt: now, Decision: decision,
			Erased: &sidecar.Erased{ID: "retention-2026-01-01T00:00:00Z", At: now, TextHash: "ab12"}}
		if f != nil {
			f(&r)
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		claims claims
		rec    sidecar.Record
		ok     bool
	}{
		{"active with its text", applied, sidecar.Record{Status: "active", Summary: "step 3"}, true},
		{"active, text changed", applied, sidecar.Record{Status: "active", Summary: "step 4"}, false},
		{"active, purged", applied, sidecar.Record{Status: "active", Erased: &sidecar.Erased{ID: "retention-x"}}, false},
		{"pending, purged", parked, sidecar.Record{Status: "pending_review", Erased: &sidecar.Erased{ID: "retention-x"}}, false},
		{"pending with its text", parked, sidecar.Record{Status: "pending_review", Summary: "deploys need a human"}, true},
		{"superseded with its text", applied, sidecar.Record{Status: "superseded", Summary: "step 3"}, true},
		{"superseded, text gone without a mark", applied, sidecar.Record{Status: "superseded"}, false},
		{"superseded, purged with its skeleton", applied, purged(nil), true},
		{"superseded, purged by an erasure", applied, purged(func(r *sidecar.Record) { r.Erased.ID = "01ERASURE" }), false},
		{"superseded, purged, text left", applied, purged(func(r *sidecar.Record) { r.Summary = "step 3" }), false},
		{"superseded, purged, decision lost", applied, purged(func(r *sidecar.Record) { r.Decision = nil }), false},
		{"superseded, purged, hash lost", applied, purged(func(r *sidecar.Record) { r.Erased.TextHash = "" }), false},
		{"superseded, purged, successor lost", applied, purged(func(r *sidecar.Record) { r.SupersededBy = "" }), false},
		{"superseded, purged, time lost", applied, purged(func(r *sidecar.Record) { r.CreatedAt = time.Time{} }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problem := checkRecord(tc.claims, tc.rec)
			if (problem == "") != tc.ok {
				t.Fatalf("checkRecord = %q, want ok=%v", problem, tc.ok)
			}
		})
	}
}

// TestHarnessShort is the short version CI runs: a few kill cycles of the
// real binary under concurrent writers and a reviewer, with an erasure
// each cycle and a retention of 300ms purging old versions meanwhile.
func TestHarnessShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	var acks, progress bytes.Buffer
	rep, err := Run(context.Background(), Config{Binary: sidecarBin.Path(t), DataDir: t.TempDir(), Cycles: 3,
		Writers: 3, Reviewers: 1, MinUptime: 400 * time.Millisecond, MaxUptime: 900 * time.Millisecond,
		Slots: 4, Seed: 8, AckLog: &acks, Progress: &progress,
		Retention: 300 * time.Millisecond, RetentionInterval: 100 * time.Millisecond})
	var out bytes.Buffer
	rep.Print(&out)
	t.Logf("\n%s%s", progress.String(), out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the harness found losses or a doubly active slot")
	}
	if rep.Cycles != 3 {
		t.Fatalf("%d cycles run, want 3", rep.Cycles)
	}
	if rep.Purged == 0 || rep.AuditChecks != 3 {
		t.Errorf("%d versions found purged, the chain verified %d times: want some, and 3 (after each restart and at the end)", rep.Purged, rep.AuditChecks)
	}
	for _, k := range []AckKind{AckApplied, AckParked, AckApproved} {
		if rep.Acked[k] == 0 {
			t.Errorf("no %s item acknowledged: the workload did not exercise it", k)
		}
	}
	if rep.ServerErrors != 0 || rep.Unexpected != 0 {
		t.Errorf("%d server errors, %d unexpected answers", rep.ServerErrors, rep.Unexpected)
	}
	total := 0
	for _, n := range rep.Acked {
		total += n
	}
	if rep.Checked < total/2 {
		t.Errorf("%d records checked for %d acknowledged items", rep.Checked, total)
	}
	// The ack log has one JSON line per acknowledged item.
	lines := strings.Split(strings.TrimSpace(acks.String()), "\n")
	if len(lines) != total {
		t.Fatalf("ack log has %d lines, want %d", len(lines), total)
	}
	// Each names its record and its cycle, in order. (A cycle may end
	// before any of its calls is answered: the first line need not be of
	// cycle 1.)
	cycle := 1
	for _, line := range lines {
		var ack Ack
		if err := json.Unmarshal([]byte(line), &ack); err != nil || ack.RecordID == "" || ack.Cycle < cycle || ack.Cycle > rep.Cycles {
			t.Fatalf("ack line %q after cycle %d: %+v, %v", line, cycle, ack, err)
		}
		cycle = ack.Cycle
	}
}

// TestVerifyFindsLosses proves the checks can fail: a sidecar restarted on
// an empty data directory has lost everything acknowledged before.
func TestVerifyFindsLosses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	p, err := sidecar.Start(ctx, sidecar.Options{Binary: sidecarBin.Path(t), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := sidecar.NewClient(p, http.DefaultClient)
	ledger := NewLedger(nil)
	for i := range 3 {
		rec, status, err := c.Write(ctx, map[string]any{"layer": "checkpoint", "subjectId": "lost", "factType": fmt.Sprint("step.", i), "summary": "done"})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("write: %d %v", status, err)
		}
		ledger.Ack(Ack{Kind: AckApplied, RecordID: rec.ID, Slot: slotOf(rec), Cycle: 1})
	}
	// Everything is there on the same sidecar.
	v, err := verify(ctx, c, ledger, 0, 2)
	if err != nil || len(v.losses) != 0 || v.records != 3 || v.slots != 3 {
		t.Fatalf("same sidecar: %+v, %v", v, err)
	}
	p.Kill()

	empty, err := sidecar.Start(ctx, sidecar.Options{Binary: sidecarBin.Path(t), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Kill()
	v, err = verify(ctx, sidecar.NewClient(empty, http.DefaultClient), ledger, 0, 2)
	if len(v.losses) != 3 {
		t.Fatalf("empty sidecar: %d losses, want 3: %+v", len(v.losses), v.losses)
	}
	if !strings.Contains(v.losses[0].Problem, "not found") {
		t.Fatalf("loss %+v does not say the record is missing", v.losses[0])
	}
	if err == nil {
		t.Fatal("history of the vanished slots read without an error")
	}
}

// TestHarnessFleet runs the fleet mode: three instances on one shared
// store, one killed per cycle, the store itself crashed and restarted once,
// after a kill or under the workers' calls. The instances are forwarders
// to one real sidecar that plays the shared database (package fakefleet),
// so this tests the harness's fleet mechanics, not a shared store.
func TestHarnessFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, underLoad := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart under load %v", underLoad), func(t *testing.T) {
			ctx := context.Background()
			dbDir, file := t.TempDir(), filepath.Join(t.TempDir(), "backend")
			var db *sidecar.Process
			startDB := func() error {
				p, err := sidecar.Start(ctx, sidecar.Options{Binary: sidecarBin.Path(t), DataDir: dbDir})
				if err != nil {
					return err
				}
				db = p
				return fakefleet.WriteBackend(file, p.Agent, p.Admin)
			}
			if err := startDB(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Kill() })
			restarts := 0
			crashDB := func(context.Context) error {
				restarts++
				db.Kill()
				return startDB()
			}
			var progress bytes.Buffer
			rep, err := Run(ctx, Config{Binary: self, DataDir: t.TempDir(), Store: "fake://one-backend", Env: fakefleet.Env(file),
				Instances: 3, Cycles: 3, Writers: 3, Reviewers: 2, MinUptime: 400 * time.Millisecond, MaxUptime: 700 * time.Millisecond,
				Slots: 4, Seed: 11, Progress: &progress, RestartStore: crashDB, RestartStoreEvery: 2, RestartStoreUnderLoad: underLoad})
			var out bytes.Buffer
			rep.Print(&out)
			t.Logf("\n%s%s", progress.String(), out.String())
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Cycles != 3 {
				t.Fatalf("%d cycles, ok=%v", rep.Cycles, rep.OK())
			}
			if rep.StoreRestarts != 1 || restarts != 1 {
				t.Fatalf("store restarted %d times (report %d), want once in cycle 2", restarts, rep.StoreRestarts)
			}
			if got := strings.Count(progress.String(), "killed instance(s) ["); got != 3 {
				t.Fatalf("%d cycles killed one instance, want 3:\n%s", got, progress.String())
			}
			if !strings.Contains(out.String(), "instances: 3 sharing one fake database; database restarts: 1") {
				t.Errorf("report does not describe the fleet:\n%s", out.String())
			}
			for _, k := range []AckKind{AckApplied, AckParked, AckApproved} {
				if rep.Acked[k] == 0 {
					t.Errorf("no %s item acknowledged: the workload did not exercise it", k)
				}
			}
			if rep.Checked == 0 || rep.Slots == 0 {
				t.Fatalf("nothing checked: %d records, %d slots", rep.Checked, rep.Slots)
			}
		})
	}
}

func TestFailedAnswersAreCountedByKind(t *testing.T) {
	w := &workload{}
	for _, f := range []struct {
		status int
		err    error
	}{
		{0, &sidecar.APIError{Status: 503, Code: "unavailable", Message: "the database is unavailable"}},
		{0, &sidecar.APIError{Status: 503, Code: "unavailable", Message: "a later message"}},
		{500, nil},
		{0, &sidecar.APIError{Status: 409, Code: "conflict", Message: "not the head"}},
		{0, fmt.Errorf("connection reset by peer")},
	} {
		w.failed(f.status, f.err)
	}
	if w.serverErrors.Load() != 3 || w.unexpected.Load() != 1 || w.cutOff.Load() != 1 {
		t.Fatalf("server errors %d, unexpected %d, cut off %d; want 3, 1, 1", w.serverErrors.Load(), w.unexpected.Load(), w.cutOff.Load())
	}
	want := map[string]FailedAnswer{
		"HTTP 503 unavailable": {Count: 2, Example: "the database is unavailable"},
		"HTTP 500":             {Count: 1},
		"HTTP 409 conflict":    {Count: 1, Example: "not the head"},
	}
	if len(w.answers) != len(want) {
		t.Fatalf("answers %+v, want %+v", w.answers, want)
	}
	for k, a := range want {
		if w.answers[k] != a {
			t.Errorf("answers[%q] = %+v, want %+v", k, w.answers[k], a)
		}
	}
}
