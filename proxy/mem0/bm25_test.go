package mem0

import (
	"slices"
	"testing"
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
		if got := tokenize(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestBM25RanksByTermWeightAndLength(t *testing.T) {
	docs := [][]string{
		tokenize("ramen is my favourite food"),
		tokenize("hiking in the alps with a long list of other words about mountains and weather"),
		tokenize("hiking in the alps"),
		tokenize("nothing relevant here"),
	}
	raw, rel := bm25(tokenize("hiking alps"), docs)
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
	raw, _ = bm25(tokenize("ramen food"), [][]string{tokenize("food"), tokenize("ramen"), tokenize("food bowl"), tokenize("food plate")})
	if raw[1] <= raw[0] {
		t.Fatalf("the rare term should outweigh the common one: %v", raw)
	}
	if raw, rel := bm25(nil, docs); raw[0] != 0 || rel[0] != 0 {
		t.Fatal("an empty query scores nothing")
	}
}
