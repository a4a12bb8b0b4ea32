package policy

import (
	"encoding/json"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/reliteral"
	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/util"
)

// prefiltered is a regular expression with a cheap necessary condition:
// when every match must start with one of a few literals, a text holding
// none of them is skipped without running the regexp. Secret patterns
// such as `(?i)(password|token|...)\s*[:=]...` cost microseconds per text
// in RE2; the substring checks cost tens of nanoseconds.
type prefiltered struct {
	re *regexp.Regexp
	// literals, lowercased; a match contains one of them (case-insensitively
	// when fold). None means the regexp always runs.
	literals []string
	fold     bool
}

func compilePrefiltered(pattern string) (*prefiltered, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	p := &prefiltered{re: re}
	if parsed, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		simple := parsed.Simplify()
		if lits, fold, _, ok := reliteral.Leading(simple, literalOptions); ok {
			p.literals, p.fold = lits, fold
		} else if lits, fold, ok := reliteral.Contained(simple, literalOptions); ok {
			p.literals, p.fold = lits, fold
		}
	}
	if p.fold {
		// Texts are lowered for the check, so every literal must be too,
		// also those from case-sensitive parts of the pattern.
		for i, l := range p.literals {
			p.literals[i] = foldForPrefilter(l)
		}
	}
	p.literals = slices.Compact(slices.Sorted(slices.Values(p.literals)))
	if slices.Contains(p.literals, "") {
		p.literals = nil // some match starts with no literal: always run
	}
	return p, nil
}

// mayMatch reports whether s passes the prefilter, so a match is possible.
// The pattern features test many patterns at once (prefilterIndex); this
// tests one, for the captures.
func (p *prefiltered) mayMatch(s string) bool {
	if len(p.literals) == 0 {
		return true
	}
	if p.fold {
		s = foldForPrefilter(s)
	}
	for _, lit := range p.literals {
		if strings.Contains(s, lit) {
			return true
		}
	}
	return false
}

// literalOptions are the prefilter's choices for its literals: any
// characters, in their case unless case-folded (compilePrefiltered lowers
// them all when some are), at most 64 from alternations and
// concatenations, character classes of up to 8 runes expanded.
var literalOptions = reliteral.Options{MaxSet: 64, MaxClass: 8}

// foldForPrefilter lowercases s as far as RE2's case folding can reach an
// ASCII letter: strings.ToLower, plus the long s (ſ), which folds to s.
func foldForPrefilter(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "ſ", "s")
}

// prefilterIndex tests the prefilters of many patterns at once: the
// literals of every pattern go into one keyword index over the lowered
// text, so a text is scanned once, not once per literal (eleven secret
// patterns hold 40 literals). Case-sensitive literals are lowered too,
// which only lets a few more texts through to the regexp.
type prefilterIndex struct {
	index *keywordIndex
	lists int
}

// newPrefilterIndex numbers the patterns' literal lists and records each
// one's number in lits.
func newPrefilterIndex(patterns []patternFeature) *prefilterIndex {
	var lists []keywordFeature
	for i := range patterns {
		pf := &patterns[i]
		pf.lits = make([]int, len(pf.res))
		for j, re := range pf.res {
			pf.lits[j] = -1
			if len(re.literals) == 0 {
				continue
			}
			words := make([]string, len(re.literals))
			for k, l := range re.literals {
				words[k] = foldForPrefilter(l)
			}
			pf.lits[j] = len(lists)
			lists = append(lists, keywordFeature{words: words})
		}
	}
	return &prefilterIndex{index: newKeywordIndex(lists), lists: len(lists)}
}

// matchPatterns sets found[id] for every pattern feature with a regexp
// matching the summary, the evidence excerpt, the value or one of the
// candidate's other texts (more).
func (f *textFeatures) matchPatterns(rec *memory.Record, more []string, found []bool) {
	var rbuf [8]string
	raws := append(rbuf[:0], rec.Summary, rec.Evidence.Excerpt, valueText(rec.Value))
	raws = append(raws, more...)
	var buf [64]bool
	lits := buf[:0]
	if f.literals.lists <= len(buf) {
		lits = buf[:f.literals.lists]
	} else {
		lits = make([]bool, f.literals.lists)
	}
	for _, raw := range raws {
		if raw != "" {
			f.literals.index.match(foldForPrefilter(raw), lits)
		}
	}
	for _, pf := range f.patterns {
		if found[pf.id] {
			continue
		}
		for j, re := range pf.res {
			if pf.lits[j] >= 0 && !lits[pf.lits[j]] {
				continue
			}
			if matchesAny(re.re, raws) {
				found[pf.id] = true
				break
			}
		}
	}
}

// valueText is the text a value's patterns are matched against, as
// features.rego defines it: json.marshal(input.candidate.value), "" for
// none or null. OPA marshals with encoding/json, so keys come sorted and
// <, > and & escaped (\u003c): the raw bytes the writer sent would match
// differently.
func valueText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := util.UnmarshalJSON(raw, &v); err != nil || v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// matchesAny reports whether re matches one of texts; an empty text is
// matched too, as the Rego definition matches every raw text.
func matchesAny(re *regexp.Regexp, texts []string) bool {
	for _, s := range texts {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
