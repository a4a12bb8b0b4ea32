package secrets

import (
	"slices"
	"strings"
	"testing"
)

// FuzzFindSecrets checks that FindSecrets never panics, is deterministic,
// returns sorted unique ids, and returns only rule ids, never text.
func FuzzFindSecrets(f *testing.F) {
	for _, c := range secretCases {
		f.Add(c.text)
	}
	for _, text := range benignCases[:40] {
		f.Add(text)
	}
	f.Add("")
	f.Add("\xff\xfe password: \u200b\u017fecret=\u212aey")
	s, err := New()
	if err != nil {
		f.Fatal(err)
	}
	known := knownIDs(s)
	f.Fuzz(func(t *testing.T, text string) {
		got := s.FindSecrets(text)
		if again := s.FindSecrets(text); !slices.Equal(got, again) {
			t.Fatalf("not deterministic: %v then %v", got, again)
		}
		if got != nil && len(got) == 0 {
			t.Fatal("empty non-nil result")
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("ids not sorted and unique: %v", got)
		}
		for _, id := range got {
			_, base, _ := strings.Cut(id, ":")
			if !known[id] && !(strings.HasPrefix(id, "decoded-") && known[base]) {
				t.Fatalf("unknown id %q", id)
			}
		}
	})
}

// knownIDs returns every rule id s can report, gitleaks' and ours.
func knownIDs(s *Scanner) map[string]bool {
	known := map[string]bool{}
	for id := range s.leaks.cfg.Rules {
		known[id] = true
	}
	for _, r := range s.ownRules {
		known[r.id] = true
	}
	known[encodedCredential] = true
	return known
}

// FuzzGate checks that the gate and the single-rule detectors give the
// full gitleaks detector's result, on any text.
func FuzzGate(f *testing.F) {
	for _, c := range secretCases {
		f.Add(c.text)
	}
	for _, text := range benignCases[:40] {
		f.Add(text)
	}
	c, err := leakRules()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := gatedAndFull(c, text)
		if !slices.Equal(got, want) {
			t.Fatalf("gated %v, detector %v", got, want)
		}
	})
}
