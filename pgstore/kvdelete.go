package pgstore

import (
	"context"
	"fmt"
)

// DeleteKeys removes keys of namespace in one statement; a missing key is
// not an error. It returns once committed.
func (s *Store) DeleteKeys(ctx context.Context, namespace string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.run(ctx, "delete", rowTx, func(t *tx) error {
		return t.exec("DELETE FROM memgate_kv WHERE namespace = $1 AND key = ANY($2)", namespace, keys)
	})
	if err != nil {
		return fmt.Errorf("pgstore: delete %d keys of %s: %w", len(keys), namespace, err)
	}
	return nil
}
