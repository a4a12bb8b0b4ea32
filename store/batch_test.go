package store

import (
	"context"
	"strings"
	"testing"
)

func TestWriteBatchAndScanPrefix(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string][]byte{"em/v/1": []byte("a"), "em/v/2": []byte("b"), "em/meta": []byte("m"), "other/x": []byte("x")}
	if err := s.WriteBatch(ctx, sets, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteBatch(ctx, nil, []string{"em/v/1", "em/v/none"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"r/x", "a/y", "kv/z"} {
		if err := s.WriteBatch(ctx, map[string][]byte{k: nil}, nil); err == nil || !strings.Contains(err.Error(), "belongs to the store") {
			t.Fatalf("a write to %s: %v", k, err)
		}
	}
	if err := s.ScanPrefix(ctx, "r/", func(k, v []byte) bool { return true }); err == nil {
		t.Fatal("a scan of the store's own prefix is allowed")
	}
	if err := s.Close(); err != nil { // a clean close syncs: the batch survives a reopen
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	if err := s.ScanPrefix(ctx, "em/", func(k, v []byte) bool { got = append(got, string(k)+"="+string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "em/meta=m,em/v/2=b" {
		t.Fatalf("scan em/: %v", got)
	}
	got = nil
	s.ScanPrefix(ctx, "em/", func(k, v []byte) bool { got = append(got, string(k)); return false })
	if len(got) != 1 {
		t.Fatalf("fn returned false but the scan went on: %v", got)
	}
}
