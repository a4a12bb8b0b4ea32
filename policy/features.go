package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/textclass"
	"github.com/open-policy-agent/opa/v1/ast"
)

// ConfigRoot is where a policy's data lives: data.memgate_config, beside
// and not under the rules' package (data.memgate). OPA looks up base data
// under a package of rules several times slower, as it has to rule out a
// virtual document at every step.
const ConfigRoot = "memgate_config"

// The candidate fields that carry what the sidecar found in the text:
// text_features {name: true} for each feature, text_first {list: name} for
// each ranked list with a feature found, text_captures {name: capture}.
const (
	textFeaturesKey = "text_features"
	textFirstKey    = "text_first"
	textCapturesKey = "text_captures"
	textClausesKey  = "text_clauses"
)

// textFeatures is the sidecar's half of a small contract with policy: the
// policy's data may declare, under memgate_config.features,
//
//	keywords: {name: [keyword, ...]}  substrings of the normalized text
//	except:   {name: [phrase, ...]}   a keyword list's keywords are
//	                                  matched with these phrases blanked
//	                                  out ("send me" is not an action)
//	leads:    {name: [keyword, ...]}  prefixes of a normalized clause (the
//	                                  summary split at sentence and clause
//	                                  punctuation), e.g. an imperative
//	patterns: {name: [regex, ...]}    RE2 over the raw summary, evidence
//	                                  excerpt and value
//	first:    {list: [name, ...]}     the first of these features found
//	captures: {name: {patterns: [regex, ...], exclude: [string, ...]}}
//	          the first non-empty submatch of a pattern over the
//	          normalized text that is not excluded
//
// and the sidecar reports which names occur. Matching a hundred keywords in
// Go costs about a microsecond; the same loop in Rego costs a hundred. The
// policy decides what the features mean, and can compute them itself when
// the field is absent, so it still runs under plain `opa test`.
type textFeatures struct {
	// names holds every feature, keyword lists first; the other fields
	// refer to features by their index here, and nameTerms holds each
	// name as a term built once (terms in the input are never modified).
	names     []string
	nameTerms []*ast.Term
	keywords  []keywordFeature
	index     *keywordIndex
	// excepts are the keyword lists matched against a masked text.
	excepts []exceptList
	// leads are matched by leadIndex against clauseHeads: leadIDs[i] is the
	// feature of lead list i.
	leads     []keywordFeature
	leadIndex *keywordIndex
	leadIDs   []int
	patterns  []patternFeature
	// literals finds, in one pass over a lowered raw text, which patterns'
	// prefilter literals occur (see prefilterIndex).
	literals *prefilterIndex
	first    []rankedList
	captures []captureSpec
	// builtin maps the builtin features the policy declares to their
	// ids (see texts.go).
	builtin map[string]int
	// contextSources are the evidence source prefixes whose evidence is
	// a conversation, read by patterns only.
	contextSources []string
	// model is the policy's classifier (textmodel.go), nil without one;
	// modelHeads its heads' names as terms.
	model      *textclass.Model
	modelHeads []*ast.Term
}

type exceptList struct {
	id    int // the keyword list, and feature
	mask  *strings.Replacer
	index *keywordIndex
}

type rankedList struct {
	name     *ast.Term
	features []int // feature ids in rank order; names not declared are never found
}

type captureSpec struct {
	name     *ast.Term
	patterns []*prefiltered
	exclude  map[string]bool
}

type keywordFeature struct {
	name  string
	words []string
}

type patternFeature struct {
	id  int
	res []*prefiltered
	// lits[j] is the literal list of res[j] in the prefilter index; -1
	// when it has none and always runs.
	lits []int
}

// id returns the index of feature name, adding it if new.
func (f *textFeatures) id(name string) int {
	if i := slices.Index(f.names, name); i >= 0 {
		return i
	}
	f.names = append(f.names, name)
	f.nameTerms = append(f.nameTerms, ast.StringTerm(name))
	return len(f.names) - 1
}

// parseFeatures reads data.memgate_config.features; a policy without it gets none.
func parseFeatures(data map[string]any) (*textFeatures, error) {
	mg, _ := data[ConfigRoot].(map[string]any)
	raw, ok := mg["features"]
	if !ok {
		return nil, nil
	}
	spec, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data memgate_config.features: want an object")
	}
	f := &textFeatures{}
	kws, err := stringLists(spec, "keywords")
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(kws) {
		f.id(name) // keyword list i is feature i
		f.keywords = append(f.keywords, keywordFeature{name: name, words: kws[name]})
	}
	f.index = newKeywordIndex(f.keywords)
	excepts, err := stringLists(spec, "except")
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(excepts) {
		i := slices.IndexFunc(f.keywords, func(k keywordFeature) bool { return k.name == name })
		if i < 0 {
			return nil, fmt.Errorf("data memgate_config.features.except.%s: no keyword list of that name", name)
		}
		// Sorted, as OPA's strings.replace_n orders its patterns, so the
		// policy's reference definition blanks the same phrases.
		phrases := slices.Sorted(slices.Values(excepts[name]))
		var oldnew []string
		for _, p := range phrases {
			oldnew = append(oldnew, p, " ")
		}
		f.excepts = append(f.excepts, exceptList{id: i, mask: strings.NewReplacer(oldnew...),
			index: newKeywordIndex([]keywordFeature{f.keywords[i]})})
	}
	leads, err := stringLists(spec, "leads")
	if err != nil {
		return nil, err
	}
	var marked []keywordFeature
	for _, name := range sortedKeys(leads) {
		f.leadIDs = append(f.leadIDs, f.id(name))
		f.leads = append(f.leads, keywordFeature{name: name, words: leads[name]})
		words := make([]string, len(leads[name]))
		for i, w := range leads[name] {
			words[i] = clauseMark + w
		}
		marked = append(marked, keywordFeature{name: name, words: words})
	}
	f.leadIndex = newKeywordIndex(marked)
	pats, err := stringLists(spec, "patterns")
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(pats) {
		res, err := compileAll(pats[name])
		if err != nil {
			return nil, fmt.Errorf("data memgate_config.features.patterns.%s: %w", name, err)
		}
		f.patterns = append(f.patterns, patternFeature{id: f.id(name), res: res})
	}
	f.literals = newPrefilterIndex(f.patterns)
	first, err := stringLists(spec, "first")
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(first) {
		rl := rankedList{name: ast.StringTerm(name)}
		for _, n := range first[name] {
			if i := slices.Index(f.names, n); i >= 0 {
				rl.features = append(rl.features, i)
			}
		}
		f.first = append(f.first, rl)
	}
	if f.captures, err = parseCaptures(spec); err != nil {
		return nil, err
	}
	builtin, ok := stringList(spec["builtin"])
	if !ok {
		return nil, fmt.Errorf("data memgate_config.features.builtin: want a list of strings")
	}
	for _, name := range builtin {
		if !slices.Contains(builtinFeatures, name) {
			return nil, fmt.Errorf("data memgate_config.features.builtin: unknown feature %q (the sidecar computes %s)", name, strings.Join(builtinFeatures, ", "))
		}
		if f.builtin == nil {
			f.builtin = map[string]int{}
		}
		f.builtin[name] = f.id(name)
	}
	if f.contextSources, ok = stringList(spec["context_sources"]); !ok {
		return nil, fmt.Errorf("data memgate_config.features.context_sources: want a list of strings")
	}
	return f, nil
}

