package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"I love hiking in the Swiss Alps!", []string{"love", "hiking", "swiss", "alp"}},
		{"The user's favourite cities", []string{"user", "favourite", "city"}},
		{"Class status: glass", []string{"class", "status", "glass"}},
		{"v2 API, 2026", []string{"v2", "api", "2026"}},
		{"项目alpha自动发布", []string{"项目", "alpha", "自动", "动发", "发布"}},
		{"猫", []string{"猫"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := Tokenize(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestBM25RanksByTermWeightAndLength(t *testing.T) {
	docs := [][]string{
		Tokenize("ramen is my favourite food"),
		Tokenize("hiking in the alps with a long list of other words about mountains and weather"),
		Tokenize("hiking in the alps"),
		Tokenize("nothing relevant here"),
	}
	raw, rel := BM25(Tokenize("hiking alps"), docs)
	if !(raw[2] > raw[1] && raw[1] > 0 && raw[0] == 0 && raw[3] == 0) {
		t.Fatalf("raw scores %v: the short matching doc first, non-matching at 0", raw)
	}
	for i, r := range rel {
		if r < 0 || r > 1 {
			t.Fatalf("relevance %d = %v outside [0, 1]", i, r)
		}
	}
	if rel[2] < 0.9 {
		t.Fatalf("a short doc with every query term is close to 1, got %v", rel[2])
	}
	// A rarer term weighs more than a common one.
	raw, _ = BM25(Tokenize("ramen food"), [][]string{Tokenize("food"), Tokenize("ramen"), Tokenize("food bowl"), Tokenize("food plate")})
	if raw[1] <= raw[0] {
		t.Fatalf("the rare term should outweigh the common one: %v", raw)
	}
	if raw, rel := BM25(nil, docs); raw[0] != 0 || rel[0] != 0 {
		t.Fatal("an empty query scores nothing")
	}
}

// TestAddTextCountsAsTokenize: the ASCII path of addText counts what
// tokenize would produce.
func TestAddTextCountsAsTokenize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "abcsitueyABCSIY019 '’.,-_\t\x00é猫"
	runes := []rune(alphabet)
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteRune(runes[rng.IntN(len(runes))])
		}
		for _, w := range []string{"cities", "ies", "buses", "glass", "its", "status", "bus", "the", "s", "t"} {
			if rng.IntN(4) == 0 {
				b.WriteString(" " + w)
			}
		}
		s := b.String()
		toks := Tokenize(s)
		terms := uniq(append(append([]string{}, toks...), "zzz"))
		a, c := newBM25Corpus(terms), newBM25Corpus(terms)
		a.addText(s)
		c.addTokens(toks)
		if fmt.Sprint(a.lens, a.tf) != fmt.Sprint(c.lens, c.tf) {
			t.Fatalf("addText(%q): lengths %v counts %v; tokenize gives %q: %v %v", s, a.lens, a.tf, toks, c.lens, c.tf)
		}
	}
}

func TestIsStopword(t *testing.T) {
	for w := range stopwords {
		if !isStopword([]byte(w)) {
			t.Errorf("isStopword(%q) = false", w)
		}
	}
	for _, w := range []string{"", "x", "tea", "user", "thee", "yourss", "ab", "remembers", "whose", "those1"} {
		if isStopword([]byte(w)) != stopwords[w] {
			t.Errorf("isStopword(%q) = %v, want %v", w, !stopwords[w], stopwords[w])
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"I love hiking", "项目alpha自动发布", "user's cities", "\xff\xfe", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Tokenize(s) {
			if tok == "" || (utf8.ValidString(s) && !utf8.ValidString(tok)) {
				t.Fatalf("Tokenize(%q) gave token %q", s, tok)
			}
		}
	})
}
