package secrets

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// valueClass is what a credential value written in prose may contain
// (matched against lowercased text; the value is then read from the text):
// printable ASCII but quotes, comma and semicolon (which end it), and Latin
// letters. CJK text and punctuation end a value, so "密码是Kx93!mq2，记得"
// yields Kx93!mq2.
const valueClass = `[!#-&(-+\--:<-_a-~\p{Latin}]`

// assignKeyword is submatch 1 of the English assignment rules: the
// keyword, with an optional identifier prefix (db_password). A bare "key"
// is left out: "the cache key is user:42" is no secret. The pass family
// may be glued to a prefix (pgpassword, rootpwd).
const assignKeyword = `((?:[a-z0-9]+[_.-])*(?:[a-z0-9]*(?:pass(?:word|phrase|code|wd)|pwd)|pw|pin|` +
	`(?:api|access|auth|bearer|refresh|session|secret|private|app|client|bot|master|signing|encryption|license)[ _.-]?(?:key|token|secret)(?:[ _.-]?(?:id|secret))?|` +
	`secret[ _.-]?access[ _.-]?key|token|secret|credentials?))`

// passwordAssignment finds credentials given in English prose or config
// syntax: "The SMTP password for the mailer is Orchid-7741!",
// "db_password = Orchid-7741!", "API key: ...", "token was changed to ...".
var passwordAssignment = rule{
	id:       "password-assignment",
	keywords: []string{"pass", "pw", "pin", "key", "token", "secret", "credential"},
	anchors:  keywordAnchors(compoundWords, "pass", "pw", "pin", "key", "token", "secret", "credential"),
	re: regexp.MustCompile(`\A` + assignKeyword +
		// 2: a few words between keyword and verb ("for the mailer").
		`((?:[ \t]+[a-z0-9'’./-]+){0,5}?)` +
		`[ \t]*(?:[:=：→]|=>|->|[ \t][-–—][ \t]|\b(?:is|was|are|were|is now|(?:set|changed|reset|updated|rotated)[ \t]+to)\b)` +
		`[ \t]*[:=]?[ \t]*["'“‘\x60]?` +
		// 3: the value.
		`(` + valueClass + `{6,})`),
	valid: func(text string, m []int) bool {
		kw, filler, value := group(text, m, 1), group(text, m, 2), group(text, m, 3)
		if hasBlocker(filler) {
			return false
		}
		// "password was changed to X": the verb phrase is the value.
		if v, ok := afterStateVerb(text[m[7]:], value); ok {
			value = v
		}
		return credentialValue(value, numericAllowed(kw))
	},
}

// passwordAssignmentZH finds credentials given in Chinese: "wifi 密码是
// Kx93!mq2", "数据库口令：Qw3rty!88", "腾讯云 SecretKey 是 ...", "新密码改成了
// ...". Either the keyword or the verb is Chinese; all-ASCII phrasings are
// passwordAssignment's.
var passwordAssignmentZH = rule{
	id: "password-assignment-zh",
	keywords: []string{"口令", "密码", "密碼", "密钥", "密鑰", "秘钥", "秘鑰", "私钥", "私鑰", "令牌", "授权码",
		"key", "token", "secret", "pass", "pwd", "pin"},
	anchors: zhAnchors,
	re: regexp.MustCompile(`\A(?:[a-z0-9]+[_.-])*` +
		`(口令|密码|密碼|密钥|密鑰|秘钥|秘鑰|私钥|私鑰|令牌|授权码|` +
		`(?:api|access|secret|app|client)[ _.-]?(?:key|token|secret)(?:[ _.-]?(?:id|secret))?|token|secret|pass(?:word|wd)|pwd|pin)` +
		// 2: a few Chinese characters between keyword and verb (已经, 现在).
		`[ \t]*(\p{Han}{0,4}?)[ \t]*` +
		// 3: the verb.
		`(是|为|為|[:：=]|改成了?|改为了?|改為|设为|设置为|设置成|设成|换成了?|換成|变成了?|更新为|重置为)` +
		`[ \t]*[:：]?[ \t]*["'“‘「『\x60]?` +
		// 4: the value.
		`([!#-&(-+\--:<-_a-~]{6,})`),
	valid: func(text string, m []int) bool {
		kw, filler, verb, value := group(text, m, 1), group(text, m, 2), group(text, m, 3), group(text, m, 4)
		if isASCII(kw) && isASCII(verb) {
			return false
		}
		for _, b := range zhBlockers {
			if strings.Contains(filler, b) {
				return false
			}
		}
		// An app's authorisation code (授权码) is often letters only:
		// "xrssvuymoxpnzwgj".
		if kw == "授权码" && generatedCode(value) {
			return true
		}
		return credentialValue(value, numericAllowed(kw))
	},
}

