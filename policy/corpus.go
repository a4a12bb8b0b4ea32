package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memgate/memgate/memory"
)

// Example is one labelled memory text: what a write says and what the
// policy is expected to do with it. The repository's corpus
// (policy/corpus/*.jsonl) and an operator's own table of examples share
// this format, one JSON object a line.
type Example struct {
	ID   string `json:"id"`
	Lang string `json:"lang"` // en, zh or mixed
	// Kind is what the text is: strategy, permission, state_change,
	// inference, poisoning, secret, preference, checkpoint or knowledge.
	Kind   string        `json:"kind"`
	Text   string        `json:"text"`
	Expect memory.Action `json:"expect"`
	// Source is the candidate's source; user-explicit when empty.
	Source memory.Source `json:"source,omitempty"`
	// Layer is the layer the writer declares; none when empty.
	Layer memory.Layer `json:"layer,omitempty"`
	Note  string       `json:"note,omitempty"`

	// Real text (policy/corpus/real/) says where it came from: Set is its
	// source (topical_chat, sgd, …), Genre what kind of writing it is
	// (conversation, request, howto, notes, code, rules, attack), Part
	// whether the classifier may learn from it ("tune") or it is only
	// measured ("aside"), Ref the file or record it was taken from.
	Set   string `json:"set,omitempty"`
	Genre string `json:"genre,omitempty"`
	Part  string `json:"part,omitempty"`
	Ref   string `json:"ref,omitempty"`
}

// Parts of the corpus: what the classifier learns from, and what only
// measures it.
const (
	PartTune  = "tune"
	PartAside = "aside"
)

// Example kinds, and the action each expects by default. "ordinary" is
// what most real text is: conversation, requests for the task at hand,
// how-to notes, facts, technique and style advice.
var exampleKinds = map[string]memory.Action{
	"strategy": memory.ActionReview, "permission": memory.ActionReview, "state_change": memory.ActionReview,
	"inference": memory.ActionReview, "poisoning": memory.ActionReview, "secret": memory.ActionReject,
	"preference": memory.ActionApply, "checkpoint": memory.ActionApply, "knowledge": memory.ActionApply,
	"ordinary": memory.ActionApply,
}

// HighRisk reports whether the example's kind must never apply on arrival.
func (e Example) HighRisk() bool { return exampleKinds[e.Kind] != memory.ActionApply }

