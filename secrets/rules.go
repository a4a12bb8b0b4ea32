package secrets

import (
	"regexp"
	"strings"
)

// rule is one of this package's own detection rules: formats and phrasings
// that gitleaks' default rules miss (see doc.go).
type rule struct {
	id string
	// keywords, lowercase: the rule runs only if one occurs in the
	// asciiLower'd text. Each match of re contains one of them.
	keywords []string
	re       *regexp.Regexp
	// valid, if set, decides whether a match (as submatch indices into
	// text) is a credential; otherwise every match is.
	valid func(text string, m []int) bool
	// onLower: re is written in lowercase and matched against the
	// asciiLower'd text, for speed: a case-insensitive expression has no
	// literal prefix for Go's matcher to search for, a lowercase one does.
	onLower bool
	// anchors, if set, returns the offsets in the lowered text at which a
	// match may start; re then begins with \A, matches lowercase text and
	// runs at each anchor on at most maxSpan bytes. Anchoring keeps rules
	// that begin with a long alternation of keywords from costing a
	// regular-expression pass over the whole text (10 ms for 16 KB).
	anchors func(lower string) []int
}

// maxSpan bounds an anchored match; a longer value is cut, which does not
// change whether it looks like a credential.
const maxSpan = 160

func (r *rule) appendMatch(text, lower string, ids []string) []string {
	if !containsAny(lower, r.keywords) {
		return ids
	}
	if r.anchors != nil {
		for _, at := range r.anchors(lower) {
			end := min(len(lower), at+maxSpan)
			m := r.re.FindStringSubmatchIndex(lower[at:end])
			if m != nil && (r.valid == nil || r.valid(text[at:end], m)) {
				return append(ids, r.id)
			}
		}
		return ids
	}
	subject := text
	if r.onLower {
		subject = lower
	}
	if r.valid == nil {
		if r.re.MatchString(subject) {
			ids = append(ids, r.id)
		}
		return ids
	}
	for _, m := range r.re.FindAllStringSubmatchIndex(subject, -1) {
		if r.valid(text, m) {
			return append(ids, r.id)
		}
	}
	return ids
}

