package main

import (
	"context"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/store"
)

// embedPrefix is where the embeddings of records are kept in the database,
// beside the store's own layout.
const embedPrefix = "em/"

// embedStore keeps embed's vectors in the Badger store. They are a cache
// that is rebuilt when missing, so batches are not waited on for
// durability; they still pass the store's disk guard.
type embedStore struct{ st *store.Store }

var _ embed.Store = embedStore{}

func (e embedStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var out []byte
	found := false
	err := e.st.ScanPrefix(ctx, embedPrefix+key, func(k, v []byte) bool {
		if string(k) == embedPrefix+key {
			out, found = append([]byte(nil), v...), true
		}
		return false // the first key under the prefix is the key itself, if it is there
	})
	return out, found, err
}

func (e embedStore) Put(ctx context.Context, pairs []embed.KV) error {
	sets := make(map[string][]byte, len(pairs))
	for _, p := range pairs {
		sets[embedPrefix+p.Key] = p.Value
	}
	return e.st.WriteBatch(ctx, sets, nil)
}

func (e embedStore) Delete(ctx context.Context, keys []string) error {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = embedPrefix + k
	}
	return e.st.WriteBatch(ctx, nil, full)
}

func (e embedStore) Scan(ctx context.Context, prefix string, fn func(key string, value []byte) bool) error {
	return e.st.ScanPrefix(ctx, embedPrefix+prefix, func(k, v []byte) bool {
		return fn(string(k[len(embedPrefix):]), v)
	})
}
