package secrets

import (
	"regexp/syntax"

	"github.com/memgate/memgate/internal/reliteral"
)

// literalOptions are the gate's choices for the strings it derives from a
// rule: lowercased ASCII, as foldLower leaves the text they are looked for
// in, in sets small and short enough for its trie.
var literalOptions = reliteral.Options{ASCII: true, MaxSet: 64, MaxLen: 32, MaxClass: 8}

// requiredClauses derives from a regular expression a conjunction of
// clauses: every string the expression matches contains, for each clause,
// one of the clause's strings once lowercased by foldLower. Whatever cannot
// be derived is left out, which only weakens the conjunction.
func requiredClauses(expr string) ([][]string, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return reliteral.Required(re, literalOptions), nil
}

// prefixSet returns lowercased strings one of which begins every match of
// re, if known.
func prefixSet(re *syntax.Regexp) ([]string, bool) {
	return reliteral.Prefix(re, literalOptions)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
