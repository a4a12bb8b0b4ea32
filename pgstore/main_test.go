package pgstore_test

import (
	"context"
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storetest"
	"github.com/memgate/memgate/pgstore"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens a store on url, closed when the test ends.
func open(t testing.TB, url string) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(context.Background(), pgstore.Options{URL: url})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestConformance runs the suite every memory.Store passes (package store
// runs it on Badger).
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) memory.Store { return open(t, pgtest.New(t)) })
}
