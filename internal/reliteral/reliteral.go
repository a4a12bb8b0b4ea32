// Package reliteral derives from a regular expression (regexp/syntax)
// strings its matches must begin with or contain, as necessary conditions
// cheap enough to test before running the expression: the secrets gate's
// required clauses and anchors and the policy's prefilter literals.
//
// Every function leaves out what it cannot derive within the Options'
// limits, which only weakens the condition.
package reliteral

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
)

// Options are the choices of a caller: which strings a set may hold and
// how large it may grow.
type Options struct {
	// ASCII makes every string lowercased ASCII: literals and classes
	// holding other characters (or DEL) are not expanded, and sets are
	// deduplicated.
	// Otherwise strings keep their case, except in case-folded parts
	// ((?i)), which are lowercased, and sets are lists in the expression's
	// order, which may repeat a string.
	ASCII bool
	// MaxSet bounds the strings in a set.
	MaxSet int
	// MaxLen bounds the bytes of a string; 0 for no bound.
	MaxLen int
	// MaxClass bounds the characters of a class expanded into one-rune
	// strings.
	MaxClass int
}

// Literal returns the string of an OpLiteral as a one-string set.
func Literal(re *syntax.Regexp, o Options) ([]string, bool) {
	s := string(re.Rune)
	switch {
	case s == "":
		return nil, false // the parser makes none: an empty match is OpEmptyMatch
	case o.ASCII:
		if !isASCII(s) {
			return nil, false
		}
		s = strings.ToLower(s)
	case re.Flags&syntax.FoldCase != 0:
		s = strings.ToLower(s)
	}
	return []string{s}, true
}

// Class returns the characters of an OpCharClass of at most MaxClass
// characters (counted before lowercasing), as one-rune strings: a small class
// is an alternation of one-rune literals, as in [Aa], [=:] or [ _-].
func Class(re *syntax.Regexp, o Options) ([]string, bool) {
	n := 0
	for i := 0; i+1 < len(re.Rune); i += 2 {
		n += int(re.Rune[i+1]-re.Rune[i]) + 1
		if n > o.MaxClass {
			return nil, false
		}
	}
	fold := re.Flags&syntax.FoldCase != 0
	set := make([]string, 0, n)
	for i := 0; i+1 < len(re.Rune); i += 2 {
		for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
			if o.ASCII && r >= unicode.MaxASCII {
				// Also the Kelvin sign and the long s, though the
				// gate's text has them as k and s: its class expansion
				// mapped them by setting the loop variable back to k
				// or s, so the loop always went on to DEL and gave up.
				// Expanding them would be sound but change outputs.
				return nil, false
			}
			s := string(r)
			if o.ASCII || fold {
				s = strings.ToLower(s)
			}
			set = append(set, s)
		}
	}
	set = o.norm(set)
	return set, len(set) > 0
}

// Cross returns every a+b, or false when that would be more than MaxSet
// strings or one longer than MaxLen.
func Cross(a, b []string, o Options) ([]string, bool) {
	if len(a)*len(b) > o.MaxSet {
		return nil, false
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if o.MaxLen > 0 && len(x)+len(y) > o.MaxLen {
				return nil, false
			}
			out = append(out, x+y)
		}
	}
	return o.norm(out), true
}

// Bound returns set (deduplicated under ASCII) and whether it holds at
// most MaxSet strings: the union of an alternation's sets.
func Bound(set []string, o Options) ([]string, bool) {
	set = o.norm(set)
	return set, len(set) <= o.MaxSet
}

func (o Options) norm(set []string) []string {
	if o.ASCII {
		return Dedupe(set)
	}
	return set
}

// Exact returns the strings re matches, when it only matches a small
// finite set of them (literals, small character classes, alternations and
// concatenations of those, optional parts, the empty match).
func Exact(re *syntax.Regexp, o Options) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return Literal(re, o)
	case syntax.OpCharClass:
		return Class(re, o)
	case syntax.OpCapture:
		return Exact(re.Sub[0], o)
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpQuest:
		s, ok := Exact(re.Sub[0], o)
		if !ok || len(s) >= o.MaxSet {
			return nil, false
		}
		return o.norm(append(s, "")), true
	case syntax.OpAlternate:
		return union(re.Sub, o, Exact)
	case syntax.OpConcat:
		var acc []string
		for i, sub := range re.Sub {
			s, ok := Exact(sub, o)
			if !ok {
				return nil, false
			}
			if i == 0 {
				acc = s
			} else if acc, ok = Cross(acc, s, o); !ok {
				return nil, false
			}
		}
		return acc, acc != nil
	}
	return nil, false
}

