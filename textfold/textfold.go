package textfold

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxPasses bounds the fold-normalise loop. Folding can expose a new
// composition (Cyrillic О + horn → O + horn → Ơ), so a pass may need a
// second; the fuzz targets check that the result is a fixed point.
const maxPasses = 4

// Text folds s for classification: what policy reads, never what is
// stored. See the package documentation for what is folded and what is
// kept. Plain ASCII without control characters is returned as is, without
// allocating.
func Text(s string) string {
	if isPlainASCII(s) {
		return s
	}
	return fixpoint(s, foldAll)
}

// ID normalises an identifier (subject id, fact type) so that look-alikes
// name one slot: NFKC, invisible characters removed, white space trimmed,
// punctuation and symbol look-alikes folded, and letter and digit
// look-alikes folded when the id has an ASCII letter or when every letter
// in it has an ASCII prototype; the result is NFC. "proj-c\u0430fe" and
// " proj-cafe" give "proj-cafe", "проект" and "项目甲" are kept, and "café"
// stays apart from "cafe" (é is a letter, not a look-alike). It returns an
// error when s is not valid UTF-8, or when the result is empty or contains
// a control character.
func ID(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("textfold: id %q is not valid UTF-8", s)
	}
	if s == "" {
		return "", errors.New("textfold: id is empty")
	}
	out := s
	if !isPlainASCII(s) || hasEdgeSpace(s) {
		out = fixpoint(s, idPass)
	}
	if err := checkID(s, out); err != nil {
		return "", err
	}
	return out, nil
}

// checkID validates a normalised id; orig is quoted in the message.
func checkID(orig, id string) error {
	if id == "" {
		return fmt.Errorf("textfold: id %q is empty after removing white space and invisible characters", orig)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("textfold: id %q contains control character %U", orig, r)
		}
	}
	return nil
}

// fixpoint applies pass until the string stops changing or pass reports
// that its result is settled (a fixed point).
func fixpoint(s string, pass func(string) (string, bool)) string {
	for range maxPasses {
		next, settled := pass(s)
		if settled || next == s {
			return next
		}
		s = next
	}
	return s
}

// isPlainASCII reports whether s is printable ASCII, tab, LF or CR: text
// that no step changes. It checks eight bytes at a time, since every Text
// call runs it over the whole memory.
func isPlainASCII(s string) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&high != 0 {
			return false
		}
		// With no high bit set, these are exact: some byte is below 0x20,
		// or some byte equals 0x7F (DEL).
		del := w ^ 0x7F*ones
		if (w-0x20*ones)&^w&high != 0 || (del-ones)&^del&high != 0 {
			if !plainBytes(s[i : i+8]) {
				return false
			}
		}
	}
	return plainBytes(s[i:])
}

// plainBytes is isPlainASCII one byte at a time.
func plainBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7F || c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func hasEdgeSpace(s string) bool {
	return s != "" && (isSpaceByte(s[0]) || isSpaceByte(s[len(s)-1]))
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// mode says what a pass does beyond NFKC and dropping invisibles.
type mode struct {
	foldLetters  bool // fold letters, not only punctuation and symbols
	dropControls bool // drop stray controls (Text); ID keeps them to reject them
}

// foldAll is one Text pass.
func foldAll(s string) (string, bool) {
	return textPass(s, mode{foldLetters: true, dropControls: true})
}

// textPass drops invisible characters (and stray controls when asked),
// applies NFKC and folds look-alikes. It returns s itself when nothing
// changes, checking that first without allocating so that clean non-ASCII
// text (Chinese, accented European) stays cheap. settled reports that the
// result is a fixed point, so no further pass is needed.
func textPass(s string, m mode) (out string, settled bool) {
	clean, dropFree := scan(s, m)
	if clean {
		return s, true
	}
	// NFKC rarely grows text by much; the slack saves a reallocation.
	b := make([]byte, 0, len(s)+len(s)/4+8)
	if dropFree {
		b = norm.NFKC.AppendString(b, s)
	} else {
		// Drop invisibles before NFKC so that "e\u200d\u0301" composes to é.
		b = norm.NFKC.Append(b, appendVisible(make([]byte, 0, len(s)), s, m)...)
	}
	// buf stays nil while b needs nothing dropped or folded.
	var buf []byte
	renorm := false
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		drop := m.drops(r) // NFKC can yield one (U+FFA0 → U+3164)
		p := ""
		if !drop {
			p = foldOf(r, m.foldLetters)
		}
		if buf == nil && (drop || p != "") {
			buf = append(make([]byte, 0, len(b)+8), b[:i]...)
		}
		switch {
		case buf == nil:
		case drop:
			// NFKC inserts U+034F itself to split a run of more than 30
			// combining marks (stream-safe format); normalising again
			// would put it back, so that drop alone settles the pass.
			renorm = renorm || r != '\u034f'
		case p != "":
			buf = append(buf, p...)
			renorm = true
		default:
			buf = append(buf, b[i:i+size]...)
		}
		i += size
	}
	if buf == nil {
		// NFKC output with nothing to drop or fold: clean.
		return string(b), true
	}
	if !renorm {
		return string(buf), true
	}
	// A folded letter may compose with the marks after it, and the
	// composition may itself fold, so another pass must look.
	return string(norm.NFKC.Bytes(buf)), false
}