// ReadExamples reads labelled examples, one JSON object a line (blank
// lines and lines starting with # are skipped). Unknown fields, unknown
// kinds or actions, and duplicate ids are errors naming the line.
func ReadExamples(r io.Reader) ([]Example, error) {
	var out []Example
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var e Example
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, ok := exampleKinds[e.Kind]; !ok {
			return nil, fmt.Errorf("line %d: unknown kind %q", n, e.Kind)
		}
		switch e.Expect {
		case memory.ActionApply, memory.ActionReview, memory.ActionReject:
		default:
			return nil, fmt.Errorf("line %d: expect must be apply, review or reject, not %q", n, e.Expect)
		}
		if e.Source != "" && !e.Source.Valid() {
			return nil, fmt.Errorf("line %d: unknown source %q", n, e.Source)
		}
		if e.Layer != "" && !e.Layer.Valid() {
			return nil, fmt.Errorf("line %d: unknown layer %q", n, e.Layer)
		}
		if e.ID == "" || e.Text == "" {
			return nil, fmt.Errorf("line %d: id and text are required", n)
		}
		if e.Part != "" && e.Part != PartTune && e.Part != PartAside {
			return nil, fmt.Errorf("line %d: part must be %s or %s, not %q", n, PartTune, PartAside, e.Part)
		}
		if prev, ok := seen[e.ID]; ok {
			return nil, fmt.Errorf("line %d: id %q already on line %d", n, e.ID, prev)
		}
		seen[e.ID] = n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// SubmitExample writes an example through g as the sidecar receives a
// free-text write: a summary with the example's source, declaring layer if
// not empty (else the example's layer, if any), in a scope of its own user
// (so examples never meet in a slot; tag keeps repeated runs apart), from
// the native dialect. It returns the action the write met (an unchanged
// repeat counts as applied) and the governor's result.
func SubmitExample(ctx context.Context, g *memory.Governor, e Example, layer memory.Layer, tag string) (memory.Action, *memory.SubmitResult, error) {
	if layer == "" {
		layer = e.Layer
	}
	res, err := g.Submit(ctx, memory.Candidate{Summary: e.Text, Layer: layer, CandidateSource: e.Source,
		Scope: memory.Scope{UserID: "u-" + e.ID + tag}, Actor: memory.Actor{AgentID: "corpus", Dialect: "native"}})
	if err != nil {
		return "", nil, err
	}
	switch res.Outcome {
	case memory.OutcomeApplied, memory.OutcomeUnchanged:
		return memory.ActionApply, res, nil
	case memory.OutcomeParked:
		return memory.ActionReview, res, nil
	}
	return memory.ActionReject, res, nil
}

// Score is a confusion matrix of expected against actual actions over
// labelled examples, with a line for each example that breaks one of the
// gate's promises: a high-risk text applied, a secret not rejected, a
// low-risk text sent to review.
type Score struct {
	Matrix                                 map[memory.Action]map[memory.Action]int
	HighApplied, SecretStored, LowReviewed []string
	Low, Total                             int
}

// Add counts one example's outcome; rec, if not nil, is the record it
// became, whose rules and layer the example's line names.
func (s *Score) Add(e Example, got memory.Action, rec *memory.Record) {
	if s.Matrix == nil {
		s.Matrix = map[memory.Action]map[memory.Action]int{}
	}
	if s.Matrix[e.Expect] == nil {
		s.Matrix[e.Expect] = map[memory.Action]int{}
	}
	s.Matrix[e.Expect][got]++
	s.Total++
	line := fmt.Sprintf("%s %q -> %s [%s]", e.ID, e.Text, got, decisionNote(rec))
	switch {
	case e.Kind == "secret" && got != memory.ActionReject:
		s.SecretStored = append(s.SecretStored, line)
	case e.HighRisk() && got == memory.ActionApply:
		s.HighApplied = append(s.HighApplied, line)
	case !e.HighRisk():
		s.Low++
		if got != memory.ActionApply {
			s.LowReviewed = append(s.LowReviewed, line)
		}
	}
}

// OverReview is the share of low-risk examples not applied.
func (s *Score) OverReview() float64 {
	if s.Low == 0 {
		return 0
	}
	return float64(len(s.LowReviewed)) / float64(s.Low)
}

// Table prints the matrix and a line of counts.
func (s *Score) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %8s %8s %8s\n", "expected\\actual", "apply", "review", "reject")
	for _, want := range []memory.Action{memory.ActionApply, memory.ActionReview, memory.ActionReject} {
		fmt.Fprintf(&b, "%-16s %8d %8d %8d\n", want, s.Matrix[want][memory.ActionApply], s.Matrix[want][memory.ActionReview], s.Matrix[want][memory.ActionReject])
	}
	fmt.Fprintf(&b, "high-risk applied: %d, secrets stored: %d, low-risk over-reviewed: %d of %d (%.1f%%)",
		len(s.HighApplied), len(s.SecretStored), len(s.LowReviewed), s.Low, 100*s.OverReview())
	return b.String()
}

// decisionNote names the rules that fired for rec and its layer.
func decisionNote(rec *memory.Record) string {
	if rec == nil || rec.Decision == nil {
		return ""
	}
	ids := make([]string, 0, len(rec.Decision.Reasons))
	for _, rs := range rec.Decision.Reasons {
		ids = append(ids, rs.Rule)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",") + " layer=" + string(rec.Layer)
}

// SourceScore counts, for one source of real text (Example.Set) and part,
// what the gate did: ordinary texts parked (a reviewer's wasted time: the
// figure is reviews per 1,000 ordinary writes), high-risk texts caught,
// poisoning and injection kept out, secrets refused.
type SourceScore struct {
	Set, Part, Genre, Lang   string
	Ordinary, OrdinaryParked int
	High, HighCaught         int
	Poisoning, PoisonCaught  int
	Secrets, SecretsRefused  int
}

// Add counts one example's outcome.
func (s *SourceScore) Add(e Example, got memory.Action) {
	switch {
	case e.Kind == "secret":
		s.Secrets++
		if got == memory.ActionReject {
			s.SecretsRefused++
		}
	case e.HighRisk():
		s.High++
		if got != memory.ActionApply {
			s.HighCaught++
		}
		if e.Kind == "poisoning" {
			s.Poisoning++
			if got != memory.ActionApply {
				s.PoisonCaught++
			}
		}
	default:
		s.Ordinary++
		if got != memory.ActionApply {
			s.OrdinaryParked++
		}
	}
}

