package secrets

import (
	"slices"
	"strings"
)

// Scanner finds credentials in text. It is safe for concurrent use.
type Scanner struct {
	leaks    *compiledLeaks
	ownRules []rule
}

// New returns a Scanner with gitleaks' default rules and this package's own.
// The first call in a process compiles gitleaks' rules (about 100 ms and
// 22 MB of heap); later calls share them.
func New() (*Scanner, error) {
	c, err := leakRules()
	if err != nil {
		return nil, err
	}
	return &Scanner{leaks: c, ownRules: ownRules}, nil
}

// paragraphBreak separates the units the derived forms are built from;
// memory.ScanRecord joins a record's fields with it.
const paragraphBreak = "\n\n"

// FindSecrets returns the sorted, deduplicated ids of the rules that match
// text, or nil when none does. It never returns any part of the text.
//
// Besides the text as written it scans derived forms: the folded form
// (NFKC, invisible characters removed), the text and the folded form with
// spaced-out keys joined, and both with base64 and hex tokens decoded in
// place. A rule that matches only after decoding is reported as
// "decoded-base64:<rule>" or "decoded-hex:<rule>". Derived forms are built
// paragraph by paragraph, and only the paragraphs a form changes are
// scanned again: in a long text a zero-width space or a full-width comma
// in one paragraph does not cost a second scan of all of it.
func (s *Scanner) FindSecrets(text string) []string {
	found := s.scan(text, nil)
	var folded, joined []string
	decoded := map[string][]string{}
	for _, para := range strings.Split(text, paragraphBreak) {
		forms := []string{para}
		if f := fold(para); f != para {
			folded = append(folded, f)
			forms = append(forms, f)
		}
		for _, form := range forms {
			joined = append(joined, collapse(form)...)
			for _, d := range decodeInPlace(form) {
				decoded[d.prefix] = append(decoded[d.prefix], d.text)
			}
		}
	}
	for _, texts := range [][]string{folded, joined} {
		if len(texts) > 0 {
			found = s.scan(strings.Join(texts, paragraphBreak), found)
		}
	}
	ids := found
	if hasEncodedCredential(text) {
		ids = append(ids, encodedCredential)
	}
	for _, prefix := range []string{decodedBase64, decodedHex} {
		if texts := decoded[prefix]; len(texts) > 0 {
			for _, id := range s.scan(strings.Join(texts, paragraphBreak), nil) {
				// A rule that also matches without decoding matched
				// something outside the decoded tokens.
				if !slices.Contains(found, id) {
					ids = append(ids, prefix+id)
				}
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// scan appends to ids the ids of the rules, gitleaks' and ours, that match
// text as it is.
func (s *Scanner) scan(text string, ids []string) []string {
	ids = s.leaks.ids(text, ids)
	lower := asciiLower(text)
	for i := range s.ownRules {
		ids = s.ownRules[i].appendMatch(text, lower, ids)
	}
	return ids
}
