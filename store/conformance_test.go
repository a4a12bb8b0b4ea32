package store_test

import (
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/memory/storetest"
)

// TestConformance runs the suite every memory.Store passes (package
// pgstore runs it too) on Badger on disk.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) memory.Store {
		st := badgertest.New(t)
		return st
	})
}
