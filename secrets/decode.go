package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"iter"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	minEncodedLen = 16 // shorter tokens are mostly words and ids
	maxCandidates = 64 // bounds the work on long texts
	minPrintable  = 0.9
)

// Prefixes of the ids of rules that matched only once decoded.
const (
	decodedBase64 = "decoded-base64:"
	decodedHex    = "decoded-hex:"
)

// decoded is text with its encoded tokens replaced by what they decode to.
type decoded struct {
	prefix string // "decoded-base64:" or "decoded-hex:"
	text   string
}

// decodeInPlace finds base64 (standard or URL alphabet) and hex tokens of
// at least minEncodedLen characters and returns, per encoding that yielded
// any, the text with each token that decodes to mostly printable text
// replaced by that text. Decoding in place keeps the context: "password:
// <base64>" still reads as an assignment. Random bytes, such as those behind
// a commit SHA, a checksum or a real binary key, are almost never printable,
// so such tokens are left alone. Only one level is decoded.
func decodeInPlace(text string) []decoded {
	var b64, hx strings.Builder
	var b64Last, hxLast int
	var b64Any, hxAny bool
	for i, j := range encodedTokens(text) {
		tok := text[i:j]
		if plain, ok := decodeHex(tok); ok {
			hx.WriteString(text[hxLast:i])
			hx.WriteString(plain)
			hxLast, hxAny = j, true
		}
		if plain, ok := decodeBase64(tok); ok {
			b64.WriteString(text[b64Last:i])
			b64.WriteString(plain)
			b64Last, b64Any = j, true
		}
	}
	var out []decoded
	if b64Any {
		b64.WriteString(text[b64Last:])
		out = append(out, decoded{decodedBase64, b64.String()})
	}
	if hxAny {
		hx.WriteString(text[hxLast:])
		out = append(out, decoded{decodedHex, hx.String()})
	}
	return out
}

// encodedTokens yields the start and end of each run of base64 or hex
// characters (with its padding) of at least minEncodedLen bytes, at most
// maxCandidates of them.
func encodedTokens(text string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		n := 0
		for start := 0; start < len(text) && n < maxCandidates; {
			i := start + strings.IndexFunc(text[start:], isEncodedByte)
			if i < start {
				return
			}
			j := i
			for j < len(text) && isEncodedByte(rune(text[j])) {
				j++
			}
			// Padding belongs to the token.
			for j < len(text) && text[j] == '=' {
				j++
			}
			start = j
			if j-i < minEncodedLen {
				continue
			}
			n++
			if !yield(i, j) {
				return
			}
		}
	}
}

// isEncodedByte reports whether r can be part of a base64 or hex token
// (padding aside).
func isEncodedByte(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
		r >= '0' && r <= '9' || r == '+' || r == '/' || r == '-' || r == '_')
}

func decodeHex(tok string) (string, bool) {
	if len(tok)%2 != 0 {
		return "", false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", false
		}
	}
	b, err := hex.DecodeString(tok)
	if err != nil || !printable(b) {
		return "", false
	}
	return string(b), true
}

func decodeBase64(tok string) (string, bool) {
	tok = strings.TrimRight(tok, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(tok, "-_") {
		if strings.ContainsAny(tok, "+/") {
			return "", false // mixed alphabets: not base64
		}
		enc = base64.RawURLEncoding
	}
	b, err := enc.DecodeString(tok)
	if err != nil || !printable(b) {
		return "", false
	}
	return string(b), true
}

// printable reports whether b is UTF-8 text of which at least minPrintable
// of the characters are printable or ordinary white space.
func printable(b []byte) bool {
	if len(b) < 6 || !utf8.Valid(b) {
		return false
	}
	total, ok := 0, 0
	for _, r := range string(b) {
		total++
		if unicode.IsPrint(r) || r == '\n' || r == '\t' || r == '\r' {
			ok++
		}
	}
	return float64(ok) >= minPrintable*float64(total)
}

// encodedCredential is the rule id for an encoded token that decodes to a
// credential-like value in a text that speaks of credentials: "the Jenkins
// credentials, base64: Y2ktZGVwbG95ZXI6…" or "登录密码的十六进制编码是
// 4261…". The decoded value need not follow an assignment the other rules
// read: the word nearby and the decoding are enough.
const encodedCredential = "encoded-credential"

// credentialWords are the words that make an encoded value a credential.
var credentialWords = []string{"password", "passwd", "passphrase", "passcode", "credential", "secret", "token",
	"api key", "apikey", "private key", "login", "密码", "密碼", "口令", "密钥", "秘钥", "凭据", "凭证", "令牌", "授权码", "登录"}

// hasEncodedCredential reports whether text speaks of credentials and holds
// a base64 or hex token that decodes to a single credential-like value.
func hasEncodedCredential(text string) bool {
	lower := strings.ToLower(text)
	if !slices.ContainsFunc(credentialWords, func(w string) bool { return strings.Contains(lower, w) }) {
		return false
	}
	for i, j := range encodedTokens(text) {
		tok := text[i:j]
		for _, dec := range []func(string) (string, bool){decodeHex, decodeBase64} {
			if plain, ok := dec(tok); ok && !strings.ContainsFunc(plain, unicode.IsSpace) && credentialValue(plain, true) {
				return true
			}
		}
	}
	return false
}
