package embed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Store keeps vectors across restarts so that a restart does not embed
// every record again. Keys are the package's own ("meta", "v/<record id>");
// an implementation puts them under a prefix of its own. Vectors are a
// cache: a write lost in a crash costs one more request to the embedder,
// so Put and Delete need not wait for durability.
type Store interface {
	// Get returns the value of key; found is false when there is none.
	Get(ctx context.Context, key string) (value []byte, found bool, err error)
	// Put writes the pairs, in one batch where the store can.
	Put(ctx context.Context, pairs []KV) error
	// Delete removes the keys; a missing key is not an error.
	Delete(ctx context.Context, keys []string) error
	// Scan calls fn with every key that starts with prefix, in key order,
	// until fn returns false. value is valid only during the call.
	Scan(ctx context.Context, prefix string, fn func(key string, value []byte) bool) error
}

// KV is one key and its value.
type KV struct {
	Key   string
	Value []byte
}

const (
	metaKey      = "meta"
	vectorPrefix = "v/"
)

// meta names what the stored vectors were made with: vectors of another
// model are discarded at start.
type meta struct {
	Model string `json:"model"`
	Dim   int    `json:"dim"`
}

// encodeVector lays out a stored vector: the text's sum, then the float32
// components, little-endian.
func encodeVector(sum uint64, v []float32) []byte {
	b := make([]byte, 8+4*len(v))
	binary.LittleEndian.PutUint64(b, sum)
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[8+4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte, dim int) (uint64, []float32, error) {
	if dim <= 0 || len(b) != 8+4*dim {
		return 0, nil, fmt.Errorf("%d bytes for %d dimensions", len(b), dim)
	}
	v := make([]float32, dim)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
	}
	return binary.LittleEndian.Uint64(b), v, nil
}

// persist is the worker's side of a Store; a nil Store keeps nothing.
type persist struct {
	store Store
	model string
	dim   int // the dimension recorded in meta, 0 for none
}

// load fills vs with the stored vectors of model. Stored vectors of another
// model, or that do not decode, are deleted.
func (p *persist) load(ctx context.Context, vs *vectors) error {
	if p.store == nil {
		return nil
	}
	raw, found, err := p.store.Get(ctx, metaKey)
	if err != nil {
		return fmt.Errorf("embed: read the vectors' meta: %w", err)
	}
	var m meta
	if found {
		if err := json.Unmarshal(raw, &m); err != nil {
			m = meta{} // unreadable: treated as another model's
		}
	}
	if m.Model != p.model || m.Dim <= 0 {
		return p.clear(ctx)
	}
	p.dim = m.Dim
	var bad []string
	var putErr error
	err = p.store.Scan(ctx, vectorPrefix, func(key string, value []byte) bool {
		id := strings.TrimPrefix(key, vectorPrefix)
		sum, v, err := decodeVector(value, m.Dim)
		if err != nil || id == "" {
			bad = append(bad, key)
			return true
		}
		putErr = vs.put(id, sum, v)
		return putErr == nil
	})
	if err == nil {
		err = putErr
	}
	if err != nil {
		return fmt.Errorf("embed: load the stored vectors: %w", err)
	}
	if len(bad) > 0 {
		return p.store.Delete(ctx, bad)
	}
	return nil
}

// clear deletes every stored vector and the meta.
func (p *persist) clear(ctx context.Context) error {
	if p.store == nil {
		return nil
	}
	var keys []string
	if err := p.store.Scan(ctx, vectorPrefix, func(key string, _ []byte) bool {
		keys = append(keys, key)
		return true
	}); err != nil {
		return fmt.Errorf("embed: list the stored vectors: %w", err)
	}
	keys = append(keys, metaKey)
	p.dim = 0
	for len(keys) > 0 { // in bounded batches: a store's transaction has a size limit
		n := min(len(keys), 1024)
		if err := p.store.Delete(ctx, keys[:n]); err != nil {
			return fmt.Errorf("embed: delete the stored vectors: %w", err)
		}
		keys = keys[n:]
	}
	return nil
}

// put stores the vectors, and the meta first if it is not yet written.
func (p *persist) put(ctx context.Context, ids []string, sums []uint64, vs [][]float32) error {
	if p.store == nil || len(ids) == 0 {
		return nil
	}
	pairs := make([]KV, 0, len(ids)+1)
	if p.dim != len(vs[0]) {
		m, err := json.Marshal(meta{Model: p.model, Dim: len(vs[0])})
		if err != nil {
			return err
		}
		pairs = append(pairs, KV{Key: metaKey, Value: m})
	}
	for i, id := range ids {
		pairs = append(pairs, KV{Key: vectorPrefix + id, Value: encodeVector(sums[i], vs[i])})
	}
	if err := p.store.Put(ctx, pairs); err != nil {
		return fmt.Errorf("embed: store %d vectors: %w", len(ids), err)
	}
	p.dim = len(vs[0])
	return nil
}

// adopt puts in vs the stored vectors of todo's records whose text they
// were made from, and returns the changes left to embed. On a Store shared
// by several instances this is what keeps each from embedding what another
// already did; the cost is one Get per record without a vector in memory.
func (p *persist) adopt(ctx context.Context, vs *vectors, todo []change) ([]change, error) {
	if p.store == nil {
		return todo, nil
	}
	if p.dim == 0 { // no meta seen yet: another instance may have written it since the load
		raw, found, err := p.store.Get(ctx, metaKey)
		if err != nil {
			return todo, fmt.Errorf("embed: read the vectors' meta: %w", err)
		}
		var m meta
		if !found || json.Unmarshal(raw, &m) != nil || m.Model != p.model || m.Dim <= 0 {
			return todo, nil // nothing of this model stored
		}
		p.dim = m.Dim
	}
	rest := todo[:0:0]
	for i, c := range todo {
		raw, found, err := p.store.Get(ctx, vectorPrefix+c.id)
		if err != nil {
			return append(rest, todo[i:]...), fmt.Errorf("embed: read the stored vector of %s: %w", c.id, err)
		}
		if !found {
			rest = append(rest, c)
			continue
		}
		sum, v, err := decodeVector(raw, p.dim)
		if err != nil || sum != textSum(c.text) || vs.put(c.id, sum, v) != nil {
			rest = append(rest, c) // another text, model or dimension: embed it again
		}
	}
	return rest, nil
}

func (p *persist) remove(ctx context.Context, ids []string) error {
	if p.store == nil || len(ids) == 0 {
		return nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = vectorPrefix + id
	}
	if err := p.store.Delete(ctx, keys); err != nil {
		return fmt.Errorf("embed: delete %d stored vectors: %w", len(ids), err)
	}
	return nil
}

var errClosed = errors.New("embed: closed")
