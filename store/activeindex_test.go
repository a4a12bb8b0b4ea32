package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storeapi"
)

func TestActiveValueRoundTrip(t *testing.T) {
	for _, r := range []*memory.Record{
		{Layer: memory.LayerState, Summary: "auto-publish is off"},
		{Layer: memory.LayerPreference, Scope: memory.Scope{UserID: "alice", AgentID: "a", AppID: "app", RunID: "r1"}, Summary: "likes tea ☕, 喜欢茶"},
		{Layer: memory.LayerKnowledge, Summary: "a summary with a \x00 inside and trailing\x00"},
		{Layer: memory.LayerCheckpoint, Summary: ""},
	} {
		v := activeValue(r)
		var e storeapi.ActiveEntry
		if !parseActiveValue(v, &e) {
			t.Fatalf("%q does not parse back", v)
		}
		if e.Layer != r.Layer || e.Scope != r.Scope || e.Summary != r.Summary {
			t.Fatalf("round trip of %+v gave %+v", r, e)
		}
	}
	long := &memory.Record{Layer: memory.LayerKnowledge, Summary: strings.Repeat("x", maxIndexedSummary+1)}
	if v := activeValue(long); v != nil {
		t.Fatalf("a %d-byte summary went into the index", len(long.Summary))
	}
	var e storeapi.ActiveEntry
	for _, v := range [][]byte{nil, {}, {2, 'x', 0}, {activeValueV1, 's', 't', 0, 'u'}} {
		if parseActiveValue(v, &e) {
			t.Fatalf("%q parsed as an entry", v)
		}
	}
}

// TestScanActiveIndexFillsEntries checks the loader search reads: each
// entry of a subject or an entity holds its record's fields, whether the
// index holds them, holds none (entries written before it did), or cannot
// (long summaries), and the selection by subject and scope is exact.
func TestScanActiveIndexFillsEntries(t *testing.T) {
	st := openTemp(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	ctx := context.Background()
	var all []*memory.Record
	for i := range 60 {
		summary := fmt.Sprintf("note %d", i)
		if i%13 == 0 {
			summary += strings.Repeat(" padding", 400) // too long for the index
		}
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: fmt.Sprintf("s%d", i%2),
			FactType: fmt.Sprintf("f%d", i), Summary: summary, Scope: memory.Scope{UserID: fmt.Sprintf("u%d", i%3), AgentID: fmt.Sprintf("a%d", i%2)}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Record)
	}
	// Some entries as an older store wrote them: no fields.
	err := st.DB().Update(func(txn *badger.Txn) error {
		for _, r := range all[:20] {
			if err := txn.Set(key("a/", r.SubjectID, r.ID), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []struct {
		subject string
		scope   memory.Scope
	}{{"", memory.Scope{}}, {"s1", memory.Scope{}}, {"", memory.Scope{UserID: "u2"}}, {"s0", memory.Scope{AgentID: "a0"}},
		{"", memory.Scope{UserID: "u1", AgentID: "a1"}}, {"", memory.Scope{AgentID: "a1"}}, {"s1", memory.Scope{AgentID: "a0"}}} {
		var want []string
		for _, r := range all {
			if (sel.subject == "" || r.SubjectID == sel.subject) && scopeHolds(r.Scope, sel.scope) {
				want = append(want, r.SubjectID+"/"+r.ID)
			}
		}
		slices.Sort(want)
		var got []string
		err := st.ViewSnapshot(ctx, func(sn storeapi.Snapshot) error {
			return sn.ScanActiveIndex(ctx, sel.subject, sel.scope, func(e storeapi.ActiveEntry, ver uint64) bool {
				r, err := sn.Record(e.ID)
				if err != nil || !sameEntry(entryOf(r), e) || ver == 0 {
					t.Errorf("entry %+v (version %d) of record %+v (%v)", e, ver, r, err)
				}
				got = append(got, e.SubjectID+"/"+e.ID)
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) { // key order is subject, then id
			t.Fatalf("%+v: scanned %v\nwant %v", sel, got, want)
		}
	}
}

func sameEntry(a, b storeapi.ActiveEntry) bool {
	return a.ID == b.ID && a.SubjectID == b.SubjectID && a.Layer == b.Layer && a.Scope == b.Scope && a.Summary == b.Summary &&
		a.CreatedAt.Equal(b.CreatedAt) && a.ActivatedAt.Equal(b.ActivatedAt)
}
