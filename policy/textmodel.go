package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/textclass"
	"github.com/open-policy-agent/opa/v1/ast"
)

// textScoresKey is the candidate field with the classifier's scores,
// {head: probability}, when the policy has a classifier.model.
const textScoresKey = "text_scores"

// withModel attaches the policy's classifier (ModelFile), if it has one,
// to its text features: the classifier reads the features' scan.
func withModel(features *textFeatures, files FileSet) (*textFeatures, error) {
	raw, ok := files[ModelFile]
	if !ok {
		return features, nil
	}
	m, err := textclass.Parse([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", ModelFile, err)
	}
	if features == nil {
		return nil, fmt.Errorf("policy %s: the classifier reads the text features, and data memgate_config.features declares none", ModelFile)
	}
	f := *features
	f.model = m
	f.modelHeads = make([]*ast.Term, len(m.Heads()))
	for i, h := range m.Heads() {
		f.modelHeads[i] = ast.StringTerm(h)
	}
	return &f, nil
}

// modelFeatures are the names of the features found in one text (keyword
// lists, leads and builtins: not patterns, which a query matches only when
// it reads them, so their findings depend on the query and the scores must
// not).
func (f *textFeatures) modelFeatures(found []bool) []string {
	var names []string
	for i, hit := range found {
		if hit {
			names = append(names, f.names[i])
		}
	}
	if len(names) > maxPairedFeatures {
		return names
	}
	out := names
	for i, a := range names {
		for j, b := range names[i+1:] {
			out = append(out, a+"&"+b)
			if len(names) <= maxTripledFeatures {
				for _, c := range names[i+1+j+1:] {
					out = append(out, a+"&"+b+"&"+c)
				}
			}
		}
	}
	return out
}

// maxTripledFeatures bounds the features taken three at a time: a rule
// is often three cues at once (a normative form, an action, a condition).
const maxTripledFeatures = 10

// maxPairedFeatures bounds the features paired: a text with more is
// long, and its pairs would say little.
const maxPairedFeatures = 16

// scoreTexts scores each text of a candidate on its own (the summary,
// then each of the other texts and readings) and keeps each head's highest
// score: risk never goes down on the writer's word, and words added beside
// a rule (metadata, an evidence excerpt) must not dilute it.
func (f *textFeatures) scoreTexts(ct *candidateText) []float32 {
	scores := make([]float32, len(f.modelHeads))
	one := make([]float32, len(f.modelHeads))
	found := make([]bool, len(f.names))
	for i, norm := range append([]string{ct.norm}, ct.moreNorm...) {
		f.model.Score(norm, f.modelNames(norm, ct.heads[i], ct.builtin, found), one)
		for h, x := range one {
			if i == 0 || x > scores[h] {
				scores[h] = x
			}
		}
	}
	return scores
}

// modelNames are the features the classifier reads of one text, whose
// normalized form is norm and clause heads heads: the keyword lists and
// leads found in it, the candidate's builtins, and their pairs and
// triples. found is scratch space of len(f.names).
func (f *textFeatures) modelNames(norm, heads string, builtin map[string]bool, found []bool) []string {
	clear(found)
	f.matchWords(norm, heads, found)
	for name, id := range f.builtin {
		found[id] = builtin[name]
	}
	return f.modelFeatures(found)
}

// modelInput is what the classifier reads of a summary alone, as
// scoreTexts reads it: its normalized form and the features found in it.
func (f *textFeatures) modelInput(summary string) (string, []string) {
	ct := readCandidate(&memory.Record{Summary: summary}, nil)
	return ct.norm, f.modelNames(ct.norm, ct.heads[0], ct.builtin, make([]bool, len(f.names)))
}

// scoresTerm is the classifier's scores as the input's text_scores, each
// rounded to four decimals so that the input is the same wherever the
// float arithmetic rounds differently in its last bits.
func (f *textFeatures) scoresTerm(scores []float32) *ast.Term {
	items := make([][2]*ast.Term, len(scores))
	for i, s := range scores {
		items[i] = [2]*ast.Term{f.modelHeads[i], ast.NumberTerm(roundedNumber(s))}
	}
	return ast.ObjectTerm(items...)
}

func roundedNumber(x float32) json.Number {
	return json.Number(strconv.FormatFloat(float64(x), 'f', 4, 32))
}

// ClassifierHeads are the questions the default classifier answers for a
// text: is it high risk; does it try to instruct the agent or its tools;
// does it state a change of state; is it a guess about something that
// matters.
var ClassifierHeads = []string{"risk", "poisoning", "state", "inference"}

// headLabels are the labels of a corpus example for ClassifierHeads: 1
// yes, 0 no; nil for a secret (the scanner, not the classifier, decides
// those).
func headLabels(kind string) []float32 {
	if kind == "secret" {
		return nil
	}
	risk := float32(0)
	if exampleKinds[kind] != memory.ActionApply {
		risk = 1
	}
	is := func(k string) float32 {
		if kind == k {
			return 1
		}
		return 0
	}
	return []float32{risk, is("poisoning"), is("state_change"), is("inference")}
}

// ClassifierExamples turns labelled examples into the classifier's
// training examples, reading each text with the policy's own features as
// the sidecar reads a summary (scoreTexts: its normalized form and the
// features found in it; its readings are texts of their own). Secrets are
// left out.
func ClassifierExamples(ctx context.Context, files FileSet, examples []Example) ([]textclass.Example, error) {
	_, _, data, err := parsePolicy(files)
	if err != nil {
		return nil, err
	}
	features, err := parseFeatures(data)
	if err != nil {
		return nil, err
	}
	if features == nil {
		return nil, errors.New("the policy declares no text features (memgate_config.features)")
	}
	var out []textclass.Example
	for _, e := range examples {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		labels := headLabels(e.Kind)
		if labels == nil {
			continue
		}
		norm, names := features.modelInput(e.Text)
		out = append(out, textclass.Example{Norm: norm, Features: names, Labels: labels})
	}
	return out, nil
}

// DecideFreeText decides a free-text write of e into an empty slot, as the
// governor does for a new memory (placed, then decided), without a store:
// for offline evaluation of a policy and its classifier (memgate-train's
// sweep). It returns the action and the classifier's scores (nil without a
// model).
func (p *Compiled) DecideFreeText(ctx context.Context, e Example) (memory.Action, []float32, error) {
	rec := &memory.Record{ID: "01JEVAL0000000000000000000", Op: memory.OpWrite, Layer: e.Layer, Summary: e.Text,
		Status: memory.StatusPending, CandidateSource: e.Source, Scope: memory.Scope{UserID: "eval"},
		Actor: memory.Actor{AgentID: "eval", Dialect: "native"}}
	if rec.CandidateSource == "" {
		rec.CandidateSource = memory.SourceUser
	}
	rec.SubjectID = rec.Scope.Entity()
	rec.DeclaredLayer = rec.Layer
	in := &memory.PolicyInput{Op: rec.Op, Candidate: rec, Pending: []*memory.Record{}, Actor: rec.Actor, Dialect: rec.Actor.Dialect}
	pl, err := p.Place(ctx, in)
	if err != nil {
		return "", nil, err
	}
	if pl.Layer.Valid() {
		rec.InferredLayer = pl.Layer
	}
	if rec.FactType == "" {
		rec.FactType = pl.FactType
	}
	if pl.SubjectID != "" {
		rec.SubjectID = pl.SubjectID
	}
	if len(pl.Value) > 0 {
		rec.Value = pl.Value
	}
	rec.Layer = memory.HighestLayer(rec.DeclaredLayer, rec.InferredLayer)
	if rec.Layer == "" {
		rec.Layer = memory.LayerKnowledge
	}
	d, err := p.Classify(ctx, in)
	if err != nil {
		return "", nil, err
	}
	var scores []float32
	if p.features != nil && p.features.model != nil {
		scores = p.features.scanText(rec).scores
	}
	return d.Action, scores, nil
}
