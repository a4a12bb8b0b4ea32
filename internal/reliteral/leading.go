package reliteral

import "regexp/syntax"

// Leading returns strings one of which every match of re starts with
// (after zero-width assertions such as \b), whether any comes from a
// case-folded part (fold), and whether re matches exactly those strings
// (complete), so a following part can extend them; ok is false when re
// has no such set.
//
// Leading is the policy prefilter's take on Prefix, and gives other sets:
// it skips leading assertions, extends a concatenation's strings across
// every following part while they are complete (Prefix: into the next
// part only), does not look into repetitions (x+), and does not cap an
// optional part's set. re is meant to be simplified (Regexp.Simplify).
func Leading(re *syntax.Regexp, o Options) (set []string, fold, complete, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		set, ok := Literal(re, o)
		if !ok {
			return nil, false, false, false
		}
		return set, re.Flags&syntax.FoldCase != 0, true, true
	case syntax.OpCapture:
		return Leading(re.Sub[0], o)
	case syntax.OpCharClass:
		// A small class is an alternation of one-rune literals: in
		// `access[ _-]?key` it keeps "access key" apart from "access the".
		set, ok := Class(re, o)
		if !ok {
			return nil, false, false, false
		}
		return set, re.Flags&syntax.FoldCase != 0, true, true
	case syntax.OpQuest:
		// Either the part or nothing: "" extends to what follows.
		s, f, c, ok := Leading(re.Sub[0], o)
		if !ok {
			return nil, false, false, false
		}
		return append(s, ""), f, c, true
	case syntax.OpConcat:
		return leadingConcat(re.Sub, o)
	case syntax.OpAlternate:
		complete = true
		for _, sub := range re.Sub {
			s, f, c, ok := Leading(sub, o)
			if !ok {
				return nil, false, false, false
			}
			set, fold, complete = append(set, s...), fold || f, complete && c
		}
		set, ok = Bound(set, o)
		return set, fold, complete, ok
	}
	return nil, false, false, false
}

// leadingConcat is Leading of a concatenation: the first part's strings,
// extended by the next part's while the first is complete.
func leadingConcat(subs []*syntax.Regexp, o Options) (set []string, fold, complete, ok bool) {
	for len(subs) > 0 {
		switch subs[0].Op {
		case syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginLine, syntax.OpBeginText:
			subs = subs[1:] // zero width: the string still starts the match
			continue
		}
		break
	}
	if len(subs) == 0 {
		return nil, false, false, false
	}
	set, fold, complete, ok = Leading(subs[0], o)
	if !ok || !complete || len(subs) == 1 {
		return set, fold, complete && len(subs) == 1, ok
	}
	rest, f, c, ok := leadingConcat(subs[1:], o)
	if !ok {
		return set, fold, false, true
	}
	extended, ok := Cross(set, rest, o)
	if !ok {
		return set, fold, false, true
	}
	return extended, fold || f, c, true
}

// Contained returns strings one of which every match of re contains
// somewhere, for expressions such as `([a-z]+) project` that start with a
// class, and whether any comes from a case-folded part; ok is false when
// re has no such set. Of a concatenation's parts it takes the one whose
// shortest string is longest.
func Contained(re *syntax.Regexp, o Options) (set []string, fold, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s, f, _, ok := Leading(re, o) // a literal starts every match of itself
		return s, f, ok
	case syntax.OpCapture, syntax.OpPlus:
		return Contained(re.Sub[0], o)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return Contained(re.Sub[0], o)
		}
	case syntax.OpConcat:
		// Any part's strings will do; the one whose shortest string is
		// longest is the least likely to occur by chance.
		best := -1
		for _, sub := range re.Sub {
			s, f, ok := Contained(sub, o)
			if !ok {
				continue
			}
			if shortest := MinLen(s); shortest > best {
				set, fold, best = s, f, shortest
			}
		}
		return set, fold, best > 0
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, f, ok := Contained(sub, o)
			if !ok {
				return nil, false, false
			}
			set, fold = append(set, s...), fold || f
		}
		set, ok = Bound(set, o)
		return set, fold, ok
	}
	return nil, false, false
}
