package reliteral

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

// The options of the two callers: the policy prefilter (any characters,
// case kept outside (?i)) and the secrets gate (lowercased ASCII, short
// strings).
var (
	prefilterOptions = Options{MaxSet: 64, MaxClass: 8}
	gateOptions      = Options{ASCII: true, MaxSet: 64, MaxLen: 32, MaxClass: 8}
)

// prefilter is what the policy prefilter keeps of a pattern: its Leading
// strings, else its Contained ones, lowered when any is case-folded,
// sorted; none when a match may start with no string.
func prefilter(re *syntax.Regexp) []string {
	re = re.Simplify()
	set, fold, _, ok := Leading(re, prefilterOptions)
	if !ok {
		set, fold, ok = Contained(re, prefilterOptions)
	}
	if !ok {
		return nil
	}
	if fold {
		for i, s := range set {
			set[i] = strings.ToLower(s)
		}
	}
	set = Dedupe(set)
	if slices.Contains(set, "") {
		return nil
	}
	return set
}

func TestSets(t *testing.T) {
	exact := func(o Options) func(*syntax.Regexp) string {
		return func(re *syntax.Regexp) string {
			s, ok := Exact(re, o)
			return fmt.Sprintf("%q %v", s, ok)
		}
	}
	prefix := func(re *syntax.Regexp) string {
		s, ok := Prefix(re, gateOptions)
		return fmt.Sprintf("%q %v", s, ok)
	}
	required := func(re *syntax.Regexp) string { return fmt.Sprintf("%q", Required(re, gateOptions)) }
	leading := func(re *syntax.Regexp) string {
		s, fold, complete, ok := Leading(re.Simplify(), prefilterOptions)
		return fmt.Sprintf("%q fold=%v complete=%v %v", s, fold, complete, ok)
	}
	pre := func(re *syntax.Regexp) string { return fmt.Sprintf("%q", prefilter(re)) }
	for _, tc := range []struct {
		name    string
		f       func(*syntax.Regexp) string
		pattern string
		want    string
	}{
		// The policy prefilter's cases (policy.TestPrefilterLiterals), with
		// its whole literal sets.
		{"prefilter", pre, `AKIA[0-9A-Z]{16}`, `["AKIA"]`},
		{"prefilter", pre, `\bsk-[a-z]+`, `["sk-"]`},
		{"prefilter", pre, `(?i)(password|token)\s*=`, `["password" "token"]`},
		{"prefilter", pre, `(?i)(pass|pwd)word`, `["password" "pwdword"]`},
		{"prefilter", pre, `(密码|口令)是`, `["口令是" "密码是"]`},
		{"prefilter", pre, `[a-z]+@example`, `["@example"]`},
		{"prefilter", pre, `[a-z]+[0-9]*`, `[]`},
		{"prefilter", pre, `a|[0-9]`, `[]`},
		{"prefilter", pre, `([a-z0-9]+) project`, `[" project"]`},
		{"prefilter", pre, `x*(ab)+[0-9]`, `["ab"]`},
		{"prefilter", pre, `[a-z]+(foo|ba)`, `["ba" "foo"]`},
		{"prefilter", pre, `[a-z]+(foo|[0-9])`, `[]`},
		{"prefilter", pre, `(?i)access[ _-]?key`, `["access key" "access-key" "access_key" "accesskey"]`},
		{"prefilter", pre, `gh[pu]_x`, `["ghp_x" "ghu_x"]`},
		{"prefilter", pre, `x?abc`, `["abc" "xabc"]`},
		{"prefilter", pre, `(ab)?[a-z]`, `[]`},
		{"prefilter", pre, `(?i)ſecret`, `["secret"]`},
		// Leading's sets before the prefilter lowers and sorts them.
		{"leading", leading, `\bAKIA[0-9A-Z]{16}`, `["AKIA"] fold=false complete=false true`},
		{"leading", leading, `x?abc`, `["xabc" "abc"] fold=false complete=true true`},
		{"leading", leading, `(ab|cd)(ef|gh)+`, `["ab" "cd"] fold=false complete=false true`},
		{"leading", leading, `(?i)k[0-9]`, `["k"] fold=true complete=false true`},
		{"leading", leading, `(密码|口令)是`, `["密码是" "口令是"] fold=false complete=true true`},
		{"leading", leading, `[a-i]x`, `[] fold=false complete=false false`},
		// Exact sets under both options: the gate's give up on classes
		// over 8 runes, non-ASCII and strings over 32 bytes.
		{"exact", exact(gateOptions), `(?i)key`, `["key"] true`},
		{"exact", exact(gateOptions), `[Kk\x{212A}]`, `[] false`},
		{"exact", exact(gateOptions), `[sſ]`, `[] false`},
		{"exact", exact(gateOptions), `[a-i]`, `[] false`},
		{"exact", exact(gateOptions), `(?i)[a-d]`, `["a" "b" "c" "d"] true`},
		{"exact", exact(gateOptions), `密码`, `[] false`},
		{"exact", exact(gateOptions), `[\x7f]`, `["\x7f"] true`},
		{"exact", exact(gateOptions), `(a|b|)c?`, `["" "a" "ac" "b" "bc" "c"] true`},
		{"exact", exact(gateOptions), `abcdefghijklmnop(qrstuvwxyz0123456|7)`, `[] false`},
		{"exactCase", exact(prefilterOptions), `(?i)Key|ID`, `["key" "id"] true`},
		{"exactCase", exact(prefilterOptions), `密码|口令`, `["密码" "口令"] true`},
		{"exactCase", exact(prefilterOptions), `[Aa]`, `["a"] true`},
		// The secrets gate's prefix sets (its anchors) and required clauses.
		{"prefix", prefix, `(?i)(ghp|gho)_[a-z0-9]{36}`, `["gho_" "ghp_"] true`},
		{"prefix", prefix, `ab[cd]+x`, `["abc" "abd"] true`},
		{"prefix", prefix, `(?:sk|pk)_(?:live|test)_[0-9a-z]{10,}`, `["pk_" "sk_"] true`},
		{"prefix", prefix, `[a-z]+x`, `[] false`},
		{"prefix", prefix, `\bab`, `[] false`},
		{"required", required, `(?i)\b(password|token)\s*[:=]\s*\S+`, `[["password" "token"] [":" "="]]`},
		{"required", required, `AKIA[0-9A-Z]{16}`, `[["akia"]]`},
		{"required", required, `xox[baprs]-[0-9a-zA-Z]{10,48}`, `[["xoxa-" "xoxb-" "xoxp-" "xoxr-" "xoxs-"]]`},
		{"required", required, `(?i)(?:key|secret)[\w.-]{0,20}=[a-f0-9]{32}`, `[["key" "secret"] ["="]]`},
		{"required", required, `(ab|cd[0-9]+ef)`, `[["ab" "cd"]]`},
		{"required", required, `[a-z]+|x`, `[]`},
		{"required", required, `-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY`, `[["-----begin"] ["private key"]]`},
		{"required", required, `abcdefghijklmnopqrstuvwxyz0123456789`, `[["abcdefghijklmnopqrstuvwxyz0123456789"]]`},
	} {
		re, err := syntax.Parse(tc.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := tc.f(re); got != tc.want {
			t.Errorf("%s %s: got %s, want %s", tc.name, tc.pattern, got, tc.want)
		}
	}
}
