package memory

import (
	"context"
	"strings"
	"testing"
	"time"
)

// viewCounter counts the store's transactions: a refused id must reach
// no store.
type viewCounter struct {
	Store
	views int
}

func (v *viewCounter) View(ctx context.Context, fn func(ReadTx) error) error {
	v.views++
	return v.Store.View(ctx, fn)
}

// TestReadsRefuseIdsNoRecordHolds: every read that names an id, a subject,
// an entity id or a cursor refuses NUL, another control character or
// invalid UTF-8 with EINVALID naming the field (not echoing the value),
// before any store sees it; a long id is still just not found.
func TestReadsRefuseIdsNoRecordHolds(t *testing.T) {
	ctx := context.Background()
	st := &viewCounter{Store: newMemStore()}
	g := NewGovernor(Options{Store: st, Classifier: &countingPolicy{}})
	for _, bad := range []string{"ab\x00cd", "ab\x1bcd", "ab\xffcd", "\x7f"} {
		for name, read := range map[string]func() error{
			"Get":          func() error { _, err := g.Get(ctx, bad); return err },
			"ActiveInSlot": func() error { _, err := g.ActiveInSlot(ctx, bad); return err },
			"GetActive":    func() error { _, err := g.GetActive(ctx, bad); return err },
			"History":      func() error { _, err := g.History(ctx, bad); return err },
			"Review":       func() error { _, err := g.Review(ctx, bad); return err },
			"Explain":      func() error { _, err := g.Explain(ctx, bad); return err },
			"Approve":      func() error { _, err := g.Approve(ctx, bad, Review{By: "r"}); return err },
			"Reject":       func() error { _, err := g.Reject(ctx, bad, Review{By: "r"}); return err },
			"Rollback":     func() error { _, err := g.Rollback(ctx, bad, false, "x", "r"); return err },
			"Quarantine": func() error {
				_, err := g.Quarantine(ctx, "run", bad, "x", "r")
				return err
			},
			"Restore":      func() error { _, err := g.Restore(ctx, bad, time.Now(), "x", "r"); return err },
			"List subject": func() error { _, err := g.List(ctx, ListFilter{SubjectID: bad}); return err },
			"List userId":  func() error { _, err := g.List(ctx, ListFilter{Scope: Scope{UserID: bad}}); return err },
			"List runId":   func() error { _, err := g.List(ctx, ListFilter{Scope: Scope{RunID: bad}}); return err },
			"Events after": func() error { _, err := g.Events(ctx, bad, 10); return err },
			"EventsPage":   func() error { _, err := g.EventsPage(ctx, bad, 10, 0); return err },
			"ReviewsPage":  func() error { _, err := g.ReviewsPage(ctx, bad, 10, 0); return err },
			"Shadowed":     func() error { _, err := g.Shadowed(ctx, bad, 10, false); return err },
		} {
			before := st.views
			err := read()
			if ErrorCode(err) != EINVALID || strings.Contains(ErrorMessage(err), bad) {
				t.Errorf("%s(%q): %v, want EINVALID not echoing the id", name, bad, err)
			}
			if st.views != before {
				t.Errorf("%s(%q) reached the store", name, bad)
			}
		}
	}
	if _, err := g.Get(ctx, strings.Repeat("x", MaxIDLen+1)); ErrorCode(err) != ENOTFOUND {
		t.Errorf("a long id: %v, want ENOTFOUND", err)
	}
}
