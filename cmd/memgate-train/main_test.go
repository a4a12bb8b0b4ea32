package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/textclass"
)

// TestTheShippedModelIsTrainedFromTheCorpus: the classifier in the
// default policy is what `go run ./cmd/memgate-train` makes of the corpus
// in the repository, byte for byte. A change to the corpus, the lexicons,
// the features or the training that is not followed by a retraining
// fails here.
func TestTheShippedModelIsTrainedFromTheCorpus(t *testing.T) {
	if raceEnabled {
		t.Skip("ten fits take minutes under the race detector: scripts/test.sh runs this test without it")
	}
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
	for _, args := range [][]string{{"-min-count", "-1", "-corpus", "../../policy/corpus", "-policy-dir", "../../policy/default", "-out", filepath.Join(t.TempDir(), "m")}, {"-corpus", t.TempDir()}, {"-nope"}} {
		if err := run(context.Background(), args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

// TestCompareRunsThePolicyAsWritten: -compare decides the tuning rows
// under the directory's own thresholds, out of fold. A gate no head can
// reach rules every gated lexicon signal out, a gate of zero lets every
// one count: the first parks no more than the default, the second no
// less, and each row is counted once.
func TestCompareRunsThePolicyAsWritten(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join("..", "..")
	files, err := policy.ReadDir(filepath.Join(root, "policy", "default"))
	if err != nil {
		t.Fatal(err)
	}
	var examples []policy.Example
	for _, part := range []string{"dev.jsonl", "dev2.jsonl"} {
		ex, err := policy.ReadExamplesFile(filepath.Join(root, "policy", "corpus", part))
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, ex...)
	}
	train, err := policy.ClassifierExamples(ctx, files, examples)
	if err != nil {
		t.Fatal(err)
	}
	fold := make([]int, len(train))
	for i := range fold {
		fold[i] = i % 2
	}
	opts := textclass.TrainOptions{Heads: policy.ClassifierHeads, Epochs: 4, Seed: 1, Rate: 0.2, L2: 1e-6}
	var models []*textclass.Model
	for k := range 2 {
		var part []textclass.Example
		for i, e := range train {
			if fold[i] != k {
				part = append(part, e)
			}
		}
		m, err := textclass.Train(part, opts)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, m)
	}
	withGate := func(gate float64) string {
		dir := t.TempDir()
		for name, body := range files {
			if name == "data.json" {
				var data map[string]any
				if err := json.Unmarshal([]byte(body), &data); err != nil {
					t.Fatal(err)
				}
				data[policy.ConfigRoot].(map[string]any)["classifier"].(map[string]any)["gate"] = gate
				b, _ := json.Marshal(data)
				body = string(b)
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	compare := func(dir string) *comparison {
		c, err := comparePolicy(ctx, dir, examples, fold, models)
		if err != nil {
			t.Fatal(err)
		}
		var sum tally
		for _, s := range c.bySet {
			sum.low, sum.lowParked, sum.high, sum.highCaught = sum.low+s.low, sum.lowParked+s.lowParked, sum.high+s.high, sum.highCaught+s.highCaught
		}
		if sum != c.pooled || c.pooled.low+c.pooled.high != len(train) {
			t.Fatalf("%s: pooled %+v, by source %+v, %d rows", dir, c.pooled, sum, len(train))
		}
		return c
	}
	def := compare(filepath.Join(root, "policy", "default"))
	none, every := compare(withGate(2)), compare(withGate(0))
	if none.pooled.lowParked > def.pooled.lowParked || every.pooled.lowParked < def.pooled.lowParked ||
		none.pooled.highCaught > def.pooled.highCaught || every.pooled.highCaught < def.pooled.highCaught {
		t.Errorf("gate 2 %+v, default %+v, gate 0 %+v: a higher gate parked more", none.pooled, def.pooled, every.pooled)
	}
	if none.pooled.highCaught == every.pooled.highCaught {
		t.Errorf("the gate changed nothing (%+v): the directory's thresholds were not read", none.pooled)
	}
	if _, err := comparePolicy(ctx, filepath.Join(t.TempDir(), "missing"), examples, fold, models); err == nil {
		t.Error("a missing policy directory was compared")
	}
}
