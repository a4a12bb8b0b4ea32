package storeapi

import (
	"context"
	"errors"
)

// ErrNotFound is what Get returns, wrapped or not, for a missing key.
var ErrNotFound = errors.New("store: key not found")

// KV is the store's small key-value area: values other packages keep
// beside the records (the Slack message that announced a parked write,
// the guard's accepted files), by namespace and key. Put returns once the
// value is durable; Get of a missing key returns ErrNotFound.
type KV interface {
	Get(ctx context.Context, namespace, key string) ([]byte, error)
	Put(ctx context.Context, namespace, key string, value []byte) error
}

// KVScanner is a KV area whose namespaces can be listed: a scan of one
// namespace in byte order of its keys (descending with newestFirst) until
// fn returns false, the value valid only during the call, and the number
// of keys of a namespace.
type KVScanner interface {
	KV
	ScanNamespace(ctx context.Context, namespace string, newestFirst bool, fn func(key string, value []byte) bool) error
	CountNamespace(ctx context.Context, namespace string) (int, error)
}

// KVDeleter is a KV area whose keys can be deleted, several at once; a
// missing key is not an error.
type KVDeleter interface {
	DeleteKeys(ctx context.Context, namespace string, keys []string) error
}
