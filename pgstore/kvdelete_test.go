package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory/storeapi"
)

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
