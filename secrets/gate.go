package secrets

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/zricethezav/gitleaks/v8/config"
)

// leakGate decides, cheaply, which gitleaks rules cannot match a text, so
// that they need not run (compiledLeaks.ids runs the others alone). It
// only rules one out when that is provably so, so it never changes a
// result, only skips work (TestGateNeverChangesResults and FuzzGate check
// this).
//
// A gitleaks rule runs only if one of its keywords occurs in the
// lowercased text, and can match only if its regular expression can. For
// each rule we derive from the expression's syntax tree a conjunction of
// clauses, each a set of strings of which every match contains at least
// one (gate_required.go), and an anchored check at the occurrences of the
// strings a part of every match begins with (gate_anchor.go). Keywords and
// clause strings go into one Aho-Corasick trie: one pass over the text
// marks which strings occur, then each rule is a few bit tests, and the
// anchored check for the few rules left. The detector itself checks only
// keywords, and common short keywords ("ey", "key", "api", "sk", "s.")
// occur in most prose.
type leakGate struct {
	trie     *ahocorasick.Trie
	patterns int
	rules    []gateRule
}

type gateRule struct {
	id       string
	always   bool    // cannot be narrowed: the full detector must run
	keywords []int   // pattern ids; if non-empty one must occur
	clauses  [][]int // pattern ids; each clause needs one to occur
	anchor   *anchor // if set, must match somewhere (see gate_anchor.go)
}

func newLeakGate(cfg config.Config) (*leakGate, error) {
	ids := map[string]int{}
	var patterns []string
	intern := func(s string) int {
		if id, ok := ids[s]; ok {
			return id
		}
		ids[s] = len(patterns)
		patterns = append(patterns, s)
		return len(patterns) - 1
	}
	g := &leakGate{}
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		gr := gateRule{id: id}
		switch {
		case r.Path != nil && !r.Path.MatchString(""):
			// We scan text without a file path, so a rule that needs
			// its path to match never fires.
			continue
		case r.Regex == nil:
			gr.always = true
		default:
			clauses, err := requiredClauses(r.Regex.String())
			if err != nil {
				return nil, fmt.Errorf("secrets: analyse gitleaks rule %s: %w", id, err)
			}
			for _, c := range clauses {
				var ci []int
				for _, s := range c {
					ci = append(ci, intern(s))
				}
				gr.clauses = append(gr.clauses, ci)
			}
			for _, k := range r.Keywords {
				gr.keywords = append(gr.keywords, intern(strings.ToLower(k)))
			}
			if gr.anchor, err = newAnchor(r.Regex.String()); err != nil {
				return nil, fmt.Errorf("secrets: analyse gitleaks rule %s: %w", id, err)
			}
			if gr.anchor != nil {
				for _, p := range gr.anchor.prefixes {
					gr.anchor.ids = append(gr.anchor.ids, intern(p))
				}
			}
		}
		g.rules = append(g.rules, gr)
	}
	g.patterns = len(patterns)
	g.trie = ahocorasick.NewTrieBuilder().AddStrings(patterns).Build()
	return g, nil
}

// mayMatch reports whether some gitleaks rule might match text.
func (g *leakGate) mayMatch(text string) bool {
	lower, aligned := foldLower(text)
	rules, all := g.candidates(text, lower, aligned, nil)
	return all || len(rules) > 0
}

// candidates appends to rules the indices of the rules that might match
// text, given lower, aligned := foldLower(text); all reports a rule the
// gate cannot narrow, which might match any text.
func (g *leakGate) candidates(text, lower string, aligned bool, rules []int) (_ []int, all bool) {
	var buf [16]uint64
	seen := buf[:]
	if n := (g.patterns + 63) / 64; n > len(buf) {
		seen = make([]uint64, n)
	}
	g.trie.Walk([]byte(lower), func(_, _, p int64) bool {
		seen[p/64] |= 1 << (p % 64)
		return true
	})
	has := func(p int) bool { return seen[p/64]&(1<<(p%64)) != 0 }
	hasAny := func(ps []int) bool {
		for _, p := range ps {
			if has(p) {
				return true
			}
		}
		return false
	}
	for i, r := range g.rules {
		if r.always {
			return rules, true
		}
		if len(r.keywords) > 0 && !hasAny(r.keywords) {
			continue
		}
		ok := true
		for _, c := range r.clauses {
			if !hasAny(c) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		// The anchor needs offsets into lower to be offsets into text.
		if r.anchor != nil && aligned && !r.anchor.matches(text, lower, has) {
			continue
		}
		rules = append(rules, i)
	}
	return rules, false
}

// foldLower lowercases text so that every string a case-insensitive
// ASCII literal can match becomes that literal in lowercase: like
// strings.ToLower, and also mapping the long s (U+017F), which (?i)s
// matches, to s. aligned reports whether every character kept its length,
// so that offsets into lower are offsets into text; invalid UTF-8 bytes
// are kept as they are.
func foldLower(text string) (lower string, aligned bool) {
	if isASCII(text) {
		return strings.ToLower(text), true
	}
	b := make([]byte, 0, len(text))
	aligned = true
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, text[i])
			i++
			continue
		}
		l := unicode.ToLower(r)
		if r == 'ſ' {
			l = 's'
		}
		b = utf8.AppendRune(b, l)
		aligned = aligned && utf8.RuneLen(l) == n
		i += n
	}
	return string(b), aligned
}
