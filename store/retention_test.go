package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

// retentionWorld is a Badger store on disk and a governor on a clock the
// test moves.
func retentionWorld(t *testing.T) (*store.Store, *memory.Governor, *testkit.Clock) {
	t.Helper()
	st := badgertest.New(t)
	clk := testkit.NewTicking(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)
	return st, memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testkit.Rules), Now: clk.Now}), clk
}

// TestRetentionPurgesOldVersionsOnly: past their layer's retention,
// superseded and rejected versions lose their text; the active version,
// and versions of a layer kept for ever, keep it; each round is bounded;
// the chain stays valid.
func TestRetentionPurgesOldVersionsOnly(t *testing.T) {
	ctx := context.Background()
	st, gov, clk := retentionWorld(t)
	submit := func(c memory.Candidate) *memory.Record {
		t.Helper()
		out, err := gov.Submit(ctx, c)
		if err != nil && memory.ErrorCode(err) != memory.EREJECTED {
			t.Fatal(err)
		}
		return out.Record
	}
	k1 := submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", FactType: "db", Summary: "OLDTEXT-1 the db is mysql"})
	k2 := submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", FactType: "db", Summary: "OLDTEXT-2 the db is postgres"})
	k3 := submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", FactType: "db", Summary: "the db is postgres 15"})
	rej := submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", Summary: "OLDTEXT-3 the password is hunter2"})
	p1 := submit(memory.Candidate{Layer: memory.LayerPreference, SubjectID: "p", FactType: "tone", Summary: "KEEP-1 terse"})
	submit(memory.Candidate{Layer: memory.LayerPreference, SubjectID: "p", FactType: "tone", Summary: "verbose"})
	rules := memory.Retention{Layers: map[memory.Layer]time.Duration{memory.LayerKnowledge: 90 * 24 * time.Hour}}

	// Not yet due.
	res, err := gov.RetentionPass(ctx, rules, 100)
	if err != nil || res.Purged != 0 {
		t.Fatalf("a pass before the retention ran out: %+v %v", res, err)
	}
	clk.Advance(91 * 24 * time.Hour)
	// Bounded: one version a round.
	res, err = gov.RetentionPass(ctx, rules, 1)
	if err != nil || res.Purged != 1 || res.Behind != 2 {
		t.Fatalf("a bounded round: %+v %v", res, err)
	}
	res, err = gov.RetentionPass(ctx, rules, 100)
	if err != nil || res.Purged != 2 || res.Behind != 0 {
		t.Fatalf("the next round: %+v %v", res, err)
	}
	for _, c := range []struct {
		rec    *memory.Record
		purged bool
		status memory.Status
	}{
		{k1, true, memory.StatusSuperseded}, {k2, true, memory.StatusSuperseded}, {rej, true, memory.StatusRejected},
		{k3, false, memory.StatusActive}, {p1, false, memory.StatusSuperseded},
	} {
		got, err := gov.Get(ctx, c.rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if (got.Erased != nil) != c.purged || (got.Summary == "") != c.purged || got.Status != c.status {
			t.Errorf("%q: erased %v, summary %q, status %s", c.rec.Summary, got.Erased != nil, got.Summary, got.Status)
		}
	}
	page, err := gov.EventsPage(ctx, "", 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		if strings.Contains(string(e.Input), "OLDTEXT") {
			t.Errorf("event %s (%s) still holds old text", e.ID, e.Type)
		}
	}
	if rep, err := memory.VerifyChain(ctx, st); err != nil || !rep.OK || rep.Erased == 0 {
		t.Fatalf("the chain after retention: %+v %v", rep, err)
	}
}

// TestExpiredMemoriesLeaveTheActiveLayer: a memory past its expiry is a
// deletion after the pass, recorded as expired.
func TestExpiredMemoriesLeaveTheActiveLayer(t *testing.T) {
	ctx := context.Background()
	_, gov, clk := retentionWorld(t)
	out, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", Summary: "sale ends friday",
		ExpiresAt: clk.Now().Add(48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", Summary: "the shop is in town"}); err != nil {
		t.Fatal(err)
	}
	if res, err := gov.RetentionPass(ctx, memory.Retention{}, 100); err != nil || res.Expired != 0 {
		t.Fatalf("before the expiry: %+v %v", res, err)
	}
	clk.Advance(49 * time.Hour)
	if res, err := gov.RetentionPass(ctx, memory.Retention{}, 100); err != nil || res.Expired != 1 {
		t.Fatalf("after the expiry: %+v %v", res, err)
	}
	active, err := gov.List(ctx, memory.ListFilter{SubjectID: "p"})
	if err != nil || len(active) != 1 || active[0].Summary != "the shop is in town" {
		t.Fatalf("the active layer: %+v %v", active, err)
	}
	got, err := gov.Get(ctx, out.Record.ID)
	if err != nil || got.Status != memory.StatusDeleted {
		t.Fatalf("the expired record: %+v %v", got, err)
	}
	page, err := gov.EventsPage(ctx, "", 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range page.Events {
		found = found || e.Type == memory.EventExpired && e.RecordID == out.Record.ID
	}
	if !found {
		t.Fatal("the expiry is not in the audit log")
	}
}
