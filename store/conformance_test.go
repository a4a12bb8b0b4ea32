package store_test

import (
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storetest"
	"github.com/memgate/memgate/store"
)

// TestConformance runs the suite every memory.Store passes (package
// pgstore runs it too) on Badger on disk.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) memory.Store {
		st, err := store.Open(store.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
