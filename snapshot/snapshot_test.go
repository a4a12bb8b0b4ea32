package snapshot_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/snapshot"
	"github.com/memgate/memgate/store"
)

func TestSaveAndLoadKeepsRecordsAndHistory(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	apply := memory.ClassifierFunc(func(context.Context, *memory.PolicyInput) (memory.Decision, error) {
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: apply})
	var last *memory.SubmitResult
	for _, s := range []string{"alice", "bob", "carol"} {
		if last, err = gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "p", FactType: "owner", Summary: s}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := snapshot.Save(ctx, st, &buf); err != nil {
		t.Fatal(err)
	}
	st.Close()

	dir := filepath.Join(t.TempDir(), "db")
	if err := store.LoadBackup(ctx, dir, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := store.LoadBackup(ctx, dir, bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("loading over an existing database succeeded")
	}
	st2, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	gov2 := memory.NewGovernor(memory.Options{Store: st2, Classifier: apply})
	hist, err := gov2.History(ctx, last.Record.SlotID)
	if err != nil || len(hist) != 3 {
		t.Fatalf("history after load: %d versions, %v", len(hist), err)
	}
	act, err := gov2.List(ctx, memory.ListFilter{SubjectID: "p"})
	if err != nil || len(act) != 1 || act[0].ID != last.Record.ID {
		t.Fatalf("active after load: %v %v", act, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
