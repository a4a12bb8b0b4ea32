package secrets

import (
	"slices"
	"strings"
)

const (
	maxGroupLen  = 8  // longest piece of a spaced-out key
	maxPrefixLen = 12 // longest first piece, such as "github_pat_"
	minGroups    = 4  // fewer pieces are ordinary prose
	minJoinedLen = 16 // shorter joins are no credential we detect
	maxGapLen    = 3  // spaces or tabs between two pieces, besides one line break
)

// collapse returns forms of text in which keys written in pieces are
// joined back: "AKIA ABCD EFGH IJKL MNOP", "s k _ l i v e _ 5 1 ...",
// "ghp_ 1a2B 3c4D ...", one piece a line. The first form joins runs of
// pieces separated by spaces, tabs or a single line break; the second also
// drops the dashes between pieces, as in "AKIA-ABCD-EFGH-IJKL-MNOP"; the
// third joins what follows a known key prefix (joinAfterPrefixes). It
// returns only forms that differ from text.
//
// A run is joined only if it looks like a split key rather than prose: at
// least minGroups pieces of at most maxGroupLen characters, all of one
// length but the first and the last, joining into at least minJoinedLen
// characters with both a letter and a digit.
func collapse(text string) []string {
	out := collapseRuns(text)
	if j, ok := joinAfterPrefixes(text); ok && !slices.Contains(out, j) {
		out = append(out, j)
	}
	return out
}

func collapseRuns(text string) []string {
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

// tokenize splits text at white space; shortGap decides which gaps a key
// may be split across.
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

// shortGap reports whether a key may be split across gap: a few spaces or
// tabs and at most one line break (a blank line separates paragraphs).
func shortGap(gap string) bool {
	gap = strings.Replace(gap, "\r\n", "\n", 1)
	if strings.Count(gap, "\n") > 1 || strings.Contains(gap, "\r") {
		return false
	}
	return len(strings.Replace(gap, "\n", "", 1)) <= maxGapLen
}

// keyPrefixes begin keys of known formats. They are distinctive enough
// that what follows one, written in pieces, is worth joining and scanning.
var keyPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "glptt-", "gldt-",
	"sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_", "whsec_",
	"xoxb-", "xoxp-", "xoxa-", "xoxe-", "xapp-", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-ant-",
	"AKIA", "ASIA", "AIza", "AKID", "hf_", "npm_", "pypi-", "shpat_", "dop_v1_",
}

// maxJoinedKey bounds how much text after a prefix is joined: the longest
// format we know (github_pat_) is 93 characters.
const maxJoinedKey = 128

// joinAfterPrefixes returns text with the pieces that follow each known key
// prefix joined to it: "ghp_KncswoQ8Q XsLVr7K0Y hzoBjQWxF yi0lD9KdM",
// "令牌：glpat- YBisR fOUXN qbW_z 4Vaka", a key wrapped over lines. Pieces
// are separated as shortGap allows. Joined are the leading pieces that
// look like key material (a digit or an inner capital, unlike words), or,
// if that joins more, a run of pieces of one length as collapseRuns
// joins them ("ghp_ abcd efgh ..."). The scan of the result decides: a
// join that makes no key's format is harmless.
func joinAfterPrefixes(text string) (string, bool) {
	var b strings.Builder
	last := 0
	for i := 0; i < len(text); {
		p := keyPrefixAt(text, i)
		if p == "" {
			i++
			continue
		}
		e := i + len(p)
		for e < len(text) && isKeyByte(text[e]) {
			e++
		}
		var pieces []span
		size := e - i
		for at := e; size < maxJoinedKey; {
			g := at
			for g < len(text) && (text[g] == ' ' || text[g] == '\t' || text[g] == '\n' || text[g] == '\r') {
				g++
			}
			t := g
			for t < len(text) && isKeyByte(text[t]) {
				t++
			}
			if g == at || t == g || !shortGap(text[at:g]) || t < len(text) && !boundaryAfter(text[t]) {
				break
			}
			pieces = append(pieces, span{g, t})
			size += t - g
			at = t
		}
		k := max(keyMaterialRun(text, pieces), equalRun(pieces))
		if k == 0 {
			i = e
			continue
		}
		b.WriteString(text[last:e])
		for _, pc := range pieces[:k] {
			b.WriteString(text[pc.start:pc.end])
		}
		last = pieces[k-1].end
		i = last
	}
	if last == 0 {
		return "", false
	}
	b.WriteString(text[last:])
	return b.String(), true
}

// prefixStarts marks the first bytes of keyPrefixes, so that most
// positions of a text are passed over with one lookup.
var prefixStarts = func() (m [256]bool) {
	for _, p := range keyPrefixes {
		m[p[0]] = true
	}
	return m
}()

// keyPrefixAt returns the key prefix that starts a token at text[i], or "".
func keyPrefixAt(text string, i int) string {
	if !prefixStarts[text[i]] || i > 0 && isKeyByte(text[i-1]) {
		return ""
	}
	for _, p := range keyPrefixes {
		if strings.HasPrefix(text[i:], p) {
			return p
		}
	}
	return ""
}

// isKeyByte reports whether c can be part of a key written after a prefix.
func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// boundaryAfter reports whether a piece may end before c: at white space,
// punctuation or other scripts, not inside a word such as an e-mail address.
func boundaryAfter(c byte) bool {
	return c != '@' && c != '.' && c != '/' && c != '+' && c != '='
}

// keyMaterialRun returns how many leading pieces look like key material: a
// digit, or a capital after a small letter ("fOUXN"), which words lack.
func keyMaterialRun(text string, pieces []span) int {
	for k, pc := range pieces {
		digit, hump := false, false
		for j := pc.start; j < pc.end; j++ {
			c := text[j]
			digit = digit || c >= '0' && c <= '9'
			hump = hump || j > pc.start && c >= 'A' && c <= 'Z' && text[j-1] >= 'a' && text[j-1] <= 'z'
		}
		if !digit && !hump {
			return k
		}
	}
	return len(pieces)
}

// equalRun returns how many leading pieces form a run collapseRuns would
// join: at least minGroups-1 pieces of one length of at most maxGroupLen,
// and a last one no longer; 0 otherwise.
func equalRun(pieces []span) int {
	if len(pieces) == 0 {
		return 0
	}
	want := pieces[0].end - pieces[0].start
	if want > maxGroupLen {
		return 0
	}
	k := 0
	for k < len(pieces) {
		n := pieces[k].end - pieces[k].start
		if n != want {
			if n < want {
				k++
			}
			break
		}
		k++
	}
	if k < minGroups-1 {
		return 0
	}
	return k
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
