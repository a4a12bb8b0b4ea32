package main

import (
	"context"
	"errors"
	"strings"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/memory/storeapi"
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

// embedNamespace is the KV namespace of a model's vectors on a shared
// store: one per model, so instances running different models (during a
// change of --embed-model across a fleet) neither take nor discard each
// other's vectors.
func embedNamespace(model string) string { return "embed/" + model }

// sharedKV is what a shared store offers to keep vectors (pgstore.Store):
// its KV area, with a missing key store.ErrNotFound, plus a scan of one
// namespace in key order and a batched delete.
type sharedKV interface {
	storeapi.KVScanner
	storeapi.KVDeleter
}

// kvEmbedStore keeps embed's vectors in a namespace of a shared store's KV
// area, where every instance on the database reads them.
type kvEmbedStore struct {
	kv sharedKV
	ns string // embedNamespace
}

var _ embed.Store = kvEmbedStore{}

func (e kvEmbedStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := e.kv.Get(ctx, e.ns, key)
	switch {
	case errors.Is(err, storeapi.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return v, true, nil
}

// Put writes the pairs one by one: each is a vector on its own, and one
// lost to an error is embedded again, so the batch needs no transaction.
func (e kvEmbedStore) Put(ctx context.Context, pairs []embed.KV) error {
	for _, p := range pairs {
		if err := e.kv.Put(ctx, e.ns, p.Key, p.Value); err != nil {
			return err
		}
	}
	return nil
}

func (e kvEmbedStore) Delete(ctx context.Context, keys []string) error {
	return e.kv.DeleteKeys(ctx, e.ns, keys)
}

// Scan reads the namespace in key order from prefix on and stops at the
// first key past it.
func (e kvEmbedStore) Scan(ctx context.Context, prefix string, fn func(key string, value []byte) bool) error {
	return e.kv.ScanNamespace(ctx, e.ns, false, func(k string, v []byte) bool {
		switch {
		case strings.HasPrefix(k, prefix):
			return fn(k, v)
		case k < prefix:
			return true // a key before the prefix, as "meta" before "v/"
		}
		return false
	})
}