// generatedCode reports whether value looks machine-made: 12 or more ASCII
// letters and digits with no vowel-consonant rhythm a word would have is
// hard to test, so length alone decides, after the keyword said "code".
func generatedCode(value string) bool {
	if len(value) < 12 {
		return false
	}
	for _, r := range value {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// compoundWords start the two-word keywords: "api key", "client secret",
// "secret access key".
var compoundWords = map[string]bool{
	"api": true, "access": true, "auth": true, "bearer": true, "refresh": true,
	"session": true, "secret": true, "private": true, "app": true, "client": true,
	"bot": true, "master": true, "signing": true, "encryption": true, "license": true,
}

var zhKeywordAnchors = keywordAnchors(compoundWords, "口令", "密码", "密碼", "密钥", "密鑰", "秘钥", "秘鑰", "私钥", "私鑰", "令牌", "授权码",
	"key", "token", "secret", "pass", "pwd", "pin")

// zhAnchors drops the anchors of ASCII keywords not followed closely by a
// Chinese verb: those phrasings are passwordAssignment's, and English text
// has many such keywords.
func zhAnchors(lower string) []int {
	return slices.DeleteFunc(zhKeywordAnchors(lower), func(at int) bool {
		w := lower[at:min(len(lower), at+maxSpan)]
		return isASCII(w[:min(len(w), 3)]) && !strings.ContainsAny(w, "是为為：改设換换变更重")
	})
}

// blockers are words that, between a keyword and its verb, make the
// sentence about the credential rather than give it: "password reset link
// is ...", "token budget is ...".
var blockers = map[string]bool{
	"reset": true, "policy": true, "policies": true, "rule": true, "rules": true,
	"requirement": true, "requirements": true, "length": true, "expiry": true,
	"expiration": true, "expires": true, "rotation": true, "manager": true,
	"hint": true, "strength": true, "complexity": true, "hash": true,
	"hashing": true, "field": true, "prompt": true, "count": true, "limit": true,
	"limits": true, "budget": true, "usage": true, "size": true, "window": true,
	"cost": true, "price": true, "ttl": true, "lifetime": true, "format": true,
	"type": true, "name": true, "endpoint": true, "url": true, "path": true,
	"file": true, "location": true, "change": true, "changes": true,
	"update": true, "updates": true, "history": true, "age": true,
	"validity": true, "scope": true, "scopes": true, "header": true,
	"prefix": true, "id": true, "ids": true, "index": true, "number": true,
	"version": true, "owner": true, "holder": true,
	// A subordinate clause: the verb after it is not the keyword's ("the
	// token is long because it is base64url").
	"because": true, "since": true, "if": true, "when": true, "whenever": true,
	"although": true, "though": true, "unless": true, "whether": true,
	"why": true, "how": true,
}

var zhBlockers = []string{"策略", "规则", "長度", "长度", "管理", "过期", "有效期",
	"复杂度", "强度", "要求", "需要", "必须", "提示", "位数", "字段", "格式", "错误", "输入"}

func hasBlocker(filler string) bool {
	for _, w := range strings.Fields(strings.ToLower(filler)) {
		if blockers[strings.Trim(w, "'’./-")] {
			return true
		}
	}
	return false
}

var stateVerbValue = regexp.MustCompile(`^[ \t]+(?:to[ \t]+)?["'“‘\x60]?(` + valueClass + `{6,})`)

// afterStateVerb handles "was changed to X", where the match stopped at
// "changed": rest is the text after the match's value.
func afterStateVerb(rest, value string) (string, bool) {
	switch strings.ToLower(value) {
	case "changed", "set", "reset", "updated", "rotated", "now":
	default:
		return "", false
	}
	m := stateVerbValue.FindStringSubmatch(rest)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// numericAllowed reports whether an all-digit value counts for kw: PINs
// and passwords can be all digits, token and key values are not ("token
// limit is 128000").
func numericAllowed(kw string) bool {
	kw = strings.ToLower(kw)
	return strings.Contains(kw, "pass") || strings.HasSuffix(kw, "pin") ||
		strings.HasSuffix(kw, "pwd") || strings.HasSuffix(kw, "pw") || strings.ContainsAny(kw, "口密")
}

var (
	datelike = regexp.MustCompile(`^v?\d+(?:[.:/-]\d+)+[a-z]{0,3}$`)
	// os.environ, settings.DB_PASS, getpass(), os.getenv(...
	codeRef   = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+(?:[(\[].*)?|[(\[].*)$`)
	emailLike = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$`)
	// user:42:profile, cache/v2/items: key paths, all lowercase.
	keyPath = regexp.MustCompile(`^[a-z][a-z0-9_-]*(?:[:/][a-z0-9_*.{}-]+)+$`)
)

// notValues are words that follow "password is" without being one, once
// the ones without digit, symbol or inner capital are already excluded.
var notValues = map[string]bool{
	"1password": true, "lastpass": true, "keepass": true, "keepassxc": true,
	"bitwarden": true, "dashlane": true, "keychain": true, "n/a": true,
	"redacted": true, "[redacted]": true, "<redacted>": true, "(redacted)": true,
	"(hidden)": true, "[hidden]": true, "(none)": true, "<none>": true,
	"changeme": true, "password": true, "onepassword": true,
}

// namesNoValue reports whether value, though it has digits or symbols,
// is something other than a credential: a placeholder, a known non-value
// (1Password, N/A), a date or version, a code reference, an e-mail
// address, a key path, a URL or a file path.
func namesNoValue(value string) bool {
	return notValues[strings.ToLower(value)] || placeholder(value) ||
		datelike.MatchString(strings.ToLower(value)) ||
		codeRef.MatchString(value) || emailLike.MatchString(value) || keyPath.MatchString(value) ||
		strings.Contains(value, "://") || strings.HasPrefix(value, "/") ||
		strings.HasPrefix(value, "~/") || strings.HasPrefix(value, "./") ||
		strings.HasPrefix(value, "../") || strings.HasSuffix(value, "(")
}

// credentialValue reports whether value looks like a credential rather
// than prose, a placeholder, a date, a path or a code reference. It wants
// at least 6 characters and a digit, a symbol or mixed case.
func credentialValue(value string, numericOK bool) bool {
	value = strings.TrimRight(value, ".:)]")
	if utf8.RuneCountInString(value) < 6 || namesNoValue(value) {
		return false
	}
	var digit, symbol, letter, nonDigit bool
	humps := 0 // lower-to-upper changes: xKqPmwLr has 3, GitHub 1
	prev := rune(0)
	for _, r := range value {
		switch {
		case unicode.IsDigit(r):
			digit = true
		case unicode.IsLetter(r):
			letter, nonDigit = true, true
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				humps++
			}
		default:
			nonDigit = true
			// Hyphens, dots and underscores join words in prose
			// ("auto-generated", "e.g.", "user_id").
			symbol = symbol || !strings.ContainsRune("-._'’", r)
		}
		prev = r
	}
	if !nonDigit {
		return numericOK
	}
	if !letter && !digit {
		return false // only symbols: "******", "------"
	}
	return digit || symbol || humps >= 2
}

// placeholder reports whether value stands for a credential instead of
// being one: <password>, ${DB_PASS}, $PASS, {{ .pass }}, %PASS%, ****,
// xxxxxx, [REDACTED], YOUR_API_KEY. A value with key material is no
// placeholder because it reads as an example: example and test
// credentials are credentials.
func placeholder(value string) bool {
	switch value[0] {
	case '<', '$', '{', '[':
		return true
	case '%':
		// %DB_PASS%, not %Pi%GXbLCE97.
		return strings.HasSuffix(value, "%") && strings.ToUpper(value) == value
	case '@':
		return strings.HasSuffix(value, "@") // @DB_PASS@
	}
	if strings.Contains(value, "${") || strings.Contains(value, "{{") {
		return true
	}
	first, _ := utf8.DecodeRuneInString(value)
	same := true
	for _, r := range value {
		if unicode.ToLower(r) != unicode.ToLower(first) {
			same = false
			break
		}
	}
	if same {
		return true
	}
	lower := strings.ToLower(value)
	if strings.Trim(lower, "x*.-_") == "" || strings.Contains(lower, "****") || strings.Contains(lower, "xxxx") {
		return true // masked
	}
	// YOUR_API_KEY, your-password-here, my_token: words naming the value.
	// An example value with key material ("YourStrongPassw0rd!",
	// "my-Secret-2024") is a password someone may use: it counts.
	return (strings.HasPrefix(lower, "your") || strings.HasPrefix(lower, "my_") || strings.HasPrefix(lower, "my-")) &&
		!strings.ContainsFunc(value, func(r rune) bool { return !unicode.IsLetter(r) && !strings.ContainsRune("_-.", r) })
}
