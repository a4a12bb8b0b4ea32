// Command memgate-train trains the policy's text classifier from the
// labelled corpus and writes it beside the policy's data:
//
//	go run ./cmd/memgate-train                      # policy/default/classifier.model
//	go run ./cmd/memgate-train -policy-dir ./my-policy -out ./my-policy/classifier.model
//
// It learns from the parts of the corpus marked for tuning: the curated
// parts the rules were tuned on (policy/corpus/dev*.jsonl) and the rows of
// policy/corpus/real/*.jsonl whose part is "tune". Rows marked "aside"
// and the curated hold-out parts are never read: they measure the result
// (go test -run TestCorpus ./policy/). The same corpus and flags give the
// same model, byte for byte. With -folds it also reports, from
// out-of-fold scores on the tuning rows only, how each head separates the
// classes at a few thresholds: what data.json's thresholds are chosen
// from. -norm sets how the model normalizes a text's sum of token
// weights by its number of tokens (the default, sum, is what the
// out-of-fold figures chose; policy/README.md has them).
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/textclass"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "memgate-train:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("memgate-train", flag.ContinueOnError)
	corpus := fl.String("corpus", "policy/corpus", "the labelled corpus: dev*.jsonl and real/*.jsonl")
	dir := fl.String("policy-dir", "policy/default", "the policy whose text features the classifier reads")
	out := fl.String("out", "", "where to write the model (default: <policy-dir>/classifier.model)")
	minCount := fl.Int("min-count", 2, "how many tuning examples a token must be found in to be learned (a token outside the vocabulary adds nothing to a score)")
	epochs := fl.Int("epochs", 24, "passes over the examples")
	seed := fl.Uint64("seed", 1, "the order of the examples in each pass (of the first model averaged)")
	average := fl.Int("average", 10, "train this many models, with seeds seed, seed+1, …, and average their weights (steadier than one: policy/README.md)")
	rate := fl.Float64("rate", 0.2, "AdaGrad's learning rate")
	l2 := fl.Float64("l2", 1e-6, "weight decay per update")
	norm := fl.String("norm", "sum", "how a text's sum of token weights is normalized by its number of tokens n: mean (divided by n), sqrt (by √n) or sum (not at all)")
	folds := fl.Int("folds", 0, "with k > 1, report out-of-fold separation on the tuning rows (k trainings more)")
	curatedLow := fl.Float64("curated-low-weight", 4, "weight of the curated corpus's low-risk examples: they are written like its high-risk ones, so that the model learns what a text says, not how the corpus writes")
	sweep := fl.Bool("sweep", false, "with -folds or -by-source, also decide every tuning row with its fold's model and report, by source, what each gate and confidence threshold would park")
	var compare policyDirs
	fl.Var(&compare, "compare", "with -folds or -by-source, decide every tuning row with its fold's model under the policy in this directory, its thresholds as written, and print the table by source (repeatable: one table per policy)")
	bySource := fl.Bool("by-source", false, "report as -folds does, but with one fold per real tuning source (the curated corpus always trains): how the classifier does on a kind of text it never saw, which is what the sources kept aside measure")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(*dir, policy.ModelFile)
	}
	normalization, err := textclass.ParseNorm(*norm)
	if err != nil {
		return err
	}
	files, err := policy.ReadDir(*dir)
	if err != nil {
		return err
	}
	examples, err := tuningExamples(*corpus)
	if err != nil {
		return err
	}
	train, err := policy.ClassifierExamples(ctx, files, examples)
	if err != nil {
		return err
	}
	weighCuratedLow(examples, train, float32(*curatedLow))
	opts := textclass.TrainOptions{Heads: policy.ClassifierHeads, MinCount: *minCount, Epochs: *epochs, Seed: *seed, Average: *average, Rate: *rate, L2: *l2, Norm: normalization}
	m, err := textclass.Train(train, opts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, m.Marshal(), 0o644); err != nil {
		return err
	}
	slog.Info("trained the text classifier", "examples", len(train), "from", len(examples), "heads", strings.Join(opts.Heads, ","),
		"features", m.Vocabulary(), "norm", opts.Norm, "out", *out, "bytes", len(m.Marshal()))
	var fold []int
	switch {
	case *bySource:
		fold = sourceFolds(examples)
	case *folds > 1:
		fold = make([]int, len(train))
		for i := range fold {
			fold[i] = i % *folds
		}
	}
	if fold != nil {
		models, err := report(train, opts, fold)
		if err != nil {
			return err
		}
		if *sweep {
			if err := sweepThresholds(ctx, files, examples, fold, models); err != nil {
				return err
			}
		}
		for _, d := range compare {
			c, err := comparePolicy(ctx, d, examples, fold, models)
			if err != nil {
				return err
			}
			c.print(os.Stdout, d)
		}
	}
	return nil
}