// asciiLower lowercases ASCII letters only, so that offsets into the
// result are offsets into text.
func asciiLower(text string) string {
	i := 0
	for i < len(text) && !(text[i] >= 'A' && text[i] <= 'Z') {
		i++
	}
	if i == len(text) {
		return text
	}
	b := []byte(text)
	for ; i < len(b); i++ {
		if b[i] >= 'A' && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// group returns submatch n of m in text, or "".
func group(text string, m []int, n int) string {
	if 2*n+1 >= len(m) || m[2*n] < 0 {
		return ""
	}
	return text[m[2*n]:m[2*n+1]]
}

// ownRules are checked on every form of the text, after gitleaks' rules.
var ownRules = []rule{
	passwordAssignment,
	passwordAssignmentZH,
	passwordInline,
	credentialPair,
	userThenPassword,
	keyInline,
	passwordClause,
	passwordClauseZH,
	credentialURL,
	basicAuthHeader,
	cliPassword,
	{
		// gitleaks requires the T3BlbkFJ marker that not every OpenAI
		// project, service-account or admin key shows.
		id:       "openai-project-key",
		keywords: []string{"sk-"},
		re:       regexp.MustCompile(`\bsk-(?:proj|svcacct|admin)-([A-Za-z0-9_-]{40,})`),
		valid:    randomLooking(1),
	},
	{
		// Keys of the sk-<random> form used by OpenAI before projects and
		// by many compatible APIs.
		id:       "sk-prefixed-key",
		keywords: []string{"sk-"},
		re:       regexp.MustCompile(`\bsk-([A-Za-z0-9]{32,})\b`),
		valid:    randomLooking(1),
	},
	{
		// gitleaks wants exactly 93 characters then "AA"; this also takes
		// other lengths and key kinds.
		id:       "anthropic-key",
		keywords: []string{"sk-ant-"},
		re:       regexp.MustCompile(`\bsk-ant-[a-z]{2,8}\d{2}-([A-Za-z0-9_-]{40,})`),
		valid:    randomLooking(1),
	},
	{
		// An access key id followed closely by a 40-character secret:
		// gitleaks reports the id but has no rule for the secret.
		id:       "aws-secret-access-key",
		keywords: []string{"akia", "asia"},
		re:       regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z2-7]{16}\b[\s\S]{0,120}?(?:^|[^A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
		valid:    randomLooking(1),
	},
	{
		id:       "aws-secret-access-key",
		keywords: []string{"aws"},
		onLower:  true,
		re:       regexp.MustCompile(`aws[^\n]{0,30}?secret[^\n]{0,30}?(?:^|[^a-z0-9/+])([a-z0-9/+]{40})(?:[^a-z0-9/+=]|$)`),
		valid:    randomLooking(1),
	},
	{
		id:       "aws-secret-access-key",
		keywords: []string{"secret"},
		onLower:  true,
		re:       regexp.MustCompile(`secret[ _.-]?access[ _.-]?key[^\n]{0,30}?(?:^|[^a-z0-9/+])([a-z0-9/+]{40})(?:[^a-z0-9/+=]|$)`),
		valid:    randomLooking(1),
	},
	{
		// Storage account and Service Bus connection strings.
		id:       "azure-connection-string-key",
		keywords: []string{"accountkey", "sharedaccesskey"},
		onLower:  true,
		re:       regexp.MustCompile(`\b(?:accountkey|sharedaccesskey)[ \t]*=[ \t]*([a-z0-9+/]{30,}={0,2})`),
		valid:    randomLooking(1),
	},
	{
		// The start of a PEM private key with key material after it:
		// gitleaks needs the END line too, which a memory may have cut.
		id:       "private-key-block",
		keywords: []string{"private key"},
		re:       regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nr])*[A-Za-z0-9+/=]{32,}`),
	},
	{
		id:       "bearer-token",
		keywords: []string{"bearer"},
		onLower:  true,
		re:       regexp.MustCompile(`\bbearer[ \t]+([a-z0-9._~+/-]{20,}=*)`),
		valid:    randomLooking(1),
	},
	prefixedKey,
	{
		// Tencent Cloud SecretId.
		id:       "tencent-cloud-secret-id",
		keywords: []string{"akid"},
		re:       regexp.MustCompile(`\b(AKID[A-Za-z0-9]{32})\b`),
		valid:    randomLooking(1),
	},
}

// cutKeyPrefixes begin keys and occur in nothing else: each ends in '_'
// or '-', so an identifier (npm_config_cache) does not read as one.
var cutKeyPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "glptt-", "gldt-",
	"sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_", "whsec_",
	"xoxb-", "xoxp-", "xoxa-", "xoxe-", "xapp-", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-ant-",
	"shpat_", "dop_v1_",
}

// prefixedKey finds key material after a vendor's key prefix, whether or
// not it has the full format: a key cut in two (its halves in two fields
// or two messages) leaves a prefixed piece too short for gitleaks' rule,
// and some keys (Stripe's publishable pk_test_/pk_live_) have no gitleaks
// rule. Twelve random-looking characters are key material; a placeholder
// (sk_test_xxxxxxxx, ghp_YOUR_TOKEN) has none.
var prefixedKey = func() rule {
	var kw, alt []string
	for _, p := range cutKeyPrefixes {
		kw = append(kw, strings.ToLower(p))
		alt = append(alt, regexp.QuoteMeta(p))
	}
	return rule{
		id:       "prefixed-key",
		keywords: kw,
		re:       regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(?:` + strings.Join(alt, "|") + `)([A-Za-z0-9]{12,})`),
		valid:    randomLooking(1),
	}
}()

// randomLooking returns a validator accepting a match whose submatch n has
// a letter and a digit, and not only hex digits of one case: random
// keys, not words, version strings or checksums.
func randomLooking(n int) func(string, []int) bool {
	return func(text string, m []int) bool {
		s := group(text, m, n)
		var lower, upper, digit, nonHex bool
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c >= '0' && c <= '9':
				digit = true
			case c >= 'a' && c <= 'z':
				lower = true
				nonHex = nonHex || c > 'f'
			case c >= 'A' && c <= 'Z':
				upper = true
				nonHex = nonHex || c > 'F'
			}
		}
		return digit && (lower || upper) && (nonHex || lower && upper)
	}
}
