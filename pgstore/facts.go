package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/memgate/memgate/memory"
)

var _ memory.FactLocker = (*Store)(nil)

// factLockClass is the first key of the advisory locks LockFacts takes,
// so they never meet the migration lock or another user's locks.
const factLockClass int32 = 0x6d67_6631 // "mgf1"

// LockFacts serializes the free-text writes of one subject across the
// fleet (memory.FactLocker): a session advisory lock on a connection held
// until unlock, so that a write's fact match and commit are one step for
// every instance. At most half the pool's connections hold such locks at
// once. The key is hashed into the lock's second key; two
// subjects that share a hash only wait for each other.
func (s *Store) LockFacts(ctx context.Context, key string) (func(), error) {
	if s.closed.Load() {
		return nil, errClosed()
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	select {
	case s.factConns <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("pgstore: lock facts: %w", ctx.Err())
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		<-s.factConns
		return nil, unavailable("lock facts", err)
	}
	id := int32(h.Sum32())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", factLockClass, id); err != nil {
		conn.Release()
		<-s.factConns
		return nil, fmt.Errorf("pgstore: lock facts: %w", err)
	}
	return func() {
		// Unlocked even if the caller's context is done; a connection
		// that cannot unlock is closed, which releases the lock too.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1, $2)", factLockClass, id); err != nil {
			s.log.Warn("pgstore: advisory unlock failed; closing its connection", "err", err)
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
		<-s.factConns
	}, nil
}
