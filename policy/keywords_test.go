package policy

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveMatch is the definition keywordIndex must agree with.
func naiveMatch(lists []keywordFeature, text string) []bool {
	found := make([]bool, len(lists))
	for i, kf := range lists {
		for _, w := range kf.words {
			if strings.Contains(text, w) {
				found[i] = true
			}
		}
	}
	return found
}

func TestKeywordIndexMatchesContains(t *testing.T) {
	lists := []keywordFeature{
		{name: "a", words: []string{" auto publish", " auto post", "自动发布"}},
		{name: "b", words: []string{"x", " no "}},
		{name: "c", words: []string{"吗", "ab"}},
		{name: "empty", words: nil},
		{name: "blank", words: []string{""}},
	}
	x := newKeywordIndex(lists)
	for _, text := range []string{
		" ", " auto publish is off ", " auto pos ", " 项目alpha禁止自动发布 ", " 好吗 ", " xyz ", " no ", " know ",
		" ab ", "a", "", " auto post auto publish ", "自动发",
	} {
		got := make([]bool, len(lists))
		x.match(text, got)
		if want := naiveMatch(lists, text); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", text, got, want)
		}
	}
}

// TestKeywordIndexRandom compares the index with strings.Contains over
// random keywords and texts drawn from a small alphabet, so overlaps,
// shared prefixes and multi-byte runes are frequent.
func TestKeywordIndexRandom(t *testing.T) {
	alphabet := []string{"a", "b", " ", "自", "动", "ab", "\xff"}
	r := rand.New(rand.NewPCG(1, 2))
	word := func(max int) string {
		var b strings.Builder
		for range r.IntN(max) + 1 {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 200 {
		lists := make([]keywordFeature, r.IntN(5)+1)
		for i := range lists {
			for range r.IntN(6) {
				lists[i].words = append(lists[i].words, word(4))
			}
		}
		x := newKeywordIndex(lists)
		for range 50 {
			text := word(20)
			got := make([]bool, len(lists))
			x.match(text, got)
			if want := naiveMatch(lists, text); !slices.Equal(got, want) {
				t.Fatalf("lists %q, text %q: got %v, want %v", lists, text, got, want)
			}
		}
	}
}

// BenchmarkKeywordIndex matches the default policy's keyword lists
// against the corpus texts, normalized.
func BenchmarkKeywordIndex(b *testing.B) {
	f := compileDefault(b).features
	var texts []string
	for _, text := range corpusTexts(b) {
		texts = append(texts, normalizeText(text))
	}
	found := make([]bool, len(f.keywords))
	i := 0
	for b.Loop() {
		clear(found)
		f.index.match(texts[i%len(texts)], found)
		i++
	}
}
