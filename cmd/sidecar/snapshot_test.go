package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/snapshot"
	"github.com/memgate/memgate/store"
)

// `sidecar snapshot export|import` between Badger data directories, as
// an operator runs them with the sidecar stopped.

// badgerDataDir makes a data directory whose store holds an applied
// version, an override and a parked write, and returns the parked id.
func badgerDataDir(t *testing.T) (dir, parked string) {
	t.Helper()
	dir = t.TempDir()
	st, err := store.Open(store.Options{Dir: filepath.Join(dir, "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gov := memory.NewGovernor(memory.Options{Store: st, Outbox: true,
		Classifier: memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
			if in.Candidate.Layer == memory.LayerPolicy {
				return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview}, nil
			}
			return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
		})})
	for _, c := range []memory.Candidate{
		{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: "beta"},
		{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: "ga"},
		{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "publish.auto", Summary: "auto-publish is on"},
	} {
		res, err := gov.Submit(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		parked = res.Record.ID
	}
	if err := st.Put(context.Background(), "slack", parked, []byte(`{"ts":"1.2"}`)); err != nil {
		t.Fatal(err)
	}
	return dir, parked
}

func runSnapshotCLI(stdin []byte, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	// A MultiReader hides Seek: stdin is a pipe.
	err = run(context.Background(), args, io.MultiReader(bytes.NewReader(stdin)), &out, &errOut)
	return out.String(), errOut.String(), err
}

// exportOf is what a data directory's store exports, without the header
// and trailer (the time of the export and a hash over it).
func exportOf(t *testing.T, dataDir string) string {
	t.Helper()
	st, err := store.Open(store.Options{Dir: filepath.Join(dataDir, "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf bytes.Buffer
	if _, err := snapshot.Export(context.Background(), st, &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	return strings.Join(lines[1:len(lines)-2], "")
}

func TestSnapshotExportImportBetweenDataDirs(t *testing.T) {
	src, parked := badgerDataDir(t)
	want := exportOf(t, src)
	file := filepath.Join(t.TempDir(), "alpha.jsonl")

	out, _, err := runSnapshotCLI(nil, "snapshot", "export", "--data-dir", src, file)
	if err != nil || !strings.Contains(out, "exported 3 records in 2 slots") || !strings.Contains(out, src) {
		t.Fatalf("export: %v\n%s", err, out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the snapshot file: %v %v", fi, err)
	}
	dst := filepath.Join(t.TempDir(), "fresh")
	out, _, err = runSnapshotCLI(nil, "snapshot", "import", "--data-dir", dst, file)
	if err != nil || !strings.Contains(out, "imported 3 records") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if got := exportOf(t, dst); got != want {
		t.Fatalf("the imported store exports\n%s\nthe source\n%s", got, want)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dst, ".import-*")); len(leftovers) != 0 {
		t.Fatalf("the import left %v", leftovers)
	}
	if !strings.Contains(want, parked) {
		t.Fatal("the parked write is not in the snapshot")
	}

	// Through a pipe: export to stdout, import from stdin.
	stream, report, err := runSnapshotCLI(nil, "snapshot", "export", "--data-dir", src, "-")
	if err != nil || !strings.HasPrefix(stream, `{"type":"header"`) || !strings.Contains(report, "exported") {
		t.Fatalf("export to stdout: %v\nstderr: %s", err, report)
	}
	piped := filepath.Join(t.TempDir(), "piped")
	if _, _, err := runSnapshotCLI([]byte(stream), "snapshot", "import", "--data-dir", piped, "-"); err != nil {
		t.Fatal(err)
	}
	if got := exportOf(t, piped); got != want {
		t.Fatal("the store imported from stdin differs from the source")
	}
}

func TestSnapshotImportRefusals(t *testing.T) {
	src, _ := badgerDataDir(t)
	file := filepath.Join(t.TempDir(), "alpha.jsonl")
	if _, _, err := runSnapshotCLI(nil, "snapshot", "export", "--data-dir", src, file); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Cut before the trailer: from a pipe, all but the trailer is written
	// before the cut is seen.
	beforeTrailer := whole[:bytes.LastIndex(whole, []byte(`{"type":"trailer"`))]
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, whole[:len(whole)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin []byte
		args  []string
		want  string
		noDB  string // a data directory that must still hold no database
	}{
		{"into a data directory holding a database", nil, []string{"import", "--data-dir", src, file}, "already holds a database", ""},
		{"a truncated file", nil, []string{"import", "--data-dir", filepath.Join(t.TempDir(), "a"), cut}, "nothing was written", "a"},
		{"a pipe cut before the trailer", beforeTrailer, []string{"import", "--data-dir", filepath.Join(t.TempDir(), "b"), "-"}, "holds no database", "b"},
		{"export from a data directory without a database", nil, []string{"export", "--data-dir", t.TempDir(), file + ".2"}, "no database", ""},
		{"a store URL that is not PostgreSQL", nil, []string{"export", "--store", "mysql://u:secret@db/x", file + ".3"}, "want a postgres://", ""},
		{"PostgreSQL that does not answer", nil, []string{"import", "--store", "postgres://u:secret@127.0.0.1:1/x", file}, "unavailable", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runSnapshotCLI(tc.stdin, append([]string{"snapshot"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the error shows the password: %v", err)
			}
			if tc.noDB != "" {
				dir := tc.args[2]
				if ok, err := hasDatabase(dir); ok || err != nil {
					t.Fatalf("%s holds a database after a refused import (%v)", dir, err)
				}
			}
		})
	}
	// The source's store is unchanged by the refusal to import over it.
	if got, want := exportOf(t, src), strings.Join(strings.SplitAfter(string(whole), "\n")[1:strings.Count(string(whole), "\n")-1], ""); got != want {
		t.Fatal("the refused import changed the store it was refused on")
	}
}

// A Badger store in use by a sidecar is locked: export says to stop it.
func TestSnapshotExportOfARunningStore(t *testing.T) {
	src, _ := badgerDataDir(t)
	st, err := store.Open(store.Options{Dir: filepath.Join(src, "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, _, err = runSnapshotCLI(nil, "snapshot", "export", "--data-dir", src, filepath.Join(t.TempDir(), "x.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("want an error saying to stop the sidecar, got %v", err)
	}
}

// A single agent's store grows into a fleet's and back: Badger → file →
// PostgreSQL → file → a fresh Badger, with every entity kept.
func TestSnapshotMovesBadgerToPostgresAndBack(t *testing.T) {
	src, _ := badgerDataDir(t)
	pg := pgtest.New(t)
	dir := t.TempDir()
	toPG, fromPG := filepath.Join(dir, "to-pg.jsonl"), filepath.Join(dir, "from-pg.jsonl")
	back := filepath.Join(dir, "back")
	for _, args := range [][]string{
		{"export", "--data-dir", src, toPG},
		{"import", "--store", pg, toPG},
		{"export", "--store", pg, fromPG},
		{"import", "--data-dir", back, fromPG},
	} {
		if _, stderr, err := runSnapshotCLI(nil, append([]string{"snapshot"}, args...)...); err != nil {
			t.Fatalf("snapshot %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
	}
	if got, want := exportOf(t, back), exportOf(t, src); got != want {
		t.Fatalf("the store came back from PostgreSQL changed:\n got %d bytes\nwant %d bytes", len(got), len(want))
	}
	// PostgreSQL now holds a store: importing again is refused.
	if _, _, err := runSnapshotCLI(nil, "snapshot", "import", "--store", pg, toPG); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a second import into the same database: want a refusal saying it is not empty, got %v", err)
	}
}
