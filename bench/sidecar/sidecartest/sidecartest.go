// Package sidecartest builds the sidecar binary once for the tests of a
// package that run it.
package sidecartest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/memgate/memgate/bench/sidecar"
)

// Binary is cmd/sidecar built on first use into a temporary directory
// (named after its prefix) and shared by every test of the package.
type Binary struct {
	prefix string
	once   sync.Once
	dir    string
	path   string
	err    error
}

// New returns a Binary that builds into a temporary directory whose name
// starts with prefix.
func New(prefix string) *Binary { return &Binary{prefix: prefix} }

// Path builds the sidecar the first time it is called and returns the
// binary's path; a failed build fails t (every time it is asked for).
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", b.prefix); b.err == nil {
			b.path, b.err = sidecar.Build(context.Background(), b.dir)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Main is a TestMain that does nothing else: it runs the tests, removes
// the build and exits with the tests' code.
func (b *Binary) Main(m *testing.M) {
	code := m.Run()
	b.Remove()
	os.Exit(code)
}

// Remove deletes the build, if any; call it from TestMain after m.Run.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
