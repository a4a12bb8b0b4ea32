package secrets

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/reliteral"
)

// anchor narrows a gitleaks rule further than its required strings. A
// rule's expression is a sequence of parts; if part i always begins with
// one of a few strings (a keyword such as "key" or "password", a prefix
// such as "s." or "ey"), then every match of the rule contains a match of
// parts i..n that starts where one of those strings occurs. Running parts
// i..n anchored at each occurrence is cheap (it fails within a few
// characters on prose) and tells whether the rule can match at all.
//
// Parts that can match unboundedly long text are cut (truncate), so that the
// anchored expression only ever needs a window of the text after the
// occurrence: Go's backtracking matcher costs time in proportion to the
// length of its input, even when it fails at once.
type anchor struct {
	prefixes []string       // lowercased; each occurrence in lower is tried
	ids      []int          // the prefixes' pattern ids in the gate's trie
	re       *regexp.Regexp // \A(?:parts i..n, truncated)
	window   int            // bytes of text the match can span, plus one
}

// maxWholeRepeat is the largest repeat count kept whole; longer repeats
// ({10,150}) are cut after their minimum, as unbounded ones are.
const maxWholeRepeat = 24

// minAnchorLen keeps prefixes that occur on nearly every line (":", "=")
// from being anchors: trying them all would cost more than it saves.
const minAnchorLen = 2

func newAnchor(expr string) (*anchor, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	parts := flatten(re)
	best, bestLen := -1, 0
	var prefixes []string
	for i, p := range parts {
		set, ok := prefixSet(p)
		if !ok {
			continue
		}
		if l := reliteral.MinLen(set); l >= minAnchorLen && l > bestLen {
			best, bestLen, prefixes = i, l, set
		}
	}
	if best < 0 {
		return nil, nil
	}
	rest, _ := truncate(&syntax.Regexp{Op: syntax.OpConcat, Sub: parts[best:]})
	sub, err := regexp.Compile(`\A(?:` + rest.String() + `)`)
	if err != nil {
		return nil, err
	}
	// One byte more than the longest match, so that an assertion at its
	// end (\b, $) sees the same next character as in the whole text.
	return &anchor{prefixes: prefixes, re: sub, window: maxBytes(rest) + 1}, nil
}

// truncate returns an expression that matches a prefix of every match of
// re and can only match bounded text, and whether it is re unchanged.
// Matching a prefix is all a necessary condition needs.
func truncate(re *syntax.Regexp) (*syntax.Regexp, bool) {
	empty := &syntax.Regexp{Op: syntax.OpEmptyMatch}
	switch re.Op {
	case syntax.OpCapture:
		return truncate(re.Sub[0])
	case syntax.OpConcat:
		var subs []*syntax.Regexp
		for _, sub := range re.Sub {
			t, whole := truncate(sub)
			subs = append(subs, t)
			if !whole {
				return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}, false
			}
		}
		return re, true
	case syntax.OpAlternate:
		var subs []*syntax.Regexp
		all := true
		for _, sub := range re.Sub {
			t, whole := truncate(sub)
			subs = append(subs, t)
			all = all && whole
		}
		if all {
			return re, true
		}
		return &syntax.Regexp{Op: syntax.OpAlternate, Sub: subs}, false
	case syntax.OpQuest:
		if _, whole := truncate(re.Sub[0]); whole {
			return re, true
		}
		return empty, false
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		t, whole := truncate(re.Sub[0])
		switch {
		case whole && hi >= 0 && hi <= maxWholeRepeat:
			return re, true
		case lo == 0:
			return empty, false
		case !whole:
			return t, false // a prefix of the first repetition
		}
		// At least lo repetitions come first.
		return &syntax.Regexp{Op: syntax.OpRepeat, Min: lo, Max: lo, Sub: []*syntax.Regexp{t}, Flags: re.Flags}, false
	}
	return re, true
}

// maxBytes returns the most bytes of UTF-8 re can match; re must be
// bounded. A case-folded letter may match a longer character (k matches
// the Kelvin sign), and an invalid byte, which matches as U+FFFD, is one
// byte.
func maxBytes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			w := utf8.RuneLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					w = max(w, utf8.RuneLen(f))
				}
			}
			n += w
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return max(utf8.RuneLen(min(re.Rune[len(re.Rune)-1], unicode.MaxRune)), 1)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxBytes(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += maxBytes(sub)
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, sub := range re.Sub {
			n = max(n, maxBytes(sub))
		}
		return n
	case syntax.OpRepeat:
		return re.Max * maxBytes(re.Sub[0])
	}
	return 0 // assertions and the empty match
}

// flatten returns the sequence of parts of a concatenation, opening
// captures and nested concatenations (a capture does not change what
// matches).
func flatten(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return flatten(re.Sub[0])
	case syntax.OpConcat:
		var out []*syntax.Regexp
		for _, sub := range re.Sub {
			out = append(out, flatten(sub)...)
		}
		return out
	}
	return []*syntax.Regexp{re}
}

// matches reports whether the anchored parts match at an occurrence of a
// prefix. lower must be aligned with text; has tells which of the gate's
// patterns occur in it, so absent prefixes are not searched for.
func (a *anchor) matches(text, lower string, has func(int) bool) bool {
	for k, p := range a.prefixes {
		if !has(a.ids[k]) {
			continue
		}
		for off := 0; ; {
			i := strings.Index(lower[off:], p)
			if i < 0 {
				break
			}
			x := off + i
			if a.re.MatchString(text[x:min(len(text), x+a.window)]) {
				return true
			}
			off = x + 1
		}
	}
	return false
}
