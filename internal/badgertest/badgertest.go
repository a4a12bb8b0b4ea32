// Package badgertest opens memgate's Badger store for tests: a real
// database on disk, in the test's own temporary directory. Tests only.
//
// It is apart from internal/testkit because the store's own internal tests
// use testkit, and a testkit that opened a store would make a cycle.
package badgertest

import (
	"testing"

	"github.com/memgate/memgate/store"
)

// New opens a store on disk in a fresh t.TempDir() and closes it when the
// test ends (after the cleanups registered later, so an index opened on it
// closes first).
func New(t testing.TB) *store.Store {
	t.Helper()
	return NewWith(t, store.Options{})
}

// NewWith is New with options; an empty Dir (and not InMemory) is a fresh
// t.TempDir().
func NewWith(t testing.TB, o store.Options) *store.Store {
	t.Helper()
	if o.Dir == "" && !o.InMemory {
		o.Dir = t.TempDir()
	}
	st := Open(t, o)
	t.Cleanup(func() { st.Close() })
	return st
}

// Open opens a store with o and fails the test if it cannot. Closing it is
// the caller's: tests that restart close a directory and open it again.
func Open(t testing.TB, o store.Options) *store.Store {
	t.Helper()
	st, err := store.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
