package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory/storeapi"
)

// TestScanNamespace: a namespace's keys come in byte order (descending
// when newestFirst) with their values, only that namespace's, across more
// rows than one page (pgstore reads 256 at a time), until fn stops; and
// all pages read one snapshot, so a key written during the scan is not
// seen. CountNamespace counts a namespace's keys.
func TestScanNamespace(t *testing.T) {
	ctx := context.Background()
	st := open(t, pgtest.New(t))
	const ns = "events"
	// Keys whose byte order differs from a linguistic collation's: upper
	// before lower case, punctuation, multibyte UTF-8, the empty key;
	// then enough to span three pages.
	keys := []string{"", "B", "a", "a-b", "ab", "é", "z", "Z1"}
	for i := range 700 {
		keys = append(keys, fmt.Sprintf("01J%06d", i*7919%1000003))
	}
	value := func(k string) string { return "v:" + k }
	for _, k := range keys {
		if err := st.Put(ctx, ns, k, []byte(value(k))); err != nil {
			t.Fatal(err)
		}
	}
	// Neighbours that a prefix match would take for the namespace's.
	for _, other := range []string{"event", "events2", "eventsa"} {
		if err := st.Put(ctx, other, "m", []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
	asc := slices.Clone(keys)
	slices.Sort(asc) // Go compares strings bytewise
	desc := slices.Clone(asc)
	slices.Reverse(desc)

	for _, tt := range []struct {
		name        string
		newestFirst bool
		stopAfter   int // 0: read all
		want        []string
	}{
		{"ascending", false, 0, asc},
		{"descending", true, 0, desc},
		{"descending, stopped within the first page", true, 3, desc[:3]},
		{"ascending, stopped within the second page", false, 300, asc[:300]},
		{"descending, stopped at a page's end", true, 256, desc[:256]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := st.ScanNamespace(ctx, ns, tt.newestFirst, func(k string, v []byte) bool {
				if string(v) != value(k) {
					t.Errorf("key %q has value %q, want %q", k, v, value(k))
				}
				got = append(got, k)
				return tt.stopAfter == 0 || len(got) < tt.stopAfter
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %d keys, want %d; first differing at %d", len(got), len(tt.want), firstDiff(got, tt.want))
			}
		})
	}

	t.Run("one snapshot", func(t *testing.T) {
		late := desc[len(desc)-1] + "-late" // sorts within the last page, read long after the first
		var got []string
		err := st.ScanNamespace(ctx, ns, true, func(k string, _ []byte) bool {
			if len(got) == 0 {
				if err := st.Put(ctx, ns, late, []byte(value(late))); err != nil {
					t.Errorf("put during the scan: %v", err)
				}
			}
			got = append(got, k)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, desc) {
			t.Fatalf("a scan saw a key written after it began: got %d keys, want %d (first differing at %d)", len(got), len(desc), firstDiff(got, desc))
		}
		var again []string
		if err := st.ScanNamespace(ctx, ns, false, func(k string, _ []byte) bool { again = append(again, k); return true }); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(again, late) {
			t.Fatalf("the next scan does not see %q", late)
		}
	})

	t.Run("count", func(t *testing.T) {
		for ns, want := range map[string]int{ns: len(keys) + 1 /* the late key */, "events2": 1, "none": 0} {
			if n, err := st.CountNamespace(ctx, ns); err != nil || n != want {
				t.Errorf("CountNamespace(%q) = %d, %v; want %d", ns, n, err, want)
			}
		}
	})

	t.Run("empty namespace", func(t *testing.T) {
		err := st.ScanNamespace(ctx, "none", true, func(k string, _ []byte) bool {
			t.Errorf("key %q in an empty namespace", k)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDeleteKeys: the keys named go, in their namespace only; missing keys
// and an empty list are no error.
func TestDeleteKeys(t *testing.T) {
	ctx := context.Background()
	st := open(t, pgtest.New(t))
	for _, ns := range []string{"em", "other"} {
		for _, k := range []string{"a", "b", "c"} {
			if err := st.Put(ctx, ns, k, []byte(ns+k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		name string
		keys []string
		left []string // em's keys after
	}{
		{"none", nil, []string{"a", "b", "c"}},
		{"two, one missing", []string{"a", "c", "zz"}, []string{"b"}},
		{"again: already gone", []string{"a"}, []string{"b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := st.DeleteKeys(ctx, "em", tt.keys); err != nil {
				t.Fatal(err)
			}
			var left []string
			if err := st.ScanNamespace(ctx, "em", false, func(k string, _ []byte) bool { left = append(left, k); return true }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(left, tt.left) {
				t.Fatalf("em holds %v, want %v", left, tt.left)
			}
		})
	}
	if _, err := st.Get(ctx, "em", "a"); !errors.Is(err, storeapi.ErrNotFound) {
		t.Errorf("get a deleted key: %v, want storeapi.ErrNotFound", err)
	}
	for _, k := range []string{"a", "b", "c"} { // another namespace's keys of the same names stay
		if v, err := st.Get(ctx, "other", k); err != nil || string(v) != "other"+k {
			t.Errorf("other/%s = %q, %v", k, v, err)
		}
	}
}
