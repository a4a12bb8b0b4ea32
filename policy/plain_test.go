package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/util"
)

// plainPolicy is a policy evaluated the way a plain OPA host would, with
// none of the sidecar's speed-ups: the whole input as encoding/json writes
// it, handed to OPA as a Go value; the text facts computed by the plain
// loops of features.rego's definitions (plainFacts), without the keyword
// index, the regexp prefilters or the scan memo; OPA's own store, base
// cache, cancellation, metrics and result conversion. It is the reference
// the differential test holds the sidecar's path to, decision for
// decision; a Go test holds plainFacts to the Rego definitions.
type plainPolicy struct {
	p  *Compiled // compiled with OPA's own store: its queries and revision
	pp *plainPath
}

func compilePlain(ctx context.Context, files FileSet) (*plainPolicy, error) {
	p, err := compile(ctx, files, compileConfig{opaStore: true})
	if err != nil {
		return nil, err
	}
	_, _, data, err := parsePolicy(files)
	if err != nil {
		return nil, err
	}
	return &plainPolicy{p: p, pp: newPlainPath(data, p.features)}, nil
}

func (pl *plainPolicy) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	return pl.p.classify(ctx, in, pl.pp.eval)
}

func (pl *plainPolicy) Place(ctx context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	return pl.p.placeWith(ctx, in, pl.pp.eval)
}

func (pl *plainPolicy) PlaceAndClassify(ctx context.Context, in *memory.PolicyInput) (memory.Placement, memory.Decision, error) {
	return pl.p.placeAndClassify(ctx, in, pl.pp.eval)
}

// plainPath builds plainPolicy's input and evaluates its queries.
type plainPath struct {
	// spec is data.memgate_config.features as parsed JSON; nil when the
	// policy declares no features.
	spec map[string]any
	// features carries the policy's classifier, if any: its scores are
	// the sidecar's own (no Rego defines them), computed by the same code
	// on both paths.
	features *textFeatures
}

func newPlainPath(data map[string]any, features *textFeatures) *plainPath {
	mg, _ := data[ConfigRoot].(map[string]any)
	spec, _ := mg["features"].(map[string]any)
	return &plainPath{spec: spec, features: features}
}

func (pp *plainPath) eval(ctx context.Context, q *rego.PreparedEvalQuery, in *memory.PolicyInput) (ast.Value, error) {
	doc, err := pp.input(in)
	if err != nil {
		return nil, fmt.Errorf("build policy input: %w", err)
	}
	rs, err := q.Eval(ctx, rego.EvalInput(doc))
	if err != nil {
		return nil, evalError(ctx, err)
	}
	x, err := onlyResult(rs)
	if err != nil {
		return nil, err
	}
	return ast.InterfaceToValue(x)
}

// input is the JSON document of in, with the sidecar's text fields added
// to its records as the README's input document describes them.
func (pp *plainPath) input(in *memory.PolicyInput) (map[string]any, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := util.UnmarshalJSON(raw, &doc); err != nil {
		return nil, err
	}
	addTextFields(doc["candidate"], in.Candidate)
	addTextFields(doc["current"], in.Current)
	if pending, ok := doc["pending"].([]any); ok {
		for i, p := range pending {
			addTextFields(p, in.Pending[i])
		}
	}
	if cand, ok := doc["candidate"].(map[string]any); ok && in.Candidate != nil {
		ct := readCandidate(in.Candidate, anyStrings(pp.spec["context_sources"]))
		parts := []any{}
		for _, c := range ct.clauses() {
			parts = append(parts, c)
		}
		more := []any{}
		for _, m := range ct.more {
			more = append(more, m)
		}
		read := map[string]any{}
		for name := range ct.builtin {
			read[name] = true
		}
		cand[textClausesKey], cand[textMoreKey], cand[textReadKey] = parts, more, read
		cand[textScanKey] = ct.scanNorm()
		if pp.features != nil && pp.features.model != nil {
			scores := map[string]any{}
			for i, v := range pp.features.scanText(in.Candidate).scores {
				scores[pp.features.model.Heads()[i]] = roundedNumber(v)
			}
			cand[textScoresKey] = scores
		}
	}
	if cand, ok := doc["candidate"].(map[string]any); ok && pp.spec != nil {
		features, first, captures, err := plainFacts(pp.spec, cand)
		if err != nil {
			return nil, fmt.Errorf("text features: %w", err)
		}
		cand[textFeaturesKey], cand[textFirstKey], cand[textCapturesKey] = features, first, captures
	}
	return doc, nil
}

