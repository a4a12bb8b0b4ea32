package main

import (
	"context"
	"strings"
	"testing"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/pgstore"
)

// TestEmbedStore: both places vectors are kept, Badger's key space and a
// shared store's KV namespace, read back what was put, by exact key and by
// prefix in key order, and delete what is named, missing keys included;
// neither reads another part of its store.
func TestEmbedStore(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		open func(t *testing.T) (embed.Store, func(ns, key string, v []byte) error)
	}{
		{"Badger", func(t *testing.T) (embed.Store, func(ns, key string, v []byte) error) {
			st := badgertest.New(t)
			return embedStore{st}, func(ns, key string, v []byte) error { return st.Put(ctx, ns, key, v) }
		}},
		{"PostgreSQL", func(t *testing.T) (embed.Store, func(ns, key string, v []byte) error) {
			st, err := pgstore.Open(ctx, pgstore.Options{URL: pgtest.New(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return kvEmbedStore{st, embedNamespace("m")}, func(ns, key string, v []byte) error { return st.Put(ctx, ns, key, v) }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			es, putOther := tt.open(t)
			// Neighbours: another namespace's keys, and ones that sort around the prefix.
			for _, k := range []string{"v/3", "meta", "w"} {
				if err := putOther("slack", k, []byte("other")); err != nil {
					t.Fatal(err)
				}
			}
			if err := es.Put(ctx, []embed.KV{{Key: "meta", Value: []byte("m")}, {Key: "v/10", Value: []byte("ten")},
				{Key: "v/2", Value: []byte("two")}, {Key: "w", Value: []byte("after")}}); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				key   string
				want  string
				found bool
			}{{"meta", "m", true}, {"v/10", "ten", true}, {"v/1", "", false}, {"v/", "", false}, {"v/3", "", false}} {
				v, found, err := es.Get(ctx, tc.key)
				if err != nil || found != tc.found || string(v) != tc.want {
					t.Fatalf("Get(%q) = %q %v %v, want %q %v", tc.key, v, found, err, tc.want, tc.found)
				}
			}
			scan := func(prefix string) string {
				var keys []string
				if err := es.Scan(ctx, prefix, func(k string, v []byte) bool { keys = append(keys, k+"="+string(v)); return true }); err != nil {
					t.Fatal(err)
				}
				return strings.Join(keys, ",")
			}
			if got := scan("v/"); got != "v/10=ten,v/2=two" {
				t.Fatalf("scan v/: %v", got)
			}
			if err := es.Delete(ctx, []string{"v/10", "v/404"}); err != nil {
				t.Fatal(err)
			}
			if got := scan("v/"); got != "v/2=two" {
				t.Fatalf("scan v/ after a delete: %v", got)
			}
		})
	}
}
