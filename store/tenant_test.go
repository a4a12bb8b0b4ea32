package store_test

// Rule 11 (tenants stay apart), on a real Badger database: a governor call
// made with a bound tenant in its context sees and changes only records of
// that tenant's scope, whatever id, filter or slot name it uses.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

var (
	alice = memory.Tenant{UserID: "alice"}
	bob   = memory.Tenant{UserID: "bob"}
)

func as(t memory.Tenant) context.Context { return memory.WithTenant(context.Background(), t) }

func TestTenantConfineAndCover(t *testing.T) {
	tests := []struct {
		name    string
		tenant  memory.Tenant
		scope   memory.Scope
		want    memory.Scope
		wantErr string
		covers  bool // does the tenant cover the scope as given
	}{
		{"unbound changes nothing", memory.Tenant{}, memory.Scope{UserID: "x"}, memory.Scope{UserID: "x"}, "", true},
		{"fills the bound id", alice, memory.Scope{}, memory.Scope{UserID: "alice"}, "", false},
		{"keeps its own id", alice, memory.Scope{UserID: "alice", RunID: "r1"}, memory.Scope{UserID: "alice", RunID: "r1"}, "", true},
		{"refuses another user", alice, memory.Scope{UserID: "bob"}, memory.Scope{}, memory.EFORBIDDEN, false},
		{"refuses a wildcard", alice, memory.Scope{UserID: "*"}, memory.Scope{}, memory.EFORBIDDEN, false},
		{"refuses a look-alike", alice, memory.Scope{UserID: "\u0430lice"}, memory.Scope{}, memory.EFORBIDDEN, false},
		{"binds agent and app too", memory.Tenant{AgentID: "a", AppID: "p"}, memory.Scope{UserID: "u"},
			memory.Scope{UserID: "u", AgentID: "a", AppID: "p"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.tenant.Confine(tt.scope)
			if memory.ErrorCode(err) != tt.wantErr && !(err == nil && tt.wantErr == "") {
				t.Fatalf("Confine: err %v, want code %q", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Fatalf("Confine = %+v, want %+v", got, tt.want)
			}
			if c := tt.tenant.Covers(tt.scope); c != tt.covers {
				t.Fatalf("Covers = %v, want %v", c, tt.covers)
			}
		})
	}
}

func TestTenantsSeeAndChangeOnlyTheirOwnRecords(t *testing.T) {
	e := newEnv(t)
	// The same fact, stated by two tenants: each gets a slot of its own.
	a, err := e.gov.Submit(as(alice), memory.Candidate{Layer: memory.LayerPreference, SubjectID: "project-alpha", FactType: "editor.theme", Summary: "dark"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.gov.Submit(as(bob), memory.Candidate{Layer: memory.LayerPreference, SubjectID: "project-alpha", FactType: "editor.theme", Summary: "light"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Outcome != memory.OutcomeApplied || b.Outcome != memory.OutcomeApplied || a.Record.SlotID == b.Record.SlotID {
		t.Fatalf("alice %s in %s, bob %s in %s: want both applied in slots of their own",
			a.Outcome, a.Record.SlotID, b.Outcome, b.Record.SlotID)
	}
	if a.Record.Scope.UserID != "alice" || b.Record.Scope.UserID != "bob" {
		t.Fatalf("scopes not filled from the keys: %+v, %+v", a.Record.Scope, b.Record.Scope)
	}
	aID, aSlot := a.Record.ID, a.Record.SlotID

	// Bob reaches nothing of Alice's: by record id, slot id, history, name.
	for _, id := range []string{aID, aSlot} {
		if _, err := e.gov.Get(as(bob), id); memory.ErrorCode(err) != memory.ENOTFOUND {
			t.Fatalf("bob Get(%s): %v, want not found", id, err)
		}
		if _, err := e.gov.History(as(bob), id); memory.ErrorCode(err) != memory.ENOTFOUND {
			t.Fatalf("bob History(%s): %v, want not found", id, err)
		}
	}
	if got := e.gov.SlotID(as(bob), "project-alpha", "editor.theme"); got == aSlot {
		t.Fatal("bob's name for the fact is alice's slot")
	}
	// Filters cannot cross: another user's id, no id, a wildcard.
	for _, f := range []memory.ListFilter{{Scope: memory.Scope{UserID: "alice"}}, {SubjectID: "project-alpha"}, {}, {Scope: memory.Scope{UserID: "*"}}} {
		recs, err := e.gov.List(as(bob), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Scope.UserID != "bob" {
				t.Fatalf("bob's List(%+v) returned %s of %q", f, r.ID, r.Scope.UserID)
			}
		}
	}
	// Nor through the search index the dialects read: a list of
	// everything, or a search for Alice's text.
	idx := search.New(e.st, search.Options{})
	defer idx.Close()
	listed, err := idx.List(as(bob), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := idx.Search(as(bob), search.Query{Text: "dark", TopK: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		listed = append(listed, h.Record)
	}
	if len(listed) == 0 {
		t.Fatal("bob's list through the index is empty: it should hold his own memory")
	}
	for _, r := range listed {
		if r.Scope.UserID != "bob" {
			t.Fatalf("bob's search index read returned %s of %q", r.ID, r.Scope.UserID)
		}
	}
	// Bob can neither delete nor edit Alice's memory by its id, nor write
	// for alice.
	for _, c := range []memory.Candidate{
		{Op: memory.OpDelete, SlotID: aSlot},
		{SlotID: aSlot, Summary: "light"},
	} {
		if _, err := e.gov.Submit(as(bob), c); memory.ErrorCode(err) != memory.ENOTFOUND {
			t.Fatalf("bob Submit(%+v): %v, want not found", c, err)
		}
	}
	_, err = e.gov.Submit(as(bob), memory.Candidate{SubjectID: "x", Summary: "y", Scope: memory.Scope{UserID: "alice"}})
	wantCode(t, err, memory.EFORBIDDEN)
	// Slot ids can be computed, so the answer for alice's slot must be the
	// answer for a slot nobody wrote: nothing tells bob which facts exist.
	unwritten := memory.TenantSlotID(alice, "project-alpha", "salary")
	for _, c := range []func(slot string) memory.Candidate{
		func(slot string) memory.Candidate { return memory.Candidate{Op: memory.OpDelete, SlotID: slot} },
		func(slot string) memory.Candidate { return memory.Candidate{SlotID: slot, Summary: "light"} },
	} {
		_, errTaken := e.gov.Submit(as(bob), c(aSlot))
		_, errFree := e.gov.Submit(as(bob), c(unwritten))
		if errTaken == nil || errFree == nil || strings.ReplaceAll(errTaken.Error(), aSlot, "ID") != strings.ReplaceAll(errFree.Error(), unwritten, "ID") {
			t.Fatalf("bob tells alice's slot from an unwritten one: %v vs %v", errTaken, errFree)
		}
	}
	_, errTaken := e.gov.History(as(bob), aSlot)
	_, errFree := e.gov.History(as(bob), unwritten)
	if strings.ReplaceAll(errTaken.Error(), aSlot, "ID") != strings.ReplaceAll(errFree.Error(), unwritten, "ID") {
		t.Fatalf("History tells alice's slot from an unwritten one: %v vs %v", errTaken, errFree)
	}

	// Alice still has her memory, as it was; an unbound caller (admin,
	// or a key without a binding) sees both.
	if r, err := e.gov.GetActive(as(alice), aSlot); err != nil || r.ID != aID || r.Summary != "dark" {
		t.Fatalf("alice's memory after bob's attempts: %+v, %v", r, err)
	}
	if n := len(e.active("project-alpha")); n != 2 {
		t.Fatalf("an unbound reader sees %d records of project-alpha, want 2", n)
	}
	// Across a restart, the same holds.
	e.restart()
	if _, err := e.gov.Get(as(bob), aID); memory.ErrorCode(err) != memory.ENOTFOUND {
		t.Fatalf("after restart bob Get: %v", err)
	}
}

// GetActive answers active versions only (rule 7): a parked or superseded
// version by its id is not found; its slot id answers the active one.
func TestGetActiveHidesVersionsThatAreNotActive(t *testing.T) {
	e := newEnv(t)
	first := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: "f", Summary: "one"})
	second := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: "f", Summary: "two"})
	parked := e.submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "s", FactType: "p", Summary: "never publish"})
	if parked.Outcome != memory.OutcomeParked {
		t.Fatalf("policy write %s, want parked", parked.Outcome)
	}
	ctx := context.Background()
	for _, id := range []string{first.Record.ID, parked.Record.ID} {
		if _, err := e.gov.GetActive(ctx, id); memory.ErrorCode(err) != memory.ENOTFOUND {
			t.Fatalf("GetActive(%s): %v, want not found", id, err)
		}
	}
	if r, err := e.gov.GetActive(ctx, second.Record.SlotID); err != nil || r.ID != second.Record.ID {
		t.Fatalf("GetActive(slot) = %+v, %v; want the second version", r, err)
	}
}

// Writers of many tenants at once to the same names: each tenant ends with
// exactly one active version per slot, and never sees another's.
func TestConcurrentTenantsKeepOneActiveVersionEach(t *testing.T) {
	e := newEnv(t)
	const tenants, writes = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, tenants*writes)
	for i := range tenants {
		tn := memory.Tenant{UserID: fmt.Sprintf("user-%d", i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range writes {
				_, err := e.gov.Submit(as(tn), memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "shared", FactType: "fact",
					Summary: fmt.Sprintf("%s says %d", tn.UserID, j)})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range tenants {
		tn := memory.Tenant{UserID: fmt.Sprintf("user-%d", i)}
		recs, err := e.gov.List(as(tn), memory.ListFilter{SubjectID: "shared"})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Scope.UserID != tn.UserID {
			t.Fatalf("%s sees %d active versions (%+v), want exactly its own one", tn.UserID, len(recs), recs)
		}
		hist, err := e.gov.History(as(tn), recs[0].SlotID)
		if err != nil || len(hist) != writes {
			t.Fatalf("%s history: %d versions, %v; want %d", tn.UserID, len(hist), err, writes)
		}
	}
}