// Prefix returns strings one of which begins every match of re, if known:
// its Exact set, or that of its first part extended by the next part's
// Prefix.
func Prefix(re *syntax.Regexp, o Options) ([]string, bool) {
	if s, ok := Exact(re, o); ok {
		return s, true
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return Prefix(re.Sub[0], o)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return Prefix(re.Sub[0], o)
		}
	case syntax.OpConcat:
		first, ok := Exact(re.Sub[0], o)
		if !ok {
			return Prefix(re.Sub[0], o)
		}
		if len(re.Sub) > 1 {
			if next, ok := Prefix(re.Sub[1], o); ok {
				if c, ok := Cross(first, next, o); ok {
					return c, true
				}
			}
		}
		return first, true
	case syntax.OpAlternate:
		return union(re.Sub, o, Prefix)
	}
	return nil, false
}

// union is the bounded union of each alternative's set by set (Exact or
// Prefix); unknown if any alternative's is.
func union(alts []*syntax.Regexp, o Options, set func(*syntax.Regexp, Options) ([]string, bool)) ([]string, bool) {
	var all []string
	for _, sub := range alts {
		s, ok := set(sub, o)
		if !ok {
			return nil, false
		}
		all = append(all, s...)
	}
	return Bound(all, o)
}

// Required returns a conjunction of clauses: every string re matches
// contains, for each clause, one of the clause's strings. Clauses that
// cannot narrow anything (empty, or holding "") are left out.
func Required(re *syntax.Regexp, o Options) [][]string {
	return pruneClauses(required(re, o))
}

func required(re *syntax.Regexp, o Options) [][]string {
	switch re.Op {
	case syntax.OpCapture:
		return required(re.Sub[0], o)
	case syntax.OpPlus:
		return required(re.Sub[0], o)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0], o)
		}
	case syntax.OpLiteral, syntax.OpCharClass:
		if set, ok := Exact(re, o); ok {
			return [][]string{set}
		}
	case syntax.OpConcat:
		return requiredConcat(re.Sub, o)
	case syntax.OpAlternate:
		if set, ok := Exact(re, o); ok {
			return [][]string{set}
		}
		// Each branch contributes its most selective clause; the
		// alternation needs one of them.
		var union []string
		for _, sub := range re.Sub {
			best := bestClause(required(sub, o))
			if best == nil {
				return nil
			}
			union = append(union, best...)
		}
		if u, ok := Bound(union, o); ok {
			return [][]string{u}
		}
	}
	return nil
}

// requiredConcat joins runs of adjacent exact children (whose matches are a
// known finite set of strings) into longer strings, extended by the prefix
// of the child that ends the run.
func requiredConcat(subs []*syntax.Regexp, o Options) [][]string {
	var out [][]string
	var run []string
	flush := func(tail []string) {
		if run != nil {
			if c, ok := Cross(run, tail, o); ok && tail != nil {
				run = c
			}
			out = append(out, run)
			run = nil
		}
	}
	for _, sub := range subs {
		if set, ok := Exact(sub, o); ok {
			if run == nil {
				run = set
			} else if c, ok := Cross(run, set, o); ok {
				run = c
			} else {
				out = append(out, run)
				run = set
			}
			continue
		}
		prefix, _ := Prefix(sub, o)
		flush(prefix)
		out = append(out, required(sub, o)...)
	}
	flush(nil)
	return pruneClauses(out)
}

// bestClause picks the clause least likely to occur by chance: the one
// whose shortest string is longest.
func bestClause(clauses [][]string) []string {
	var best []string
	bestLen := 0
	for _, c := range clauses {
		if l := MinLen(c); l > bestLen || (l == bestLen && len(c) < len(best)) {
			best, bestLen = c, l
		}
	}
	return best
}

func pruneClauses(clauses [][]string) [][]string {
	return slices.DeleteFunc(clauses, func(c []string) bool {
		return len(c) == 0 || MinLen(c) == 0
	})
}

// MinLen returns the length of the shortest string of set, 0 for none.
func MinLen(set []string) int {
	m := -1
	for _, s := range set {
		if m < 0 || len(s) < m {
			m = len(s)
		}
	}
	return max(m, 0)
}

// Dedupe sorts set and drops repeated strings.
func Dedupe(set []string) []string {
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