// ReviewsPer1000 is how many of every 1,000 ordinary writes wait for a
// reviewer.
func (s *SourceScore) ReviewsPer1000() float64 { return ratio(1000, s.OrdinaryParked, s.Ordinary) }

// Recall is the share of high-risk texts caught, in percent.
func (s *SourceScore) Recall() float64 { return ratio(100, s.HighCaught, s.High) }

// Precision is the share of parked texts that were high risk, in percent.
func (s *SourceScore) Precision() float64 {
	return ratio(100, s.HighCaught, s.HighCaught+s.OrdinaryParked)
}

func ratio(scale float64, a, b int) float64 {
	if b == 0 {
		return 0
	}
	return scale * float64(a) / float64(b)
}

// SourceTable prints scores as a table, one line per source and part:
// ordinary texts and the reviews per 1,000 of them, high-risk texts and
// the share caught, precision, poisoning kept out and secrets refused.
// A dash marks what a source has none of.
func SourceTable(scores []*SourceScore) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %-20s | %-5s | %-12s | %-5s | %8s | %16s | %9s | %8s | %9s | %12s | %9s |\n",
		"source", "part", "genre", "lang", "ordinary", "reviews per 1000", "high-risk", "caught", "precision", "poisoning out", "secrets")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 22), strings.Repeat("-", 7), strings.Repeat("-", 14),
		strings.Repeat("-", 7), strings.Repeat("-", 10), strings.Repeat("-", 18), strings.Repeat("-", 11), strings.Repeat("-", 10),
		strings.Repeat("-", 11), strings.Repeat("-", 14), strings.Repeat("-", 11))
	dash := func(n int, s string) string {
		if n == 0 {
			return "-"
		}
		return s
	}
	for _, s := range scores {
		fmt.Fprintf(&b, "| %-20s | %-5s | %-12s | %-5s | %8d | %16s | %9d | %8s | %9s | %12s | %9s |\n",
			s.Set, s.Part, s.Genre, s.Lang, s.Ordinary, dash(s.Ordinary, fmt.Sprintf("%.1f", s.ReviewsPer1000())),
			s.High, dash(s.High, fmt.Sprintf("%.1f%%", s.Recall())), dash(s.HighCaught+s.OrdinaryParked, fmt.Sprintf("%.1f%%", s.Precision())),
			dash(s.Poisoning, fmt.Sprintf("%d/%d", s.PoisonCaught, s.Poisoning)), dash(s.Secrets, fmt.Sprintf("%d/%d", s.SecretsRefused, s.Secrets)))
	}
	return b.String()
}

// ReadExamplesFile is ReadExamples of a file; errors name it.
func ReadExamplesFile(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ex, err := ReadExamples(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ex, nil
}

// ReadRealCorpus reads every *.jsonl file of a directory of real text
// (policy/corpus/real), in name order; each row must name its source and
// part.
func ReadRealCorpus(dir string) ([]Example, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no *.jsonl files in %s", dir)
	}
	var out []Example
	for _, p := range paths {
		ex, err := ReadExamplesFile(p)
		if err != nil {
			return nil, err
		}
		for _, e := range ex {
			if e.Set == "" || (e.Part != PartTune && e.Part != PartAside) {
				return nil, fmt.Errorf("%s: %s names no set, or no part (tune or aside)", p, e.ID)
			}
		}
		out = append(out, ex...)
	}
	return out, nil
}

// SourceScores are scores by source and part.
type SourceScores map[[2]string]*SourceScore

// Add counts one example.
func (ss SourceScores) Add(e Example, got memory.Action) {
	k := [2]string{e.Set, e.Part}
	genre := strings.SplitN(e.Genre, ":", 2)[0]
	s := ss[k]
	if s == nil {
		s = &SourceScore{Set: e.Set, Part: e.Part, Genre: genre, Lang: e.Lang}
		ss[k] = s
	}
	if s.Lang != e.Lang {
		s.Lang = "en+zh"
	}
	if s.Genre != genre {
		s.Genre = "mixed"
	}
	s.Add(e, got)
}

// Sorted lists the scores: the tuning parts, then the parts kept aside,
// each by source.
func (ss SourceScores) Sorted() []*SourceScore {
	keys := slices.SortedFunc(maps.Keys(ss), func(a, b [2]string) int {
		if a[1] != b[1] {
			return strings.Compare(b[1], a[1]) // tune before aside
		}
		return strings.Compare(a[0], b[0])
	})
	out := make([]*SourceScore, len(keys))
	for i, k := range keys {
		out[i] = ss[k]
	}
	return out
}
