package notify

import (
	"time"

	"github.com/memgate/memgate/memory"
)

// plan picks what to deliver now from the outbox (oldest first) and in which
// batches. It is pure so the rules can be tested without a store:
//   - only notices whose NextAttempt has come are taken, and that this
//     outbox holds (mine; nil: all), when outboxes share the store;
//   - a record's notices go out in the order they were written: one waits
//     while an older notice of the same record is still undelivered, so a
//     "decided" update never overtakes the "parked" message it updates;
//   - rollback notices written by one transaction (same At: a cascade or a
//     quarantine batch) form one batch, so undoing a run announces a summary
//     instead of one message per version;
//   - at most limit batches.
func plan(outbox []*memory.Notice, now time.Time, limit int, mine func(*memory.Notice) bool) [][]*memory.Notice {
	var out [][]*memory.Notice
	blocked := map[string]bool{} // records with an older notice still undelivered
	rollbacks := map[time.Time]int{}
	for _, n := range outbox {
		// Another outbox's notice is as one not due: it goes later, and
		// holds its record's later notices back.
		due := !n.NextAttempt.After(now) && (mine == nil || mine(n))
		if n.RecordID != "" && blocked[n.RecordID] {
			continue
		}
		if !due {
			if n.RecordID != "" {
				blocked[n.RecordID] = true
			}
			continue
		}
		if n.RecordID != "" {
			// Later notices of this record wait for this one's outcome in a
			// later pass: this pass may fail it.
			blocked[n.RecordID] = true
		}
		if n.Kind == memory.NoticeRollback {
			if i, ok := rollbacks[n.At]; ok {
				out[i] = append(out[i], n)
				continue
			}
			if len(out) >= limit {
				break
			}
			rollbacks[n.At] = len(out)
			out = append(out, []*memory.Notice{n})
			continue
		}
		if len(out) >= limit {
			break
		}
		out = append(out, []*memory.Notice{n})
	}
	return out
}

// nextDue returns when the earliest notice not yet due becomes due (zero if
// every notice is due or the outbox is empty).
func nextDue(outbox []*memory.Notice, now time.Time) time.Time {
	var next time.Time
	for _, n := range outbox {
		if n.NextAttempt.After(now) && (next.IsZero() || n.NextAttempt.Before(next)) {
			next = n.NextAttempt
		}
	}
	return next
}