// compileAll compiles a list of patterns with their prefilters.
func compileAll(patterns []string) ([]*prefiltered, error) {
	out := make([]*prefiltered, 0, len(patterns))
	for _, p := range patterns {
		re, err := compilePrefiltered(p)
		if err != nil {
			return nil, err
		}
		out = append(out, re)
	}
	return out, nil
}

func parseCaptures(spec map[string]any) ([]captureSpec, error) {
	raw, ok := spec["captures"]
	if !ok {
		return nil, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data memgate_config.features.captures: want an object")
	}
	var out []captureSpec
	for _, name := range sortedKeys(obj) {
		c, ok := obj[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("data memgate_config.features.captures.%s: want {patterns, exclude}", name)
		}
		patterns, ok1 := stringList(c["patterns"])
		exclude, ok2 := stringList(c["exclude"])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("data memgate_config.features.captures.%s: patterns and exclude are lists of strings", name)
		}
		res, err := compileAll(patterns)
		if err != nil {
			return nil, fmt.Errorf("data memgate_config.features.captures.%s: %w", name, err)
		}
		cs := captureSpec{name: ast.StringTerm(name), patterns: res, exclude: map[string]bool{}}
		for _, w := range exclude {
			cs.exclude[w] = true
		}
		out = append(out, cs)
	}
	return out, nil
}

func stringLists(spec map[string]any, key string) (map[string][]string, error) {
	out := map[string][]string{}
	raw, ok := spec[key]
	if !ok {
		return out, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data memgate_config.features.%s: want an object of string lists", key)
	}
	for name, v := range obj {
		list, ok := stringList(v)
		if !ok {
			return nil, fmt.Errorf("data memgate_config.features.%s.%s: want a list of strings", key, name)
		}
		out[name] = list
	}
	return out, nil
}

// stringList reads a JSON list of strings; a missing one (nil) is empty.
func stringList(v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// textFacts are what the sidecar found in a candidate's text, as the
// input's text_features, text_first and text_captures.
type textFacts struct {
	features, first, captures ast.Object
}

var trueTerm = ast.BooleanTerm(true)

// emptyObject is shared by every input with nothing to report: OPA never
// modifies input, and an object costs several allocations.
var emptyObject = ast.NewObject()

func objectOf(items [][2]*ast.Term) ast.Object {
	if len(items) == 0 {
		return emptyObject
	}
	return ast.NewObject(items...)
}

// match returns the facts of a candidate whose normalized text is norm.
func (f *textFeatures) match(rec *memory.Record) textFacts {
	return f.facts(f.scanText(rec))
}

// facts reports what s, a scan by f, found as the input's text fields:
// the features, the first of f's ranked lists and f's captures.
func (f *textFeatures) facts(s *textScan) textFacts {
	var items [][2]*ast.Term
	for i, hit := range s.found {
		if hit {
			items = append(items, [2]*ast.Term{f.nameTerms[i], trueTerm})
		}
	}
	facts := textFacts{features: objectOf(items)}
	items = nil
	for _, rl := range f.first {
		for _, i := range rl.features {
			if s.found[i] {
				items = append(items, [2]*ast.Term{rl.name, f.nameTerms[i]})
				break
			}
		}
	}
	facts.first = objectOf(items)
	items = nil
	for _, cs := range f.captures {
		if c, ok := s.captures[string(cs.name.Value.(ast.String))]; ok {
			items = append(items, [2]*ast.Term{cs.name, c})
		}
	}
	facts.captures = objectOf(items)
	return facts
}

// capture returns the first non-empty submatch of the first pattern that
// has one not excluded.
func (cs captureSpec) capture(norm string) (string, bool) {
	for _, p := range cs.patterns {
		if !p.mayMatch(norm) {
			continue
		}
		for _, m := range p.re.FindAllStringSubmatch(norm, -1) {
			for _, g := range m[1:] {
				if g != "" && !cs.exclude[g] {
					return g, true
				}
			}
		}
	}
	return "", false
}
