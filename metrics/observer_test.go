package metrics_test

import (
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

// TestGovernorTransitionsAreCounted drives a real Governor on Badger through
// every transition the Observer hears about and checks the exported values
// after each step.
func TestGovernorTransitionsAreCounted(t *testing.T) {
	e := newEnv(t, nil)
	var v1, parkedOff, parkedMaybe *memory.Record

	steps := []struct {
		name string
		do   func(t *testing.T)
		want []series
	}{
		{"a new fact applies", func(t *testing.T) {
			v1 = e.submit(write(memory.LayerState, "project-alpha", "publish.auto", "auto-publish is on", "native", "run-1")).Record
		}, []series{
			{"memgate_writes_total", []string{"dialect", "native", "action", "apply", "risk", "low"}, 1},
			{"memgate_conflicts_total", []string{"kind", "override_parked"}, 0},
			{"memgate_review_queue_depth", nil, 0},
		}},
		{"an override is parked", func(t *testing.T) {
			e.clock.Advance(time.Minute)
			parkedOff = e.submit(write(memory.LayerState, "project-alpha", "publish.auto", "auto-publish is off", "mem0", "run-2")).Record
		}, []series{
			{"memgate_writes_total", []string{"dialect", "mem0", "action", "review", "risk", "high"}, 1},
			{"memgate_conflicts_total", []string{"kind", "override_parked"}, 1},
			{"memgate_conflicts_total", []string{"kind", "pending_vs_pending"}, 0},
			{"memgate_review_queue_depth", nil, 1},
			{"memgate_review_queue_oldest_age_seconds", nil, 0},
		}},
		{"a second override waits beside the first", func(t *testing.T) {
			e.clock.Advance(5 * time.Minute)
			parkedMaybe = e.submit(write(memory.LayerState, "project-alpha", "publish.auto", "auto-publish needs a human", "mcp", "run-2")).Record
		}, []series{
			{"memgate_writes_total", []string{"dialect", "mcp", "action", "review", "risk", "high"}, 1},
			{"memgate_conflicts_total", []string{"kind", "override_parked"}, 2},
			{"memgate_conflicts_total", []string{"kind", "pending_vs_pending"}, 1},
			{"memgate_review_queue_depth", nil, 2},
			{"memgate_review_queue_oldest_age_seconds", nil, 300},
		}},
		{"a reviewer approves the first after ten minutes", func(t *testing.T) {
			e.clock.Advance(5 * time.Minute)
			if _, err := e.gov.Approve(e.ctx, parkedOff.ID, memory.Review{By: "U1", Route: "slack"}); err != nil {
				t.Fatal(err)
			}
		}, []series{
			{"memgate_review_decisions_total", []string{"outcome", "approved", "route", "slack"}, 1},
			{"memgate_review_wait_seconds", []string{"outcome", "approved"}, 1},
			{"memgate_review_queue_depth", nil, 1},
			{"memgate_review_queue_oldest_age_seconds", nil, 300}, // the second one, parked five minutes ago
		}},
		{"approving the second is stale", func(t *testing.T) {
			_, err := e.gov.Approve(e.ctx, parkedMaybe.ID, memory.Review{By: "U1", Route: "admin"})
			if memory.ErrorCode(err) != memory.ESTALE {
				t.Fatalf("approve after the slot changed: %v, want stale", err)
			}
		}, []series{
			{"memgate_stale_approvals_total", nil, 1},
			{"memgate_review_decisions_total", []string{"outcome", "approved", "route", "admin"}, 0},
			{"memgate_review_queue_depth", nil, 1},
		}},
		{"the second is rejected from the CLI", func(t *testing.T) {
			if _, err := e.gov.Reject(e.ctx, parkedMaybe.ID, memory.Review{By: "ops", Route: "cli"}); err != nil {
				t.Fatal(err)
			}
		}, []series{
			{"memgate_review_decisions_total", []string{"outcome", "rejected", "route", "cli"}, 1},
			{"memgate_review_wait_seconds", []string{"outcome", "rejected"}, 1},
			{"memgate_review_queue_depth", nil, 0},
			{"memgate_review_queue_oldest_age_seconds", nil, 0},
		}},
		{"the approved override is rolled back", func(t *testing.T) {
			res, err := e.gov.Rollback(e.ctx, parkedOff.ID, false, "wrong_override: the user never said so", "ops")
			if err != nil {
				t.Fatal(err)
			}
			if res.Restored == nil || res.Restored.ID != v1.ID {
				t.Fatalf("rollback restored %v, want %s", res.Restored, v1.ID)
			}
		}, []series{
			{"memgate_rollbacks_total", []string{"scope", "record", "reason", "wrong_override"}, 1},
			{"memgate_rolled_back_records_total", []string{"scope", "record"}, 1},
			{"memgate_rolled_back_records_total", []string{"scope", "cascade"}, 0},
		}},
		{"knowledge overrides apply; a cascade undoes two versions", func(t *testing.T) {
			e.submit(write(memory.LayerKnowledge, "project-alpha", "owner", "owner is Ann", "native", "run-3"))
			k2 := e.submit(write(memory.LayerKnowledge, "project-alpha", "owner", "owner is Bob", "native", "run-3")).Record
			e.submit(write(memory.LayerKnowledge, "project-alpha", "owner", "owner is Cid", "native", "run-3"))
			res, err := e.gov.Rollback(e.ctx, k2.ID, true, "", "ops")
			if err != nil || len(res.RolledBack) != 2 {
				t.Fatalf("cascade rollback: %v, %+v; want two versions undone", err, res)
			}
		}, []series{
			{"memgate_writes_total", []string{"dialect", "native", "action", "apply", "risk", "low"}, 4},
			{"memgate_conflicts_total", []string{"kind", "override_applied"}, 2},
			{"memgate_rollbacks_total", []string{"scope", "cascade", "reason", "unspecified"}, 1},
			{"memgate_rolled_back_records_total", []string{"scope", "cascade"}, 2},
		}},
		{"a run is quarantined", func(t *testing.T) {
			e.submit(write(memory.LayerPreference, "user-7", "tone", "prefers short answers", "mcp", "run-bad"))
			e.submit(write(memory.LayerPreference, "user-7", "language", "prefers French", "mcp", "run-bad"))
			res, err := e.gov.Quarantine(e.ctx, "run", "run-bad", "prompt injection", "ops")
			if err != nil || len(res.RolledBack) != 2 {
				t.Fatalf("quarantine: %v, %+v; want two versions undone", err, res)
			}
		}, []series{
			{"memgate_rollbacks_total", []string{"scope", "quarantine", "reason", "other"}, 1},
			{"memgate_rolled_back_records_total", []string{"scope", "quarantine"}, 2},
		}},
		{"a subject is restored to a point in time", func(t *testing.T) {
			e.clock.Advance(time.Hour)
			e.submit(write(memory.LayerCheckpoint, "task-9", "progress", "step 1 done", "native", "run-4"))
			point := e.clock.Now()
			e.clock.Advance(time.Minute)
			e.submit(write(memory.LayerCheckpoint, "task-9", "progress", "step 2 done", "native", "run-4"))
			res, err := e.gov.Restore(e.ctx, "task-9", point, "redo step 2", "ops")
			if err != nil || len(res.RolledBack) != 1 {
				t.Fatalf("restore: %v, %+v; want one version undone", err, res)
			}
		}, []series{
			{"memgate_rollbacks_total", []string{"scope", "restore", "reason", "other"}, 1},
			{"memgate_rolled_back_records_total", []string{"scope", "restore"}, 1},
		}},
		{"policy rejects a secret", func(t *testing.T) {
			if res := e.submit(write(memory.LayerKnowledge, "user-7", "", "my password is hunter2", "native", "run-4")); res.Outcome != memory.OutcomeRefused {
				t.Fatalf("outcome %s, want rejected", res.Outcome)
			}
		}, []series{
			{"memgate_writes_total", []string{"dialect", "native", "action", "reject", "risk", "high"}, 1},
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do(t)
			e.want(s.want)
		})
	}
}

// TestReviewWaitIsMeasuredFromParking checks the histogram's sum and bucket:
// a write approved 90 minutes after it was parked lands in the 2h bucket.
func TestReviewWaitIsMeasuredFromParking(t *testing.T) {
	e := newEnv(t, nil)
	e.submit(write(memory.LayerState, "project-alpha", "stage", "beta", "native", "run-1"))
	parked := e.submit(write(memory.LayerState, "project-alpha", "stage", "production", "native", "run-1")).Record
	e.clock.Advance(90 * time.Minute)
	if _, err := e.gov.Approve(e.ctx, parked.ID, memory.Review{By: "U1", Route: "slack"}); err != nil {
		t.Fatal(err)
	}
	h := histogram(t, e.reg, "memgate_review_wait_seconds", "outcome", "approved")
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 5400 {
		t.Fatalf("wait histogram: count %d sum %v, want 1 and 5400", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 5400 {
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}
