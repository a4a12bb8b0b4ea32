package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
)

// textFeaturesKey is the candidate field that carries the features the
// sidecar found: {name: true} for each one.
const textFeaturesKey = "text_features"

// textFeatures is the sidecar's half of a small contract with policy: the
// policy's data may declare, under memgate.features,
//
//	keywords: {name: [keyword, ...]}  substrings of the normalized text
//	patterns: {name: [regex, ...]}    RE2 over the raw summary, evidence
//	                                  excerpt and value
//
// and the sidecar reports which names occur. Matching a hundred keywords in
// Go costs about a microsecond; the same loop in Rego costs a hundred. The
// policy decides what the features mean, and can compute them itself when
// the field is absent, so it still runs under plain `opa test`.
type textFeatures struct {
	keywords []keywordFeature
	patterns []patternFeature
}

type keywordFeature struct {
	name  string
	words []string
}

type patternFeature struct {
	name string
	res  []*prefiltered
}

// parseFeatures reads data.memgate.features; a policy without it gets none.
func parseFeatures(data map[string]any) (*textFeatures, error) {
	mg, _ := data["memgate"].(map[string]any)
	raw, ok := mg["features"]
	if !ok {
		return nil, nil
	}
	spec, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data memgate.features: want an object")
	}
	f := &textFeatures{}
	kws, err := stringLists(spec, "keywords")
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(kws) {
		f.keywords = append(f.keywords, keywordFeature{name: name, words: kws[name]})
	}
	pats, err := stringLists(spec, "patterns")
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(pats) {
		pf := patternFeature{name: name}
		for _, p := range pats[name] {
			re, err := compilePrefiltered(p)
			if err != nil {
				return nil, fmt.Errorf("data memgate.features.patterns.%s: %w", name, err)
			}
			pf.res = append(pf.res, re)
		}
		f.patterns = append(f.patterns, pf)
	}
	return f, nil
}

func stringLists(spec map[string]any, key string) (map[string][]string, error) {
	out := map[string][]string{}
	raw, ok := spec[key]
	if !ok {
		return out, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data memgate.features.%s: want an object of string lists", key)
	}
	for name, v := range obj {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("data memgate.features.%s.%s: want a list of strings", key, name)
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("data memgate.features.%s.%s: want a list of strings", key, name)
			}
			out[name] = append(out[name], s)
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// match returns the features of a candidate whose normalized text is norm.
func (f *textFeatures) match(rec *memory.Record, norm string) ast.Object {
	found := ast.NewObject()
	for _, kf := range f.keywords {
		for _, w := range kf.words {
			if strings.Contains(norm, w) {
				found.Insert(ast.StringTerm(kf.name), ast.BooleanTerm(true))
				break
			}
		}
	}
	if len(f.patterns) == 0 {
		return found
	}
	raws := [3]string{rec.Summary, rec.Evidence.Excerpt, string(rec.Value)}
	var lowered [3]string // computed on first use: most writes need none
	for _, pf := range f.patterns {
		if patternMatches(pf.res, raws[:], lowered[:]) {
			found.Insert(ast.StringTerm(pf.name), ast.BooleanTerm(true))
		}
	}
	return found
}

func patternMatches(res []*prefiltered, raws, lowered []string) bool {
	for _, re := range res {
		for i, s := range raws {
			if s != "" && re.matches(s, &lowered[i]) {
				return true
			}
		}
	}
	return false
}
