package secrets

import (
	"regexp"
	"slices"

	"github.com/zricethezav/gitleaks/v8/config"
)

// gitleaks scans code repositories, where keys published as examples in
// documentation and test fixtures are noise, so its default configuration
// lets some of them through. A memory is not a code repository: an example
// or test key written into it is still a key (and often a working one:
// Stripe's sk_test_ keys are live credentials for a test account), so
// countExampleKeys removes those allowlist entries before the
// configuration is compiled. What stays are the entries for text with no
// key material at all: placeholders ($VAR, ${VAR}, {{ .x }}, %VAR%,
// <...>), runs of one character, true/false/null, paths, and the generic
// rule's filters for identifiers that are not assignments of a key
// (keyboard, key_id, public_key, ...).
//
// Removed:
//   - the global stopwords: the alphabet (a key made of it, like
//     ghp_abcdefghijklmnopqrstuvwxyz0123456789, is format-valid key
//     material) and one UUID;
//   - aws-access-token's `.+EXAMPLE$` (AKIAIOSFODNN7EXAMPLE, AWS's
//     documented example key id);
//   - gcp-api-key's list of specific published AIza keys;
//   - the generic rule's stopwords naming examples and tests ("example",
//     "sample", "demo", "fake", "mock", "testing", "tutorial", "sandbox").
//
// If a gitleaks upgrade moves these entries, TestExampleKeysAreKeys fails.
func countExampleKeys(vc *config.ViperConfig) {
	if vc.AllowList != nil {
		vc.AllowList.StopWords = nil
	}
	for i := range vc.Allowlists {
		vc.Allowlists[i].StopWords = nil
	}
	for i := range vc.Rules {
		vr := &vc.Rules[i]
		if vr.AllowList != nil {
			// The deprecated single-allowlist form: fold it into the list
			// so one loop sees every entry (Translate does the same).
			vr.Allowlists = append(vr.Allowlists, vr.AllowList)
			vr.AllowList = nil
		}
		keyRe, err := regexp.Compile(vr.Regex)
		if vr.Regex == "" || err != nil {
			keyRe = nil
		}
		kept := vr.Allowlists[:0]
		for _, a := range vr.Allowlists {
			a.Regexes = slices.DeleteFunc(a.Regexes, func(re string) bool {
				// A literal pattern that is itself a key the rule matches
				// names a published key, not a placeholder's shape.
				return exampleKeyPatterns[re] ||
					keyRe != nil && regexp.QuoteMeta(re) == re && keyRe.MatchString(re)
			})
			a.StopWords = slices.DeleteFunc(a.StopWords, func(w string) bool { return exampleWords[w] })
			if len(a.Regexes)+len(a.StopWords)+len(a.Paths)+len(a.Commits) > 0 {
				kept = append(kept, a)
			}
		}
		vr.Allowlists = kept
	}
}

// exampleKeyPatterns are allowlist patterns that let a key through because
// it reads as an example.
var exampleKeyPatterns = map[string]bool{
	`.+EXAMPLE$`: true,
}

// exampleWords are the generic rule's stopwords that mark a value as an
// example or a test fixture; the others name identifiers and libraries.
var exampleWords = map[string]bool{
	"example": true, "sample": true, "demo": true, "fake": true, "mock": true,
	"testing": true, "tutorial": true, "sandbox": true, "dummy": true,
}