// addTextFields adds text_norm and text_clauses to the JSON of rec.
func addTextFields(doc any, rec *memory.Record) {
	obj, ok := doc.(map[string]any)
	if !ok || rec == nil {
		return
	}
	obj[textNormKey] = normalizeText(rec.Summary)
	parts := []any{}
	for _, c := range clauses(rec.Summary) {
		parts = append(parts, c)
	}
	obj[textClausesKey] = parts
}

// plainFacts computes text_features, text_first and text_captures for the
// JSON of a candidate (text_norm and text_clauses added) as features.rego
// defines them, expression for expression: every keyword with
// strings.Contains, every regexp run, lists in the data's order.
func plainFacts(spec, cand map[string]any) (features, first, captures map[string]any, err error) {
	text, _ := cand[textNormKey].(string)
	scanned, _ := cand[textScanKey].(string)
	summary, _ := cand["summary"].(string)
	evidence, _ := cand["evidence"].(map[string]any)
	excerpt, _ := evidence["excerpt"].(string)
	valueText := ""
	if v, ok := cand["value"]; ok && v != nil {
		b, err := json.Marshal(v) // as OPA's json.marshal
		if err != nil {
			return nil, nil, nil, err
		}
		valueText = string(b)
	}
	raws := append([]string{summary, excerpt, valueText}, anyStrings(cand[textMoreKey])...)
	keywords, _ := spec["keywords"].(map[string]any)
	except, _ := spec["except"].(map[string]any)
	features = map[string]any{}
	for name, kws := range keywords {
		if _, masked := except[name]; !masked && containsAny(scanned, kws) {
			features[name] = true
		}
	}
	for name, phrases := range except {
		var oldnew []string
		for _, p := range sortedStrings(phrases) {
			oldnew = append(oldnew, p, " ")
		}
		if containsAny(strings.NewReplacer(oldnew...).Replace(scanned), keywords[name]) {
			features[name] = true
		}
	}
	patterns, _ := spec["patterns"].(map[string]any)
	for name, pats := range patterns {
		for _, p := range anyStrings(pats) {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, nil, nil, err
			}
			if slices.ContainsFunc(raws, re.MatchString) {
				features[name] = true
			}
		}
	}
	leads, _ := spec["leads"].(map[string]any)
	clauseList, _ := cand[textClausesKey].([]any)
	for name, words := range leads {
		for _, c := range anyStrings(clauseList) {
			for _, w := range anyStrings(words) {
				if strings.HasPrefix(c, w) {
					features[name] = true
				}
			}
		}
	}
	read, _ := cand[textReadKey].(map[string]any)
	for _, name := range anyStrings(spec["builtin"]) {
		if read[name] == true {
			features[name] = true
		}
	}
	first = map[string]any{}
	lists, _ := spec["first"].(map[string]any)
	for list, names := range lists {
		for _, n := range anyStrings(names) {
			if features[n] == true {
				first[list] = n
				break
			}
		}
	}
	captures = map[string]any{}
	specs, _ := spec["captures"].(map[string]any)
	for name, raw := range specs {
		cs, _ := raw.(map[string]any)
		exclude := anyStrings(cs["exclude"])
	patterns:
		for _, p := range anyStrings(cs["patterns"]) {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, nil, nil, err
			}
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				for _, n := range m[1:] {
					if n != "" && !slices.Contains(exclude, n) {
						captures[name] = n
						break patterns
					}
				}
			}
		}
	}
	return features, first, captures, nil
}

func containsAny(text string, words any) bool {
	return slices.ContainsFunc(anyStrings(words), func(w string) bool { return strings.Contains(text, w) })
}

// anyStrings reads a JSON list of strings (other elements are skipped).
func anyStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedStrings(v any) []string {
	out := anyStrings(v)
	slices.Sort(out)
	return out
}
