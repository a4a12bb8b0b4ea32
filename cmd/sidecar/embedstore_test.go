package main

import (
	"context"
	"strings"
	"testing"

	"github.com/memgate/memgate/embed"
	"github.com/memgate/memgate/store"
)

func TestEmbedStoreOnBadger(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	es := embedStore{st}
	if err := es.Put(ctx, []embed.KV{{Key: "meta", Value: []byte("m")}, {Key: "v/10", Value: []byte("ten")}, {Key: "v/2", Value: []byte("two")}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key   string
		want  string
		found bool
	}{{"meta", "m", true}, {"v/10", "ten", true}, {"v/1", "", false}, {"v/", "", false}} {
		v, found, err := es.Get(ctx, tc.key)
		if err != nil || found != tc.found || string(v) != tc.want {
			t.Fatalf("Get(%q) = %q %v %v, want %q %v", tc.key, v, found, err, tc.want, tc.found)
		}
	}
	if err := es.Delete(ctx, []string{"v/10", "v/404"}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := es.Scan(ctx, "v/", func(k string, v []byte) bool { keys = append(keys, k+"="+string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "v/2=two" {
		t.Fatalf("scan v/: %v", keys)
	}
}
