package snapshot_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/snapshot"
	"github.com/memgate/memgate/store"
)

// BenchmarkSnapshot compares the store-neutral stream with Badger's own
// backup over the same store, in the same run: export against save, import
// against load. Report the ratios (export/save, import/load), not the
// absolute times. -benchtime=Nx with N small: each op moves the whole store.
func BenchmarkSnapshot(b *testing.B) {
	ctx := context.Background()
	src := badgertest.NewWith(b, store.Options{NoSync: true})
	gov := governor(src)
	const writes = 5000
	for i := range writes {
		// Ten versions per slot: overrides, rollback points and history.
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: fmt.Sprintf("s-%d", i%50),
			FactType: fmt.Sprintf("f-%d", i%500), Summary: fmt.Sprintf("fact %d, a sentence of ordinary length about a project", i)}); err != nil {
			b.Fatal(err)
		}
	}
	var stream, backup bytes.Buffer
	if _, err := snapshot.Export(ctx, src, &stream); err != nil {
		b.Fatal(err)
	}
	if err := snapshot.Save(ctx, src, &backup); err != nil {
		b.Fatal(err)
	}
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			if err := snapshot.Save(ctx, src, &bytes.Buffer{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(backup.Len()), "bytes")
	})
	b.Run("export", func(b *testing.B) {
		for b.Loop() {
			if _, err := snapshot.Export(ctx, src, &bytes.Buffer{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(stream.Len()), "bytes")
	})
	// Both restores write a fresh directory with the store's durable
	// defaults, as the CLI does.
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if err := store.LoadBackup(ctx, filepath.Join(b.TempDir(), "db"), bytes.NewReader(backup.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("import", func(b *testing.B) {
		for b.Loop() {
			dst, err := store.Open(store.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := snapshot.Import(ctx, dst, dst, bytes.NewReader(stream.Bytes())); err != nil {
				b.Fatal(err)
			}
			if err := dst.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
