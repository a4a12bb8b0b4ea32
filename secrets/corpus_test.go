package secrets

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// corpusRow is the part of a labelled corpus row (policy.Example) this
// package reads; it does not import policy, which imports it.
type corpusRow struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// tunedCorpora are the corpus files whose texts rules may be designed
// against: the real text by source and the tuned parts of the labelled
// corpus. The hold-out parts are left to policy's TestCorpus.
func tunedCorpora(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../policy/corpus/real/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no real corpus under ../policy/corpus/real: %v", err)
	}
	return append(paths, "../policy/corpus/dev.jsonl", "../policy/corpus/dev2.jsonl")
}

func readCorpusRows(t *testing.T, path string) []corpusRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []corpusRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r corpusRow
		if len(sc.Bytes()) == 0 || sc.Bytes()[0] == '#' {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// TestCorpusTextsWithoutSecrets scans every text of the tuned corpora that
// is not labelled a secret (ordinary text, and the other risk kinds, which
// must be reviewed, not refused as a credential): none may be found. It
// is the false-positive check for new rules on text people wrote.
func TestCorpusTextsWithoutSecrets(t *testing.T) {
	if testing.Short() {
		t.Skip("scans the whole corpus")
	}
	s := newScanner(t)
	scanned := 0
	for _, path := range tunedCorpora(t) {
		for _, r := range readCorpusRows(t, path) {
			if r.Kind == "secret" {
				continue
			}
			scanned++
			if got := s.FindSecrets(r.Text); got != nil {
				t.Errorf("%s (%s): %v in %q", r.ID, r.Kind, got, r.Text)
			}
		}
	}
	t.Logf("%d texts without a secret scanned", scanned)
}

// TestCorpusSecretsFound checks that every text of the tuned corpora
// labelled a secret is found.
func TestCorpusSecretsFound(t *testing.T) {
	s := newScanner(t)
	for _, path := range tunedCorpora(t) {
		for _, r := range readCorpusRows(t, path) {
			if r.Kind == "secret" && s.FindSecrets(r.Text) == nil {
				t.Errorf("%s: secret not found", r.ID)
			}
		}
	}
}
