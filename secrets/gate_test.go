package secrets

import (
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestRequiredClausesHold generates strings from each gitleaks rule's
// regular expression and checks that every one the expression matches
// satisfies the clauses the gate derived from it: the gate's soundness,
// rule by rule.
func TestRequiredClausesHold(t *testing.T) {
	c, err := leakRules()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for _, id := range c.cfg.OrderedRules {
		r := c.cfg.Rules[id]
		if r.Regex == nil {
			continue
		}
		clauses, err := requiredClauses(r.Regex.String())
		if err != nil {
			t.Fatal(err)
		}
		re, _ := syntax.Parse(r.Regex.String(), syntax.Perl)
		for i := 0; i < 40; i++ {
			var b strings.Builder
			generate(&b, re, rng)
			s := b.String()
			if !r.Regex.MatchString(s) {
				continue
			}
			checked++
			lower, aligned := foldLower(s)
			if a := gateOf(c, id).anchor; a != nil && aligned && !a.matches(s, lower, func(int) bool { return true }) {
				t.Errorf("rule %s: %q matches but its anchor does not", id, s)
			}
			for _, cl := range clauses {
				if !slices.ContainsFunc(cl, func(w string) bool { return strings.Contains(lower, w) }) {
					t.Errorf("rule %s: %q matches but has none of %q", id, s, cl)
				}
			}
		}
	}
	if checked < 2000 {
		t.Errorf("only %d generated strings matched their rule", checked)
	}
}

// generate writes a random string that re is likely to match. Case-folded
// letters are drawn from their whole fold orbit (k, K and the Kelvin sign)
// to exercise foldLower.
func generate(b *strings.Builder, re *syntax.Regexp, rng *rand.Rand) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				orbit := []rune{r}
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					orbit = append(orbit, f)
				}
				r = orbit[rng.IntN(len(orbit))]
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return
		}
		k := rng.IntN(len(re.Rune)/2) * 2
		lo, hi := re.Rune[k], re.Rune[k+1]
		if hi > lo+200 {
			hi = lo + 200
		}
		b.WriteRune(lo + rune(rng.IntN(int(hi-lo)+1)))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte("aZ3 _-."[rng.IntN(7)])
	case syntax.OpCapture:
		generate(b, re.Sub[0], rng)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			generate(b, sub, rng)
		}
	case syntax.OpAlternate:
		generate(b, re.Sub[rng.IntN(len(re.Sub))], rng)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 3
			}
		}
		n := lo + rng.IntN(hi-lo+1)
		for i := 0; i < n; i++ {
			generate(b, re.Sub[0], rng)
		}
	}
}

// gatedAndFull returns the rules the gated scan finds in text and those
// gitleaks' detector alone finds, each sorted: the gate must never make
// them differ.
func gatedAndFull(c *compiledLeaks, text string) (gated, full []string) {
	gated = c.ids(text, nil)
	for _, f := range c.detector.DetectString(text) {
		full = append(full, f.RuleID)
	}
	slices.Sort(gated)
	slices.Sort(full)
	return gated, full
}

// TestGateNeverChangesResults compares gitleaks' findings with and without
// the gate on every test text, its derived forms and random text built
// from rule keywords, secret fragments and punctuation.
func TestGateNeverChangesResults(t *testing.T) {
	c, err := leakRules()
	if err != nil {
		t.Fatal(err)
	}
	var skipped, found int
	check := func(text string) {
		gated, full := gatedAndFull(c, text)
		if !slices.Equal(gated, full) {
			t.Errorf("gate changed the result for %q: %v, want %v", text, gated, full)
		}
		if !c.gate.mayMatch(text) {
			skipped++
		}
		if len(full) > 0 {
			found++
		}
	}
	var corpus []string
	corpus = append(corpus, benignCases...)
	for _, sc := range secretCases {
		corpus = append(corpus, sc.text)
	}
	for _, text := range corpus {
		check(text)
		check(fold(text))
		for _, f := range collapse(text) {
			check(f)
		}
		for _, dec := range decodeInPlace(text) {
			check(dec.text)
		}
	}
	var keywords []string
	for k := range c.cfg.Keywords {
		keywords = append(keywords, k)
	}
	slices.Sort(keywords)
	pieces := []string{" ", "\n", "=", ":", ",", "\"", "'", "_", "-", ".", "/", "ſ", "K", "KEY", "Token", "secret", "密码", "\xff"}
	rng := rand.New(rand.NewPCG(3, 4))
	perRule, random := 10, 10000
	if raceEnabled || testing.Short() {
		perRule, random = 3, 1500
	}
	// Strings generated from each rule, in context.
	for _, id := range c.cfg.OrderedRules {
		r := c.cfg.Rules[id]
		if r.Regex == nil {
			continue
		}
		re, _ := syntax.Parse(r.Regex.String(), syntax.Perl)
		for i := 0; i < perRule; i++ {
			var b strings.Builder
			b.WriteString(benignCases[rng.IntN(len(benignCases))][:rng.IntN(12)])
			generate(&b, re, rng)
			b.WriteString(pieces[rng.IntN(len(pieces))])
			b.WriteString(benignCases[rng.IntN(len(benignCases))])
			check(b.String())
		}
	}
	for i := 0; i < random; i++ {
		var b strings.Builder
		for n := 2 + rng.IntN(12); n > 0; n-- {
			switch rng.IntN(4) {
			case 0:
				b.WriteString(keywords[rng.IntN(len(keywords))])
			case 1:
				b.WriteString(pieces[rng.IntN(len(pieces))])
			case 2:
				sc := secretCases[rng.IntN(len(secretCases))].text
				i := rng.IntN(len(sc))
				b.WriteString(sc[i:min(len(sc), i+1+rng.IntN(60))])
			default:
				for m := rng.IntN(24); m > 0; m-- {
					b.WriteByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"[rng.IntN(64)])
				}
			}
		}
		check(b.String())
	}
	t.Logf("%d texts skipped by the gate, %d with gitleaks findings", skipped, found)
	if skipped == 0 || found == 0 {
		t.Errorf("vacuous: %d skipped, %d found", skipped, found)
	}
}

func gateOf(c *compiledLeaks, id string) gateRule {
	for _, r := range c.gate.rules {
		if r.id == id {
			return r
		}
	}
	return gateRule{}
}
