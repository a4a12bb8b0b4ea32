package clip

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name, s             string
		n                   int
		bytes, marked, runs string
	}{
		{"short", "abc", 5, "abc", "abc", "abc"},
		{"exact", "abcde", 5, "abcde", "abcde", "abcde"},
		{"ascii", "abcdef", 3, "abc", "abc…", "abc…"},
		{"inside a character", "héllo", 2, "h", "h…", "hé…"},
		{"Chinese", "记得是在1993年", 4, "记", "记…", "记得是在…"},
		{"zero", "abc", 0, "", "…", "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Bytes(tt.s, tt.n); got != tt.bytes || !utf8.ValidString(got) || len(got) > tt.n {
				t.Errorf("Bytes = %q, want %q", got, tt.bytes)
			}
			if got := BytesMarked(tt.s, tt.n); got != tt.marked {
				t.Errorf("BytesMarked = %q, want %q", got, tt.marked)
			}
			if got := Runes(tt.s, tt.n); got != tt.runs {
				t.Errorf("Runes = %q, want %q", got, tt.runs)
			}
		})
	}
}
