package crash

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/memgate/memgate/bench/sidecar"
)

// Loss is an acknowledged item the restarted sidecar does not hold in the
// state the acknowledgement promised.
type Loss struct {
	RecordID string `json:"recordId"`
	Problem  string `json:"problem"`
}

// allowed returns the statuses a record may have after a restart given what
// was acknowledged for it and which governing calls were attempted (an
// unacknowledged call may still have committed).
func allowed(c claims) map[string]bool {
	ok := map[string]bool{}
	add := func(ss ...string) {
		for _, s := range ss {
			ok[s] = true
		}
	}
	switch {
	case c.acked[AckApplied]:
		add(sidecar.StatusActive, sidecar.StatusSuperseded) // later writes supersede it
	case c.acked[AckParked]:
		add(sidecar.StatusPending)
		if c.tried[OpApprove] {
			add(sidecar.StatusActive, sidecar.StatusSuperseded)
		}
		if c.tried[OpReject] {
			add(sidecar.StatusRejected)
		}
	}
	if c.tried[OpRollback] && (ok[sidecar.StatusActive] || c.acked[AckApproved]) {
		add(sidecar.StatusRolledBack)
	}
	// A decision or rollback acknowledged narrows what may follow it.
	if c.acked[AckApproved] {
		delete(ok, sidecar.StatusPending)
		delete(ok, sidecar.StatusRejected)
	}
	if c.acked[AckRejected] {
		ok = map[string]bool{sidecar.StatusRejected: true}
	}
	if c.acked[AckRolledBack] {
		ok = map[string]bool{sidecar.StatusRolledBack: true}
	}
	return ok
}

// checkRecord returns what is wrong with rec after a restart, or "".
func checkRecord(c claims, rec sidecar.Record) string {
	ok := allowed(c)
	if !ok[rec.Status] {
		return fmt.Sprintf("status %q, want one of %s (acknowledged %s; attempted %s)",
			rec.Status, keys(ok), keys(c.acked), keys(c.tried))
	}
	if c.acked[AckApproved] && (rec.Review == nil || rec.Review.Outcome != "approved") {
		return fmt.Sprintf("acknowledged approval missing: review %+v", rec.Review)
	}
	if c.acked[AckRejected] && (rec.Review == nil || rec.Review.Outcome != "rejected") {
		return fmt.Sprintf("acknowledged rejection missing: review %+v", rec.Review)
	}
	return checkText(c, rec)
}

// retentionPrefix starts the erasure id the retention pass marks the
// versions it purged with (memory.RetentionPass).
const retentionPrefix = "retention-"

// checkText returns what is wrong with rec's text, or "": an active or
// pending record holds the text its write was acknowledged with, and no
// erasure mark; a version whose text is gone lost it to the retention
// pass (the writers' memories are in no erasure's scope) and kept its
// skeleton: id, slot, times, decision and the salted hash of the text.
func checkText(c claims, rec sidecar.Record) string {
	switch {
	case rec.Status == sidecar.StatusActive || rec.Status == sidecar.StatusPending:
		if rec.Erased != nil {
			return fmt.Sprintf("%s, yet its text was removed by %s", rec.Status, rec.Erased.ID)
		}
		if c.summary != "" && rec.Summary != c.summary {
			return fmt.Sprintf("%s with text %q, acknowledged with %q", rec.Status, rec.Summary, c.summary)
		}
	case rec.Erased != nil:
		if !strings.HasPrefix(rec.Erased.ID, retentionPrefix) {
			return fmt.Sprintf("text removed by %s, which is not the retention pass", rec.Erased.ID)
		}
		if rec.Summary != "" {
			return fmt.Sprintf("purged by %s, yet it holds text %q", rec.Erased.ID, rec.Summary)
		}
		if rec.ID == "" || rec.SlotID == "" || rec.CreatedAt.IsZero() || rec.Erased.At.IsZero() || rec.Erased.TextHash == "" ||
			rec.Decision == nil || rec.Decision.Risk == "" || rec.Decision.Action == "" ||
			rec.Status == sidecar.StatusSuperseded && rec.SupersededBy == "" {
			return fmt.Sprintf("purged by %s without its skeleton: slot %q, created %v, hash %q, decision %+v, superseded by %q",
				rec.Erased.ID, rec.SlotID, rec.CreatedAt, rec.Erased.TextHash, rec.Decision, rec.SupersededBy)
		}
	case c.summary != "" && rec.Summary != c.summary:
		return fmt.Sprintf("%s with text %q, acknowledged with %q, and no erasure mark", rec.Status, rec.Summary, c.summary)
	}
	return ""
}

// verification is the outcome of checking a restarted sidecar.
type verification struct {
	records  int
	slots    int
	losses   []Loss
	doubles  []string // slots with more than one active record
	failures int      // reads that failed for reasons other than a missing record
	purged   int      // records read whose text the retention pass removed
}

// verify reads every record acknowledged in cycle since or later and the
// history of every slot written to, with a few requests in parallel.
func verify(ctx context.Context, c *sidecar.Client, l *Ledger, since, parallel int) (verification, error) {
	recs, slots := l.snapshot(since)
	var v verification
	var mu sync.Mutex
	type job struct {
		id   string
		slot *Slot
	}
	jobs := make(chan job)
	var firstErr error
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for j := range jobs {
				if j.slot != nil {
					doubled, err := checkSlot(ctx, c, *j.slot)
					mu.Lock()
					v.slots++
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if doubled != "" {
						v.doubles = append(v.doubles, doubled)
					}
					mu.Unlock()
					continue
				}
				rec, err := c.Get(ctx, j.id)
				var ae *sidecar.APIError
				problem := ""
				switch {
				case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
					problem = "not found after restart"
				case err != nil:
					mu.Lock()
					v.failures++
					if firstErr == nil {
						firstErr = fmt.Errorf("reading %s: %w", j.id, err)
					}
					mu.Unlock()
					continue
				default:
					problem = checkRecord(recs[j.id], rec)
				}
				mu.Lock()
				v.records++
				if rec.Erased != nil && strings.HasPrefix(rec.Erased.ID, retentionPrefix) {
					v.purged++
				}
				if problem != "" {
					v.losses = append(v.losses, Loss{RecordID: j.id, Problem: problem})
				}
				mu.Unlock()
			}
		})
	}
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		jobs <- job{id: id}
	}
	for i := range slots {
		jobs <- job{slot: &slots[i]}
	}
	close(jobs)
	wg.Wait()
	sort.Slice(v.losses, func(i, j int) bool { return v.losses[i].RecordID < v.losses[j].RecordID })
	return v, firstErr
}

// checkSlot reads a slot's history and reports it when more than one of its
// versions is active.
func checkSlot(ctx context.Context, c *sidecar.Client, s Slot) (string, error) {
	versions, err := c.History(ctx, s.SubjectID, s.FactType)
	if err != nil {
		return "", fmt.Errorf("history of %s/%s: %w", s.SubjectID, s.FactType, err)
	}
	var active []string
	for _, r := range versions {
		if r.Status == sidecar.StatusActive {
			active = append(active, r.ID)
		}
	}
	if len(active) > 1 {
		return fmt.Sprintf("%s/%s has %d active records: %s", s.SubjectID, s.FactType, len(active), strings.Join(active, ", ")), nil
	}
	return "", nil
}

func keys[K ~string, V any](m map[K]V) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}
