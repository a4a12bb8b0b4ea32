package store_test

// Linearizability of slot histories: concurrent writers, reviewers and
// rollbacks drive the real Governor on a durable Badger store, and
// porcupine checks the history against the model of one slot (package
// internal/slotmodel, which package pgstore's test shares).

import (
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/slotmodel"
	"github.com/memgate/memgate/memory"
)

func TestSlotHistoriesAreLinearizable(t *testing.T) {
	st := badgertest.New(t)
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(slotmodel.Policy)})
	slotmodel.Check(t, []*memory.Governor{gov})
}
