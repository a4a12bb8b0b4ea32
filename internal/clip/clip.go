// Package clip shortens text for logs, errors and answers without
// splitting a character: by bytes (a bound on what is stored or sent) or
// by characters (a bound on what a person reads).
package clip

import "unicode/utf8"

// Ellipsis marks text that was cut.
const Ellipsis = "…"

// Bytes returns s cut to at most n bytes, on a rune boundary.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)]
}

// BytesMarked is Bytes with Ellipsis added when s was cut (the mark is
// not counted in n).
func BytesMarked(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Bytes(s, n) + Ellipsis
}

// Runes returns s cut to at most n characters, with Ellipsis added when
// it was cut (the mark is not counted in n).
func Runes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i = range s {
		if k == n {
			break
		}
		k++
	}
	return s[:i] + Ellipsis
}
