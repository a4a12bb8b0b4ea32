package secrets

import (
	"slices"
	"sync"
	"testing"
	"unicode"
)

func newScanner(t testing.TB) *Scanner {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantNothing fails for each text in which find finds anything; what names
// such a finding.
func wantNothing(t *testing.T, what string, find func(string) []string, texts []string) {
	t.Helper()
	for _, text := range texts {
		if got := find(text); got != nil {
			t.Errorf("%s %v: %q", what, got, text)
		}
	}
}

func TestFindsSecrets(t *testing.T) {
	s := newScanner(t)
	for _, c := range secretCases {
		got := s.FindSecrets(c.text)
		if len(got) == 0 {
			t.Errorf("not found: %q", c.text)
			continue
		}
		if c.want != "" && !slices.Contains(got, c.want) {
			t.Errorf("%q: got %v, want %s among them", c.text, got, c.want)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("%q: ids not sorted and unique: %v", c.text, got)
		}
	}
}

func TestIgnoresBenignText(t *testing.T) {
	wantNothing(t, "false positive", newScanner(t).FindSecrets, benignCases)
}

func TestCaseCounts(t *testing.T) {
	if len(secretCases) < 60 || len(benignCases) < 120 {
		t.Errorf("have %d secret and %d benign cases, want at least 60 and 120", len(secretCases), len(benignCases))
	}
}

func TestConcurrentUse(t *testing.T) {
	s := newScanner(t)
	want := map[string][]string{}
	texts := append([]string(nil), benignCases...)
	for _, c := range secretCases {
		texts = append(texts, c.text)
	}
	for _, text := range texts {
		want[text] = s.FindSecrets(text)
	}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := range texts {
				text := texts[(i+g*7)%len(texts)]
				if got := s.FindSecrets(text); !slices.Equal(got, want[text]) {
					t.Errorf("concurrent result %v, want %v for %q", got, want[text], text)
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestIsInvisibleFastPath(t *testing.T) {
	for r := rune(0x2070); r < 0xFE00; r++ {
		want := unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
			unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
		if isInvisible(r) != want {
			t.Errorf("isInvisible(%U) = %v, want %v", r, !want, want)
		}
	}
	for _, r := range []rune{0xAD, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x202A, 0x202E, 0x2066, 0x2069, 0xFE0F, 0xE0100, 0x034F} {
		if !isInvisible(r) {
			t.Errorf("isInvisible(%U) = false", r)
		}
	}
}
