package embedtest

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/memgate/memgate/embed"
)

// Store is an in-memory embed.Store. Its zero value is ready to use.
type Store struct {
	mu sync.Mutex
	kv map[string][]byte
}

var _ embed.Store = (*Store)(nil)

// Get implements embed.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	return slices.Clone(v), ok, ctx.Err()
}

// Put implements embed.Store.
func (s *Store) Put(ctx context.Context, pairs []embed.KV) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil {
		s.kv = map[string][]byte{}
	}
	for _, p := range pairs {
		s.kv[p.Key] = slices.Clone(p.Value)
	}
	return nil
}

// Delete implements embed.Store.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.kv, k)
	}
	return nil
}

// Scan implements embed.Store.
func (s *Store) Scan(ctx context.Context, prefix string, fn func(key string, value []byte) bool) error {
	s.mu.Lock()
	var keys []string
	for k := range s.kv {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = slices.Clone(s.kv[k])
	}
	s.mu.Unlock()
	for i, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !fn(k, vals[i]) {
			break
		}
	}
	return nil
}

// Keys returns the stored keys that start with prefix, sorted.
func (s *Store) Keys(prefix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.kv {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Set writes one raw value, to plant what another model stored.
func (s *Store) Set(key string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil {
		s.kv = map[string][]byte{}
	}
	s.kv[key] = slices.Clone(value)
}
