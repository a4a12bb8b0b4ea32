package badgertest

import (
	"context"
	"testing"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/store"
)

func TestAStoreOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	st := Open(t, store.Options{Dir: dir})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll})
	res, err := gov.Submit(context.Background(), memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s", FactType: "f", Summary: "kept"})
	if err != nil || res.Outcome != memory.OutcomeApplied {
		t.Fatalf("submit: %+v, %v", res, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = NewWith(t, store.Options{Dir: dir})
	r, err := memory.NewGovernor(memory.Options{Store: st, Classifier: testkit.ApplyAll}).Get(context.Background(), res.Record.ID)
	if err != nil || r.Summary != "kept" {
		t.Errorf("after a restart: %+v, %v", r, err)
	}
	if New(t) == nil {
		t.Error("New returned no store")
	}
}
