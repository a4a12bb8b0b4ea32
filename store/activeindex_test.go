package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/memgate/memgate/memory"
)

func TestActiveValueRoundTrip(t *testing.T) {
	for _, r := range []*memory.Record{
		{Layer: memory.LayerState, Summary: "auto-publish is off"},
		{Layer: memory.LayerPreference, Scope: memory.Scope{UserID: "alice", AgentID: "a", AppID: "app", RunID: "r1"}, Summary: "likes tea ☕, 喜欢茶"},
		{Layer: memory.LayerKnowledge, Summary: "a summary with a \x00 inside and trailing\x00"},
		{Layer: memory.LayerCheckpoint, Summary: ""},
	} {
		v := activeValue(r)
		var e memory.ActiveEntry
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
	var e memory.ActiveEntry
	for _, v := range [][]byte{nil, {}, {2, 'x', 0}, {activeValueV1, 's', 't', 0, 'u'}} {
		if parseActiveValue(v, &e) {
			t.Fatalf("%q parsed as an entry", v)
		}
	}
}

// TestListFiltersOnTheIndex checks that List finds exactly what testing
// every active record would, whether the index holds the filter's fields,
// holds none (entries written before it did), or cannot (long summaries).
func TestListFiltersOnTheIndex(t *testing.T) {
	st, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
	ctx := context.Background()
	layers := []memory.Layer{memory.LayerKnowledge, memory.LayerPreference, memory.LayerState}
	words := []string{"cedar", "ginger", "Maple", "TEA"}
	var all []*memory.Record
	for i := range 60 {
		summary := fmt.Sprintf("note %d about %s and %s", i, words[i%4], words[(i/4)%4])
		if i%13 == 0 {
			summary += strings.Repeat(" padding", 400) // too long for the index
		}
		res, err := gov.Submit(ctx, memory.Candidate{Layer: layers[i%3], SubjectID: fmt.Sprintf("s%d", i%2),
			FactType: fmt.Sprintf("f%d", i), Summary: summary, Scope: memory.Scope{UserID: fmt.Sprintf("u%d", i%3)}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Record)
	}
	// Some entries as an older store wrote them: no fields.
	err = st.DB().Update(func(txn *badger.Txn) error {
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
	filters := []memory.ListFilter{
		{}, {SubjectID: "s1"}, {Query: "cedar"}, {Query: "tea MAPLE"}, {SubjectID: "s0", Query: "ginger"},
		{Layer: memory.LayerState}, {Scope: memory.Scope{UserID: "u2"}}, {SubjectID: "s1", Layer: memory.LayerKnowledge, Query: "note"},
		{Query: "padding"}, {Query: "zebra"}, {Query: "note", Limit: 5},
	}
	for _, f := range filters {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			got, err := gov.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			fw := strings.Fields(strings.ToLower(f.Query))
			for _, r := range all {
				if f.Match(r, fw) {
					want = append(want, r.ID)
				}
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			slices.Sort(ids)
			slices.Sort(want)
			if f.Limit > 0 {
				if len(ids) != f.Limit {
					t.Fatalf("%d records with limit %d", len(ids), f.Limit)
				}
				return
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("List = %v\nwant   %v", ids, want)
			}
			// ViewActive's Scan passes the same records, with their fields.
			byID := map[string]*memory.Record{}
			for _, r := range all {
				byID[r.ID] = r
			}
			var scanned []string
			err = gov.ViewActive(ctx, func(v memory.ActiveView) error {
				return v.Scan(f, func(e memory.ActiveEntry) (bool, error) {
					r := byID[e.ID]
					if r == nil || e.SubjectID != r.SubjectID || e.Layer != r.Layer || e.Scope != r.Scope || e.Summary != r.Summary {
						t.Errorf("scanned entry %+v of record %+v", e, r)
					}
					scanned = append(scanned, e.ID)
					return true, nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(scanned)
			if !slices.Equal(scanned, want) {
				t.Fatalf("Scan = %v\nwant   %v", scanned, want)
			}
		})
	}
}
