package notify

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	tx1, tx2 := now.Add(-2*time.Second), now.Add(-time.Second)
	n := func(id string, kind memory.NoticeKind, rec string, at, next time.Time) *memory.Notice {
		return &memory.Notice{ID: id, Kind: kind, RecordID: rec, At: at, NextAttempt: next}
	}
	// due is a notice due now: no next attempt set.
	due := func(id string, kind memory.NoticeKind, rec string, at time.Time) *memory.Notice {
		return n(id, kind, rec, at, time.Time{})
	}
	parked, decided, rollback := memory.NoticeParked, memory.NoticeDecided, memory.NoticeRollback
	type notices = []*memory.Notice
	tests := []struct {
		name   string
		outbox []*memory.Notice
		limit  int
		want   string // batches separated by "|", notice ids by ","
		held   string // ids this outbox claimed, by ","; empty: it holds all
	}{
		{"empty", nil, 10, "", ""},
		{"due in order", notices{due("1", parked, "a", tx1), n("2", parked, "b", tx1, now)}, 10, "1|2", ""},
		{"not yet due", notices{n("1", parked, "a", tx1, later)}, 10, "", ""},
		{"a record's later notice waits for its older one",
			notices{n("1", parked, "a", tx1, later), due("2", decided, "a", tx2), due("3", parked, "b", tx2)}, 10, "3", ""},
		{"one notice per record per pass", notices{due("1", parked, "a", tx1), due("2", decided, "a", tx2)}, 10, "1", ""},
		{"rollbacks of one transaction together", notices{due("1", rollback, "a", tx1), due("2", rollback, "b", tx1),
			due("3", rollback, "c", tx2), due("4", memory.NoticeQuarantine, "", tx2)}, 10, "1,2|3|4", ""},
		{"limit", notices{due("1", parked, "a", tx1), due("2", parked, "b", tx1), due("3", parked, "c", tx1)}, 2, "1|2", ""},
		{"only what this outbox holds",
			notices{due("1", parked, "a", tx1), due("2", parked, "b", tx1), due("3", parked, "c", tx2)}, 10, "2|3", "2,3"},
		{"a held notice waits for its record's older one held elsewhere",
			notices{due("1", parked, "a", tx1), due("2", decided, "a", tx2), due("3", parked, "b", tx2)}, 10, "3", "2,3"},
		{"held but not due", notices{n("1", parked, "a", tx1, later)}, 10, "", "1"},
		{"a rollback batch: only the held part", notices{due("1", rollback, "a", tx1), due("2", rollback, "b", tx1)}, 10, "2", "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mine func(*memory.Notice) bool
			if tt.held != "" {
				held := strings.Split(tt.held, ",")
				mine = func(n *memory.Notice) bool { return slices.Contains(held, n.ID) }
			}
			var parts []string
			for _, b := range plan(tt.outbox, now, tt.limit, mine) {
				var ids []string
				for _, x := range b {
					ids = append(ids, x.ID)
				}
				parts = append(parts, strings.Join(ids, ","))
			}
			if got := strings.Join(parts, "|"); got != tt.want {
				t.Fatalf("plan = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNextDue(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	outbox := []*memory.Notice{
		{ID: "1", NextAttempt: now.Add(time.Minute)},
		{ID: "2", NextAttempt: now.Add(time.Second)},
		{ID: "3"},
	}
	if got := nextDue(outbox, now); !got.Equal(now.Add(time.Second)) {
		t.Fatalf("nextDue = %v", got)
	}
	if got := nextDue(outbox[2:], now); !got.IsZero() {
		t.Fatalf("nextDue of due notices = %v, want zero", got)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: time.Minute}
	tests := []struct {
		attempts   int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 800 * time.Millisecond, 1200 * time.Millisecond},
		{2, 0, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{4, 0, 6400 * time.Millisecond, 9600 * time.Millisecond},
		{50, 0, 48 * time.Second, time.Minute},                    // capped
		{1, 30 * time.Second, 30 * time.Second, 30 * time.Second}, // Retry-After wins
		{50, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute},   // even past Max
	}
	for _, tt := range tests {
		for range 20 { // jitter: every draw stays in bounds
			if d := b.delay(tt.attempts, tt.retryAfter); d < tt.lo || d > tt.hi {
				t.Fatalf("delay(%d, %s) = %s, want in [%s, %s]", tt.attempts, tt.retryAfter, d, tt.lo, tt.hi)
			}
		}
	}
}
