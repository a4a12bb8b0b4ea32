package pgstore

import (
	"context"
	"fmt"
)

// Analyze refreshes PostgreSQL's statistics of memgate's tables. The
// planner picks the index that gives a scan's order only when it knows a
// table is large: on a table filled faster than autovacuum analyzes it (a
// snapshot import), a search's scan is planned as a sort of every row for
// each page, quadratic in the rows, until it does. Import calls it.
func (s *Store) Analyze(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed()
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE memgate_records, memgate_record_actors, memgate_slots, memgate_rollback_points, memgate_events, memgate_notices, memgate_kv"); err != nil {
		return fmt.Errorf("pgstore: analyze: %w", err)
	}
	return nil
}