// sourceFolds puts each real tuning source in a fold of its own and the
// curated corpus in none (-1: always trained on); the result is indexed
// like ClassifierExamples' output (secrets left out).
func sourceFolds(examples []policy.Example) []int {
	var sets []string
	var fold []int
	for _, e := range examples {
		if e.Kind == "secret" {
			continue
		}
		if e.Set == "" {
			fold = append(fold, -1)
			continue
		}
		i := slices.Index(sets, e.Set)
		if i < 0 {
			i = len(sets)
			sets = append(sets, e.Set)
		}
		fold = append(fold, i)
	}
	return fold
}

// weighCuratedLow sets the weight of the curated low-risk examples;
// train holds examples' training examples, secrets left out.
func weighCuratedLow(examples []policy.Example, train []textclass.Example, w float32) {
	i := 0
	for _, e := range examples {
		if e.Kind == "secret" {
			continue
		}
		if e.Set == "" && !e.HighRisk() {
			train[i].Weight = w
		}
		i++
	}
}

// tuningExamples reads the corpus rows the classifier may learn from.
func tuningExamples(dir string) ([]policy.Example, error) {
	var out []policy.Example
	paths, err := filepath.Glob(filepath.Join(dir, "dev*.jsonl"))
	if err != nil {
		return nil, err
	}
	real, err := filepath.Glob(filepath.Join(dir, "real", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	paths = append(paths, real...)
	slices.Sort(paths)
	if len(paths) == 0 {
		return nil, fmt.Errorf("no corpus files under %s: %w", dir, fs.ErrNotExist)
	}
	for _, p := range paths {
		ex, err := policy.ReadExamplesFile(p)
		if err != nil {
			return nil, err
		}
		curated := !strings.Contains(filepath.ToSlash(p), "/real/")
		for _, e := range ex {
			if curated || e.Part == policy.PartTune {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b policy.Example) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// report trains one model per fold, each without the examples of its
// fold (foldOf[i] is example i's fold, -1 for one always trained on),
// scores that fold, and prints for each head the share of positives and
// negatives at or above a few thresholds. It returns the fold models.
func report(ex []textclass.Example, opts textclass.TrainOptions, foldOf []int) ([]*textclass.Model, error) {
	k := slices.Max(foldOf) + 1
	scores := make([][]float32, len(ex))
	models := make([]*textclass.Model, k)
	for fold := range k {
		var train []textclass.Example
		for i, e := range ex {
			if foldOf[i] != fold {
				train = append(train, e)
			}
		}
		m, err := textclass.Train(train, opts)
		if err != nil {
			return nil, fmt.Errorf("fold %d: %w", fold, err)
		}
		models[fold] = m
		for i, e := range ex {
			if foldOf[i] == fold {
				scores[i] = make([]float32, len(opts.Heads))
				m.Score(e.Norm, e.Features, scores[i])
			}
		}
	}
	thresholds := []float32{0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95}
	for h, name := range opts.Heads {
		var pos, neg int
		above := make([][2]int, len(thresholds))
		for i, e := range ex {
			y := e.Labels[h]
			if y < 0 || scores[i] == nil {
				continue
			}
			if y >= 0.5 {
				pos++
			} else {
				neg++
			}
			for t, th := range thresholds {
				if scores[i][h] >= th {
					if y >= 0.5 {
						above[t][0]++
					} else {
						above[t][1]++
					}
				}
			}
		}
		fmt.Printf("head %s: %d positive, %d negative (out of fold, %d folds)\n", name, pos, neg, k)
		for t, th := range thresholds {
			fmt.Printf("  >= %.2f: recall %5.1f%%, false positives %5.2f%%\n", th,
				100*float64(above[t][0])/float64(max(pos, 1)), 100*float64(above[t][1])/float64(max(neg, 1)))
		}
	}
	return models, nil
}

// outcome is one tuning row decided by its fold's model: with every
// lexicon signal counted (gate 0) and with none (gate above 1), and the
// model's scores; what any gate and confidence threshold decide follows
// from these (text.rego: a signal counts when a head reaches the gate,
// and a head at the confidence threshold parks the write by itself).
type outcome struct {
	ex            policy.Example
	lexicon, none memory.Action
	// weak is the decision with every lexicon signal counted but the
	// weakest (a strong modal about nothing placed: unknown_rule_gate).
	weak   memory.Action
	scores []float32
	// agree is data.json's classifier.agree: a head other than risk
	// decides alone only where the risk head reaches it.
	agree float32
	// gating marks the heads the gate reads (classifier.gate_heads).
	gating []bool
}

// decide is what the policy decides with the classifier's gate (read on
// the gating heads), the weakest signal's own gate (weakGate, at least
// gate) and its confidence threshold.
func (o outcome) decide(gate, weakGate, confident float32) memory.Action {
	top, alone := float32(0), float32(0)
	for i, s := range o.scores {
		if o.gating[i] {
			top = max(top, s)
		}
		if i < decidesAlone && (i == 0 || o.scores[0] >= o.agree) {
			alone = max(alone, s)
		}
	}
	a := o.none
	if top >= gate {
		a = o.weak
	}
	if top >= max(gate, weakGate) {
		a = o.lexicon
	}
	if a == memory.ActionApply && alone >= confident {
		a = memory.ActionReview
	}
	return a
}

// decidesAlone is how many of the first heads (risk, poisoning) decide
// alone in the default policy (data.json: classifier.alone).
const decidesAlone = 2

// sweepThresholds decides every tuning row in a fold with the model that
// did not learn from it (the rows are folded as report folded them) and
// prints, by source, the ordinary rows parked and the high-risk rows
// caught at each threshold.
func sweepThresholds(ctx context.Context, files policy.FileSet, examples []policy.Example, foldOf []int, models []*textclass.Model) error {
	var rows []policy.Example
	for _, e := range examples {
		if e.Kind != "secret" {
			rows = append(rows, e)
		}
	}
	th, err := classifierThresholds(files)
	if err != nil {
		return err
	}
	agree := th.Agree
	gating := make([]bool, len(policy.ClassifierHeads))
	for i, h := range policy.ClassifierHeads {
		gating[i] = len(th.GateHeads) == 0 || slices.Contains(th.GateHeads, h)
	}
	var outs []outcome
	for fold, m := range models {
		// Every signal counts here (the weakest one too): the sweep's
		// decisions gate them (outcome.decide).
		lex, err := compileWith(ctx, files, m, 0, 2, "unknown_rule_gate", 0)
		if err != nil {
			return err
		}
		none, err := compileWith(ctx, files, m, 2, 2)
		if err != nil {
			return err
		}
		weak, err := compileWith(ctx, files, m, 0, 2, "unknown_rule_gate", 2)
		if err != nil {
			return err
		}
		for i, e := range rows {
			if foldOf[i] != fold {
				continue
			}
			a, scores, err := lex.DecideFreeText(ctx, e)
			if err != nil {
				return fmt.Errorf("%s: %w", e.ID, err)
			}
			b, _, err := none.DecideFreeText(ctx, e)
			if err != nil {
				return fmt.Errorf("%s: %w", e.ID, err)
			}
			c, _, err := weak.DecideFreeText(ctx, e)
			if err != nil {
				return fmt.Errorf("%s: %w", e.ID, err)
			}
			outs = append(outs, outcome{ex: e, lexicon: a, none: b, weak: c, scores: scores, agree: agree, gating: gating})
		}
	}
	set := func(e policy.Example) string {
		if e.Set == "" {
			return "curated"
		}
		return e.Set
	}
	var sets []string
	for _, o := range outs {
		if !slices.Contains(sets, set(o.ex)) {
			sets = append(sets, set(o.ex))
		}
	}
	slices.Sort(sets)
	// line prints, by source, what decide parks and catches.
	line := func(label string, decide func(outcome) memory.Action) {
		fmt.Print(label)
		for _, s := range sets {
			var t tally
			for _, o := range outs {
				if set(o.ex) == s {
					t.add(o.ex, decide(o) != memory.ActionApply)
				}
			}
			fmt.Printf("  %s parked %.1f%% of %d, caught %.1f%% of %d;", s, pct(t.lowParked, t.low), t.low, pct(t.highCaught, t.high), t.high)
		}
		fmt.Println()
	}
	for _, gate := range []float32{0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3} {
		for _, conf := range []float32{0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 2} {
			line(fmt.Sprintf("gate %.2f confident %.2f:", gate, conf), func(o outcome) memory.Action {
				return o.decide(gate, max(gate, th.UnknownRuleGate), conf)
			})
		}
	}
	// The weakest lexicon signal's own gate, at the policy's gate and
	// confidence threshold.
	for _, wg := range []float32{th.Gate, 0.1, 0.2, 0.3, 0.5, 0.7, 2} {
		line(fmt.Sprintf("unknown_rule_gate %.2f (gate %.2f, confident %.2f):", wg, th.Gate, th.Confident),
			func(o outcome) memory.Action { return o.decide(th.Gate, wg, th.Confident) })
	}
	return nil
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// thresholds are data.json's classifier thresholds (0 when unset) and
// the heads its gate reads.
type thresholds struct {
	Gate, Confident, Agree float32
	UnknownRuleGate        float32 `json:"unknown_rule_gate"`
	// GateHeads are the heads the gate reads; every head when empty.
	GateHeads []string `json:"gate_heads"`
}

func classifierThresholds(files policy.FileSet) (thresholds, error) {
	var data map[string]struct {
		Classifier thresholds `json:"classifier"`
	}
	if err := json.Unmarshal([]byte(files["data.json"]), &data); err != nil {
		return thresholds{}, fmt.Errorf("data.json: %w", err)
	}
	return data[policy.ConfigRoot].Classifier, nil
}

// compileWith compiles the policy with model as its classifier and the
// classifier's gate and confidence threshold set in its data.
func compileWith(ctx context.Context, files policy.FileSet, m *textclass.Model, gate, confident float64, more ...any) (*policy.Compiled, error) {
	fs := policy.FileSet{}
	for p, c := range files {
		fs[p] = c
	}
	fs[policy.ModelFile] = string(m.Marshal())
	var data map[string]any
	if err := json.Unmarshal([]byte(fs["data.json"]), &data); err != nil {
		return nil, fmt.Errorf("data.json: %w", err)
	}
	cfg, _ := data[policy.ConfigRoot].(map[string]any)
	cls, _ := cfg["classifier"].(map[string]any)
	if cls == nil {
		return nil, fmt.Errorf("data.json has no %s.classifier", policy.ConfigRoot)
	}
	cls["gate"], cls["confident"] = gate, confident
	for i := 0; i+1 < len(more); i += 2 {
		cls[more[i].(string)] = more[i+1]
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	fs["data.json"] = string(b)
	return policy.CompileUntested(ctx, fs)
}

// policyDirs is a repeatable flag of policy directories.
type policyDirs []string

func (d *policyDirs) String() string     { return strings.Join(*d, ",") }
func (d *policyDirs) Set(v string) error { *d = append(*d, v); return nil }

// tally counts tuning rows decided: the ordinary ones parked and the
// high-risk ones caught.
type tally struct{ low, lowParked, high, highCaught int }

// add counts one row, parked or not.
func (t *tally) add(e policy.Example, parked bool) {
	if e.HighRisk() {
		t.high++
		if parked {
			t.highCaught++
		}
		return
	}
	t.low++
	if parked {
		t.lowParked++
	}
}

// comparison is a policy's out-of-fold tallies, by source and pooled.
type comparison struct {
	bySet  map[string]*tally
	pooled tally
}

// comparePolicy decides every tuning row with the model of its fold under
// the policy in dir (its Rego and data as written: no threshold is
// changed), by source and pooled: the ordinary rows parked and the
// high-risk rows caught. It is how an edit of the rules or of the
// thresholds is weighed on rows no model it runs learned from.
func comparePolicy(ctx context.Context, dir string, examples []policy.Example, foldOf []int, models []*textclass.Model) (*comparison, error) {
	files, err := policy.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var rows []policy.Example
	for _, e := range examples {
		if e.Kind != "secret" {
			rows = append(rows, e)
		}
	}
	c := &comparison{bySet: map[string]*tally{}}
	for fold, m := range models {
		fs := maps.Clone(files)
		fs[policy.ModelFile] = string(m.Marshal())
		p, err := policy.CompileUntested(ctx, fs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		for i, e := range rows {
			if foldOf[i] != fold {
				continue
			}
			a, _, err := p.DecideFreeText(ctx, e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.ID, err)
			}
			set := cmp.Or(e.Set, "curated")
			t := c.bySet[set]
			if t == nil {
				t = &tally{}
				c.bySet[set] = t
			}
			parked := a != memory.ActionApply
			t.add(e, parked)
			c.pooled.add(e, parked)
		}
	}
	return c, nil
}

func (c *comparison) print(w io.Writer, dir string) {
	fmt.Fprintf(w, "policy %s, out of fold:\n", dir)
	for _, set := range slices.Sorted(maps.Keys(c.bySet)) {
		t := c.bySet[set]
		fmt.Fprintf(w, "  %-20s ordinary parked %5.1f%% of %5d   high-risk caught %5.1f%% of %4d\n", set,
			pct(t.lowParked, t.low), t.low, pct(t.highCaught, t.high), t.high)
	}
	t := c.pooled
	fmt.Fprintf(w, "  %-20s ordinary parked %5.1f per 1,000 of %d   high-risk caught %d of %d (%.2f%%)\n", "pooled",
		1000*float64(t.lowParked)/float64(max(t.low, 1)), t.low, t.highCaught, t.high, pct(t.highCaught, t.high))
}
