package secrets

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
)

// Limits that keep the derived string sets small; past them we keep less
// information, which is always safe.
const (
	maxSetSize   = 64
	maxStringLen = 32
)

// requiredClauses derives from a regular expression a conjunction of
// clauses: every string the expression matches contains, for each clause,
// one of the clause's strings once lowercased by foldLower. Whatever cannot
// be derived is left out, which only weakens the conjunction.
func requiredClauses(expr string) ([][]string, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return pruneClauses(required(re)), nil
}

func required(re *syntax.Regexp) [][]string {
	switch re.Op {
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpLiteral, syntax.OpCharClass:
		if set, ok := exactSet(re); ok {
			return [][]string{set}
		}
	case syntax.OpConcat:
		return requiredConcat(re.Sub)
	case syntax.OpAlternate:
		if set, ok := exactSet(re); ok {
			return [][]string{set}
		}
		// Each branch contributes its most selective clause; the
		// alternation needs one of them.
		var union []string
		for _, sub := range re.Sub {
			best := bestClause(required(sub))
			if best == nil {
				return nil
			}
			union = append(union, best...)
		}
		if u := dedupe(union); len(u) <= maxSetSize {
			return [][]string{u}
		}
	}
	return nil
}

// requiredConcat joins runs of adjacent exact children (whose matches are a
// known finite set of strings) into longer strings, extended by the prefix
// of the child that ends the run.
func requiredConcat(subs []*syntax.Regexp) [][]string {
	var out [][]string
	var run []string
	flush := func(tail []string) {
		if run != nil {
			if c, ok := cross(run, tail); ok && tail != nil {
				run = c
			}
			out = append(out, run)
			run = nil
		}
	}
	for _, sub := range subs {
		if set, ok := exactSet(sub); ok {
			if run == nil {
				run = set
			} else if c, ok := cross(run, set); ok {
				run = c
			} else {
				out = append(out, run)
				run = set
			}
			continue
		}
		prefix, _ := prefixSet(sub)
		flush(prefix)
		out = append(out, required(sub)...)
	}
	flush(nil)
	return pruneClauses(out)
}

// exactSet returns the lowercased strings that re matches, when re only
// matches a small finite set of them (literals, small character classes,
// alternations and concatenations of those).
func exactSet(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		if !isASCII(s) {
			return nil, false
		}
		return []string{strings.ToLower(s)}, true
	case syntax.OpCharClass:
		return classSet(re.Rune)
	case syntax.OpCapture:
		return exactSet(re.Sub[0])
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpQuest:
		s, ok := exactSet(re.Sub[0])
		if !ok || len(s) >= maxSetSize {
			return nil, false
		}
		return dedupe(append(s, "")), true
	case syntax.OpAlternate:
		var union []string
		for _, sub := range re.Sub {
			s, ok := exactSet(sub)
			if !ok {
				return nil, false
			}
			union = append(union, s...)
		}
		union = dedupe(union)
		return union, len(union) <= maxSetSize
	case syntax.OpConcat:
		var acc []string
		for i, sub := range re.Sub {
			s, ok := exactSet(sub)
			if !ok {
				return nil, false
			}
			if i == 0 {
				acc = s
			} else if acc, ok = cross(acc, s); !ok {
				return nil, false
			}
		}
		return acc, acc != nil
	}
	return nil, false
}

// prefixSet returns lowercased strings one of which begins every match of
// re, if known.
func prefixSet(re *syntax.Regexp) ([]string, bool) {
	if s, ok := exactSet(re); ok {
		return s, true
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return prefixSet(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return prefixSet(re.Sub[0])
		}
	case syntax.OpConcat:
		first, ok := exactSet(re.Sub[0])
		if !ok {
			return prefixSet(re.Sub[0])
		}
		if len(re.Sub) > 1 {
			if next, ok := prefixSet(re.Sub[1]); ok {
				if c, ok := cross(first, next); ok {
					return c, true
				}
			}
		}
		return first, true
	case syntax.OpAlternate:
		var union []string
		for _, sub := range re.Sub {
			s, ok := prefixSet(sub)
			if !ok {
				return nil, false
			}
			union = append(union, s...)
		}
		union = dedupe(union)
		return union, len(union) <= maxSetSize
	}
	return nil, false
}

// classSet returns the lowercased characters of a character class whose
// members all fold to a few ASCII characters, as in [Aa] or [=:].
func classSet(ranges []rune) ([]string, bool) {
	var set []string
	n := 0
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		n += int(hi-lo) + 1
		if n > 8 {
			return nil, false
		}
		for r := lo; r <= hi; r++ {
			// The Kelvin sign and long s fold to k and s (foldLower).
			switch r {
			case 0x212A:
				r = 'k'
			case 0x17F:
				r = 's'
			}
			if r >= unicode.MaxASCII {
				return nil, false
			}
			set = append(set, strings.ToLower(string(r)))
		}
	}
	set = dedupe(set)
	return set, len(set) > 0
}

// cross returns every a+b, or false when that would be too many or too long.
func cross(a, b []string) ([]string, bool) {
	if len(a)*len(b) > maxSetSize {
		return nil, false
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if len(x)+len(y) > maxStringLen {
				return nil, false
			}
			out = append(out, x+y)
		}
	}
	return dedupe(out), true
}

// bestClause picks the clause least likely to occur by chance: the one
// whose shortest string is longest.
func bestClause(clauses [][]string) []string {
	var best []string
	bestLen := 0
	for _, c := range clauses {
		if l := minLen(c); l > bestLen || (l == bestLen && len(c) < len(best)) {
			best, bestLen = c, l
		}
	}
	return best
}

// pruneClauses drops clauses that can never narrow anything: empty ones
// and those holding the empty string.
func pruneClauses(clauses [][]string) [][]string {
	return slices.DeleteFunc(clauses, func(c []string) bool {
		return len(c) == 0 || minLen(c) == 0
	})
}

func minLen(set []string) int {
	m := -1
	for _, s := range set {
		if m < 0 || len(s) < m {
			m = len(s)
		}
	}
	return max(m, 0)
}

func dedupe(set []string) []string {
	slices.Sort(set)
	return slices.Compact(set)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
