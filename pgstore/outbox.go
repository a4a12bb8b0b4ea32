package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
)

// ClaimNotices leases to owner, until lease from now, up to limit of the
// undelivered notices that are due (NextAttempt at or before now) and
// that no live lease holds, oldest first. Instances sharing the database
// skip the rows another is claiming (FOR UPDATE SKIP LOCKED), so each
// notice goes to one of them; a lease that expires (its holder died)
// frees the notice for the next claim. Lease times are the database's
// clock, so instances' clocks need not agree; due times are the caller's,
// as the outbox that set them.
func (s *Store) ClaimNotices(ctx context.Context, owner string, lease time.Duration, limit int) ([]*memory.Notice, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []*memory.Notice
	err := s.run(ctx, "claim notices", rowTx, func(t *tx) error {
		out = out[:0]
		if err := t.flush(); err != nil {
			return err
		}
		rows, err := t.tx.Query(ctx, `WITH due AS (
				SELECT id FROM memgate_notices
				WHERE (lease_until IS NULL OR lease_until <= now()) AND (next_attempt IS NULL OR next_attempt <= $4)
				ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
			UPDATE memgate_notices n SET lease_owner = $1, lease_until = now() + $2 * interval '1 microsecond'
			FROM due WHERE n.id = due.id
			RETURNING n.id, n.doc`, owner, lease.Microseconds(), limit, time.Now())
		if err != nil {
			return t.fail(err)
		}
		for rows.Next() {
			n, _, err := noticeRow(rows)
			if err != nil {
				rows.Close()
				return t.fail(err)
			}
			out = append(out, n)
		}
		return t.fail(rows.Err())
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim notices: %w", err)
	}
	slices.SortFunc(out, func(a, b *memory.Notice) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
