package store_test

// Linearizability of slot histories: concurrent writers, reviewers and
// rollbacks drive the real Governor on a durable Badger store, and
// porcupine checks the history against the model of one slot (package
// internal/slotmodel, which package pgstore's test shares).

import (
	"testing"

	"github.com/memgate/memgate/internal/slotmodel"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

func TestSlotHistoriesAreLinearizable(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(slotmodel.Policy)})
	slotmodel.Check(t, []*memory.Governor{gov})
}
