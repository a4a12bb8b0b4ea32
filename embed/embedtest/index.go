package embedtest

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/embed"
)

// Index returns an open embed.Index that embeds with s and reconciles over
// scan, with waits of milliseconds between retries; it is closed when the
// test ends. For tests of the packages that read through it (search, the
// dialects).
func (s *Server) Index(tb testing.TB, scan embed.ScanFunc) *embed.Index {
	tb.Helper()
	c, err := embed.NewClient(embed.ClientOptions{URL: s.URL, Model: s.model, APIKey: s.key,
		RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	x, err := embed.New(embed.Options{Client: c, Scan: scan, Store: &Store{},
		RetryInitial: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	if err := x.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := x.Close(ctx); err != nil {
			tb.Errorf("embedtest: close the index: %v", err)
		}
	})
	return x
}

// WaitLen waits until x holds n vectors; the test fails after 15 seconds.
func WaitLen(tb testing.TB, x *embed.Index, n int) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for x.Len() != n {
		if time.Now().After(deadline) {
			tb.Fatalf("embedtest: %d vectors after 15s, want %d", x.Len(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
