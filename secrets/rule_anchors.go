package secrets

import (
	"slices"
	"strings"
)

// maxIdentLen bounds how far back an anchor looks for the start of an
// identifier such as spring.datasource.password.
const maxIdentLen = 64

// keywordAnchors returns an anchors function for rules that begin with a
// keyword. For each occurrence of a trigger in the lowered text it gives
// the start of the identifier holding it (db_password) and, when the one
// or two words before it are in compound, their starts ("api key",
// "secret access key"). A trigger that is not ASCII (密码) starts the
// match itself.
func keywordAnchors(compound map[string]bool, triggers ...string) func(string) []int {
	return func(lower string) []int {
		var out []int
		for _, t := range triggers {
			for off := 0; ; {
				i := strings.Index(lower[off:], t)
				if i < 0 {
					break
				}
				p := off + i
				off = p + len(t)
				if !isASCII(t) {
					out = append(out, p)
					continue
				}
				s := identStart(lower, p)
				// Options and dotted paths: --password, .env.pwd.
				for s < p && (lower[s] == '-' || lower[s] == '.' || lower[s] == '_') {
					s++
				}
				out = append(out, s)
				for k := 0; k < 2 && s > 1 && (lower[s-1] == ' ' || lower[s-1] == '\t'); k++ {
					w := identStart(lower, s-1)
					if w == s-1 || !compound[lower[w:s-1]] {
						break
					}
					out = append(out, w)
					s = w
				}
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
}

// identStart returns where the identifier ending at p begins.
func identStart(lower string, p int) int {
	lim := max(0, p-maxIdentLen)
	for p > lim && isIdentByte(lower[p-1]) {
		p--
	}
	return p
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// schemeAnchors returns where a URL scheme before each "://" begins.
func schemeAnchors(lower string) []int {
	var out []int
	for off := 0; ; {
		i := strings.Index(lower[off:], "://")
		if i < 0 {
			return out
		}
		p := off + i
		off = p + 3
		s := p
		for s > max(0, p-32) && isSchemeByte(lower[s-1]) {
			s--
		}
		if s < p {
			out = append(out, s)
		}
	}
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'
}