// foldOf returns r's ASCII prototype, or "" to keep r. Punctuation,
// symbols and spaces always fold; letters, digits and the rest (which
// belong to a script) only when foldLetters.
func foldOf(r rune, foldLetters bool) string {
	if !foldLetters && !unicode.IsPunct(r) && !unicode.IsSymbol(r) && !unicode.IsSpace(r) {
		return ""
	}
	return prototype(r)
}

// drops reports whether a pass removes r.
func (m mode) drops(r rune) bool {
	return isInvisible(r) || m.dropControls && isStrayControl(r)
}

// scan reports whether textPass would return s unchanged (clean) and
// whether s has nothing to drop and is valid UTF-8 (dropFree), so that
// textPass can skip a copy. It does not allocate.
func scan(s string, m mode) (clean, dropFree bool) {
	clean, stable := true, true
	for i, r := range s {
		if r < utf8.RuneSelf {
			if m.dropControls && isStrayControl(r) {
				return false, false
			}
			continue
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false, false
			}
		}
		if m.drops(r) {
			return false, false
		}
		if clean && foldOf(r, m.foldLetters) != "" {
			clean = false
		}
		stable = stable && nfkcStable(r)
	}
	if !clean || stable {
		return clean, true
	}
	// QuickSpanString, unlike IsNormalString, does not allocate; a "maybe"
	// from its quick check only sends s down the slow path.
	return norm.NFKC.QuickSpanString(s) == len(s), true
}

// appendVisible appends s to b without what m drops, replacing invalid
// UTF-8 with U+FFFD.
func appendVisible(b []byte, s string, m mode) []byte {
	for _, r := range s {
		if m.drops(r) {
			continue
		}
		b = utf8.AppendRune(b, r)
	}
	return b
}

// idPass is one ID pass: invisibles dropped, NFKC, punctuation and symbols
// folded, edges trimmed, then letters and digits folded under the script
// rule of foldIDLetters.
func idPass(s string) (string, bool) {
	s, _ = textPass(s, mode{})
	s = strings.TrimFunc(s, unicode.IsSpace)
	if foldIDLetters(s) {
		s, _ = textPass(s, mode{foldLetters: true})
		s = strings.TrimFunc(s, unicode.IsSpace)
	}
	// Trimming and the script rule can change what a pass does, so only
	// an unchanged string ends the loop.
	return s, false
}

// foldIDLetters reports whether an id's letters are look-alikes to fold:
// it has an ASCII letter (mixed script, "proj-c\u0430fe"), or every letter
// has an ASCII prototype (whole script, Cyrillic "рора"). Otherwise it is
// genuinely another script ("проект", "项目甲") and keeps its letters.
func foldIDLetters(s string) bool {
	all := true
	for _, r := range s {
		if isASCIILetter(r) {
			return true
		}
		if all && unicode.IsLetter(r) && prototype(r) == "" {
			all = false
		}
	}
	return all
}
