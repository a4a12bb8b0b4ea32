package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/store"
)

// The admin API's replay reads the audit log a page at a time and resolves
// the pending writes the recorded inputs reference by id.
func TestReplayPolicyResolvesPendingAcrossPages(t *testing.T) {
	ctx := context.Background()
	st := badgertest.NewWith(t, store.Options{NoSync: true})
	files := policy.DefaultFiles()
	compiled, err := policy.Compile(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: compiled})
	const writes = 2*memory.MaxEventPending + 5
	references := 0
	for i := range writes {
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha",
			FactType: "publish.auto", Summary: fmt.Sprintf("Auto-publish for project alpha is allowed after step %d.", i),
			Value: json.RawMessage(fmt.Sprintf(`{"afterStep":%d}`, i))})
		if err != nil || res.Outcome != memory.OutcomeParked {
			t.Fatalf("write %d: %v %v", i, res, err)
		}
		references += i
	}
	for _, page := range []int{1000, 7, 1} {
		t.Run(fmt.Sprint(page), func(t *testing.T) {
			defer func(n int) { replayPageEvents = n }(replayPageEvents)
			replayPageEvents = page
			out, err := replayPolicy(gov)(ctx, files)
			if err != nil {
				t.Fatal(err)
			}
			r := out.(*policy.ReplayReport)
			if r.Evaluated != writes || r.Same != writes || r.Errors != 0 ||
				r.PendingResolved != references || r.PendingMissing != 0 {
				t.Fatalf("report %+v, want %d writes the same and %d pending writes resolved", r, writes, references)
			}
		})
	}
}
