package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/memgate/memgate/memory"
)

// A reader that follows the audit log by cursor (the Markdown guard, a
// client of GET /v1/events) while writers commit concurrently sees every
// event once: transactions draw their event ids in order but commit in
// any order, and a page never reaches past an id a write under way may
// still use. Without that, about 1 event in 200 was skipped here.
func TestAFollowerOfTheAuditLogMissesNoEvent(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run(fmt.Sprintf("group commit %v", group), func(t *testing.T) {
			st, err := Open(Options{Dir: t.TempDir(), GroupCommit: group})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			gov := memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(groupPolicy)})
			ctx := context.Background()
			const writers, writes = 16, 100
			var seen []string
			stop, followed := make(chan struct{}), make(chan error, 1)
			go func() {
				cursor := ""
				for done := false; ; {
					select {
					case <-stop:
						done = true // one more pass after the last commit
					default:
					}
					page, err := gov.EventsPage(ctx, cursor, 100, 0)
					if err != nil {
						followed <- err
						return
					}
					for _, e := range page.Events {
						seen = append(seen, e.ID)
						cursor = e.ID
					}
					if done && page.Next == "" {
						followed <- nil
						return
					}
				}
			}()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range writes {
						_, err := gov.Submit(ctx, memory.Candidate{Summary: fmt.Sprintf("writer %d, note %d", w, i),
							Layer: memory.LayerKnowledge, Scope: memory.Scope{UserID: fmt.Sprintf("user-%d", w)},
							Actor: memory.Actor{AgentID: "agent"}})
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			if err := <-followed; err != nil {
				t.Fatal(err)
			}
			all, err := gov.Events(ctx, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) < writers*writes {
				t.Fatalf("%d events for %d writes", len(all), writers*writes)
			}
			if len(seen) != len(all) {
				t.Fatalf("the follower saw %d of %d events", len(seen), len(all))
			}
			for i, e := range all {
				if seen[i] != e.ID {
					t.Fatalf("event %d: the follower saw %s, the log holds %s", i, seen[i], e.ID)
				}
			}
		})
	}
}
