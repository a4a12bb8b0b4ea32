package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestTheShippedModelIsTrainedFromTheCorpus: the classifier in the
// default policy is what `go run ./cmd/memgate-train` makes of the corpus
// in the repository, byte for byte. A change to the corpus, the lexicons,
// the features or the training that is not followed by a retraining
// fails here.
func TestTheShippedModelIsTrainedFromTheCorpus(t *testing.T) {
	out := filepath.Join(t.TempDir(), "classifier.model")
	root := filepath.Join("..", "..")
	err := run(context.Background(), []string{"-corpus", filepath.Join(root, "policy", "corpus"),
		"-policy-dir", filepath.Join(root, "policy", "default"), "-out", out})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "policy", "default", "classifier.model"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("policy/default/classifier.model is not what the corpus trains: run go run ./cmd/memgate-train")
	}
}

func TestBadFlagsAreErrors(t *testing.T) {
	for _, args := range [][]string{{"-dims", "1000", "-corpus", "../../policy/corpus", "-policy-dir", "../../policy/default", "-out", filepath.Join(t.TempDir(), "m")}, {"-corpus", t.TempDir()}, {"-nope"}} {
		if err := run(context.Background(), args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
