package secrets

import (
	"regexp"
	"strings"
	"unicode"
)

// passwordInline finds a credential written right after its keyword, with
// no verb: "login ops-admin, password RX@Le5utIyXC7*", "前门门禁密码 728129",
// "combination for the safe: 417165" (the colon form is also
// passwordAssignment's). Without a verb any word could follow the keyword
// ("password reset", "password manager"), so the value must look made: a
// digit with a symbol or mixed case, or, after a keyword for a number
// (pin, combination, door code, 密码), digits only.
var passwordInline = rule{
	id:       "password-inline",
	keywords: []string{"pass", "pwd", "pin", "combination", "code", "口令", "密码", "密碼", "授权码"},
	anchors: keywordAnchors(compoundWords, "pass", "pwd", "pin", "combination", "code",
		"口令", "密码", "密碼", "授权码"),
	re: regexp.MustCompile(`\A(pass(?:word|phrase|code)?|pwd|pin(?: code)?|combination|(?:door|entry|gate|alarm|safe) code|口令|密码|密碼|授权码)` +
		`(?:[ \t]+(?:for|of|to)[ \t]+[a-z0-9'’ -]{1,40}?)?(?:[ \t]*[:：][ \t]*|[ \t]+)["'“‘\x60]?` +
		// 2: the value, a whole token with a digit in it.
		`([!#-&(-+\--:<-_a-~]*[0-9][!#-&(-+\--:<-_a-~]*)(?:[\s,，。;；)]|\z)`),
	valid: func(text string, m []int) bool {
		kw, value := strings.ToLower(group(text, m, 1)), strings.TrimRight(group(text, m, 2), ".:)]")
		if len(value) < 4 || namesNoValue(value) {
			return false
		}
		if allDigits(value) {
			return len(value) >= 4 && len(value) <= 12 && numberKeyword(kw)
		}
		return madeValue(value)
	},
}

func numberKeyword(kw string) bool {
	return strings.Contains(kw, "pin") || strings.Contains(kw, "combination") || strings.Contains(kw, "code") ||
		strings.ContainsAny(kw, "口密") || strings.Contains(kw, "passcode")
}

// madeValue: at least 8 characters with a digit and a symbol or both cases,
// which prose next to the word password almost never is.
func madeValue(v string) bool {
	if len(v) < 8 {
		return false
	}
	var digit, symbol, upper, lower bool
	for _, r := range v {
		switch {
		case unicode.IsDigit(r):
			digit = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		default:
			symbol = symbol || !strings.ContainsRune("-._'’", r)
		}
	}
	return digit && (symbol || (upper && lower))
}
