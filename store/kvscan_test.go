package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestScanAndCountNamespace: a namespace's keys in byte order, both ways,
// until fn stops, and only that namespace's (not a namespace whose name
// starts with it, not keys of other prefixes).
func TestScanAndCountNamespace(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for _, k := range []string{"b", "a", "c", "", "a/b"} {
		if err := s.Put(ctx, "ev", k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "ev2", "a", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKey(ctx, []byte("ev/x"), []byte("outside")); err != nil {
		t.Fatal(err)
	}
	scan := func(newestFirst bool, limit int) (keys []string) {
		err := s.ScanNamespace(ctx, "ev", newestFirst, func(k string, v []byte) bool {
			if string(v) != "v"+k {
				t.Errorf("%q = %q", k, v)
			}
			keys = append(keys, k)
			return len(keys) < limit
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	want := []string{"", "a", "a/b", "b", "c"}
	if got := scan(false, 100); !slices.Equal(got, want) {
		t.Errorf("ascending: %q, want %q", got, want)
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := scan(true, 100); !slices.Equal(got, rev) {
		t.Errorf("descending: %q, want %q", got, rev)
	}
	if got := scan(true, 2); !slices.Equal(got, []string{"c", "b"}) {
		t.Errorf("descending, stopped after two: %q", got)
	}
	if n, err := s.CountNamespace(ctx, "ev"); err != nil || n != len(want) {
		t.Errorf("count: %d, %v; want %d", n, err, len(want))
	}
	if n, err := s.CountNamespace(ctx, "none"); err != nil || n != 0 {
		t.Errorf("count of an empty namespace: %d, %v", n, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.ScanNamespace(cancelled, "ev", false, func(string, []byte) bool { return true }); err == nil {
		t.Error("a scan with a cancelled context succeeded")
	}
}

// TestMoveKeys: keys of a caller's own prefix move into a namespace, in
// batches, across a reopen; a second run moves nothing and changes
// nothing; a key already in the namespace is kept; the store's own
// prefixes are refused.
func TestMoveKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*moveBatch + 7 // three transactions
	for i := range n {
		if err := s.PutKey(ctx, fmt.Appendf(nil, "old/ev/%04d", i), fmt.Appendf(nil, "event %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "ev", "0003", []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKey(ctx, []byte("old/other"), []byte("stays")); err != nil {
		t.Fatal(err)
	}
	moved, err := s.MoveKeys(ctx, "old/ev/", "ev")
	if err != nil || moved != n {
		t.Fatalf("moved %d, %v; want %d", moved, err, n)
	}
	s.Close()
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if moved, err := s.MoveKeys(ctx, "old/ev/", "ev"); err != nil || moved != 0 {
		t.Errorf("a second run moved %d, %v", moved, err)
	}
	for i := range n {
		v, err := s.Get(ctx, "ev", fmt.Sprintf("%04d", i))
		want := fmt.Sprintf("event %d", i)
		if i == 3 {
			want = "newer"
		}
		if err != nil || string(v) != want {
			t.Fatalf("ev/%04d = %q, %v; want %q", i, v, err, want)
		}
	}
	left := 0
	if err := s.ScanPrefix(ctx, "old/", func(k, _ []byte) bool { left++; return string(k) == "old/other" }); err != nil || left != 1 {
		t.Errorf("left under old/: %d keys, %v; want only old/other", left, err)
	}
	if _, err := s.MoveKeys(ctx, "r/", "ev"); err == nil {
		t.Error("moving the store's own records was allowed")
	}
	if _, err := s.MoveKeys(ctx, "", "ev"); err == nil {
		t.Error("moving every key was allowed")
	}
}

// openTemp opens a store in a directory of its own, closed when the test
// ends: the set-up of the tests that never reopen it.
func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

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
