package secrets

import (
	"strings"
)

const (
	maxGroupLen  = 8  // longest piece of a spaced-out key
	maxPrefixLen = 12 // longest first piece, such as "github_pat_"
	minGroups    = 4  // fewer pieces are ordinary prose
	minJoinedLen = 16 // shorter joins are no credential we detect
	maxGapLen    = 3  // spaces or tabs between two pieces
)

// collapse returns forms of text in which keys written in pieces are
// joined back: "AKIA ABCD EFGH IJKL MNOP", "s k _ l i v e _ 5 1 ...",
// "ghp_ 1a2B 3c4D ...". The first form joins runs of whitespace-separated
// pieces; the second also drops the dashes between pieces, as in
// "AKIA-ABCD-EFGH-IJKL-MNOP". It returns only forms that differ from text.
//
// A run is joined only if it looks like a split key rather than prose: at
// least minGroups pieces of at most maxGroupLen characters, all of one
// length but the first and the last, joining into at least minJoinedLen
// characters with both a letter and a digit.
func collapse(text string) []string {
	toks := tokenize(text)
	var joined, undashed strings.Builder
	last, lastU := 0, 0
	changed, changedU := false, false
	for i := 0; i < len(toks); {
		j := pieceRun(text, toks, i)
		if j-i < minGroups {
			if t := toks[i]; dashChain(text[t.start:t.end]) {
				undashed.WriteString(text[lastU:t.start])
				undashed.WriteString(strings.ReplaceAll(text[t.start:t.end], "-", ""))
				lastU, changedU = t.end, true
			}
			i++
			continue
		}
		var b strings.Builder
		for _, t := range toks[i:j] {
			b.WriteString(text[t.start:t.end])
		}
		s := b.String()
		if !keyLike(s) {
			i++
			continue
		}
		start, end := toks[i].start, toks[j-1].end
		joined.WriteString(text[last:start])
		joined.WriteString(s)
		last, changed = end, true
		undashed.WriteString(text[lastU:start])
		undashed.WriteString(strings.ReplaceAll(s, "-", ""))
		lastU, changedU = end, true
		i = j
	}
	var out []string
	if changed {
		joined.WriteString(text[last:])
		out = append(out, joined.String())
	}
	if changedU {
		undashed.WriteString(text[lastU:])
		if u := undashed.String(); len(out) == 0 || u != out[0] {
			out = append(out, u)
		}
	}
	return out
}

type span struct{ start, end int }

// tokenize splits text at spaces and tabs; other white space ends a line,
// and a key is not split across lines.
func tokenize(text string) []span {
	var toks []span
	start := -1
	for i := 0; i <= len(text); i++ {
		if i == len(text) || text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r' {
			if start >= 0 {
				toks = append(toks, span{start, i})
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return toks
}

// pieceRun returns the end of the run of pieces starting at toks[i]. The
// pieces after the first share one length, except the last, which may be
// shorter. The first may differ only if it ends in '_' or '-', like the
// prefixes "ghp_", "sk_live_" or "github_pat_"; otherwise it is more likely
// a word before the key.
func pieceRun(text string, toks []span, i int) int {
	if i+1 >= len(toks) || !isPiece(text, toks[i], maxPrefixLen) ||
		!isPiece(text, toks[i+1], maxGroupLen) || !shortGap(text[toks[i].end:toks[i+1].start]) {
		return i + 1
	}
	want := toks[i+1].end - toks[i+1].start
	if first := text[toks[i].start:toks[i].end]; len(first) != want &&
		!strings.HasSuffix(first, "_") && !strings.HasSuffix(first, "-") {
		return i + 1
	}
	j := i + 1
	for ; j < len(toks); j++ {
		t := toks[j]
		if !isPiece(text, t, maxGroupLen) || !shortGap(text[toks[j-1].end:t.start]) {
			break
		}
		if n := t.end - t.start; n != want {
			if n < want {
				j++ // a shorter last piece ends the run
			}
			break
		}
	}
	return j
}

func isPiece(text string, t span, maxLen int) bool {
	if t.end-t.start > maxLen {
		return false
	}
	for k := t.start; k < t.end; k++ {
		if !isEncodedByte(rune(text[k])) && text[k] != '=' {
			return false
		}
	}
	return true
}

func shortGap(gap string) bool {
	return len(gap) <= maxGapLen && !strings.ContainsAny(gap, "\r\n")
}

// dashChain reports whether tok is short pieces joined by dashes, as in
// AKIA-ABCD-EFGH-IJKL-MNOP, rather than a date, a UUID or a hyphenated word.
func dashChain(tok string) bool {
	parts := strings.Split(tok, "-")
	if len(parts) < minGroups {
		return false
	}
	for _, p := range parts {
		if len(p) == 0 || len(p) > 6 {
			return false
		}
		for k := 0; k < len(p); k++ {
			if !isEncodedByte(rune(p[k])) || p[k] == '-' {
				return false
			}
		}
	}
	return keyLike(strings.ReplaceAll(tok, "-", ""))
}

func keyLike(s string) bool {
	if len(s) < minJoinedLen {
		return false
	}
	letter, digit := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter = letter || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit = digit || c >= '0' && c <= '9'
	}
	return letter && digit
}
