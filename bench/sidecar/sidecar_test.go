package sidecar

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := &tailBuffer{max: 8}
	for _, s := range []string{"hello ", "wonderful ", "world"} {
		b.Write([]byte(s))
	}
	if got := b.String(); got != "ul world" {
		t.Fatalf("tail = %q, want %q", got, "ul world")
	}
}

func TestMemoryOfThisProcess(t *testing.T) {
	m, err := MemoryOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS < 1<<20 || m.Peak < m.RSS {
		t.Fatalf("memory %+v is not plausible for a Go test binary", m)
	}
	if _, err := MemoryOf(-1); err == nil {
		t.Fatal("memory of pid -1 read without an error")
	}
}

func TestStartReportsABinaryThatDies(t *testing.T) {
	script := filepath.Join(t.TempDir(), "dies")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'cannot open the data directory' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Binary: script, DataDir: t.TempDir(), ReadyTimeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "cannot open the data directory") {
		t.Fatalf("Start = %v, want the exit and the binary's output", err)
	}
}
