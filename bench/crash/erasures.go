package crash

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/memgate/memgate/bench/sidecar"
)

// Erasures under load: each cycle an eraser writes memories for a user of
// its own (never one the writers use) and asks the admin API to erase that
// user, while the writers and reviewers run and the kill may come. An
// erasure the sidecar acknowledged must have erased every memory of its
// user by the final check: one the kill cut off is resumed from its
// journal at the next start, so it must be complete too if its journal
// was written; the check holds acknowledged ones to it.

// erasureLog collects, over all cycles, the erasures the sidecar
// acknowledged and the memories each had to erase.
type erasureLog struct {
	mu   sync.Mutex
	done map[string][]string // user id -> record ids written for it
	cut  int                 // erasures the kill left unanswered
}

func newErasureLog() *erasureLog { return &erasureLog{done: map[string][]string{}} }

// eraser runs one erasure in the cycle.
func (w *workload) eraser(ctx context.Context) {
	user := fmt.Sprintf("crash-erase-%d", w.cycle)
	var ids []string
	for i := range 3 {
		if !w.running(ctx) {
			return
		}
		cand := map[string]any{"layer": "knowledge", "subjectId": user, "scope": map[string]string{"userId": user},
			"summary": fmt.Sprintf("secret %d of %s to forget", i, user)}
		w.sent.Add(1)
		rec, status, err := w.client().Write(ctx, cand)
		if err != nil || status != http.StatusCreated {
			w.failed(status, err)
			return
		}
		ids = append(ids, rec.ID)
	}
	w.sent.Add(1)
	body := map[string]any{"scope": map[string]string{"userId": user}, "reason": "crash harness", "by": "memgate-bench"}
	c := w.client() // one instance: its admin URL and its token
	if err := c.Do(ctx, http.MethodPost, c.Admin+"/admin/v1/erase", body, nil); err != nil {
		w.failed(0, err)
		w.erased.mu.Lock()
		w.erased.cut++
		w.erased.mu.Unlock()
		return
	}
	w.erased.mu.Lock()
	w.erased.done[user] = ids
	w.erased.mu.Unlock()
}

// checkErasures reads every memory an acknowledged erasure had to erase
// and reports those that still hold text or are active.
func checkErasures(ctx context.Context, c *sidecar.Client, log *erasureLog) (checked int, lost []Loss, err error) {
	log.mu.Lock()
	defer log.mu.Unlock()
	for user, ids := range log.done {
		for _, id := range ids {
			r, err := c.Get(ctx, id)
			if err != nil {
				return checked, lost, fmt.Errorf("erased memory %s of %s: %w", id, user, err)
			}
			checked++
			if r.Summary != "" || r.Status == sidecar.StatusActive {
				lost = append(lost, Loss{RecordID: id, Problem: fmt.Sprintf("the acknowledged erasure of %s left it %s with text %q", user, r.Status, r.Summary)})
			}
		}
	}
	return checked, lost, nil
}
