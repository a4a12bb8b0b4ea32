package secrets

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the rules for credentials written in prose in shapes the
// assignment rules (assign.go) do not read: a login given as a pair, a
// key right after its keyword, and a value given in a clause after the
// one that names the keyword. Each still wants a value that looks like a
// credential, as the assignment rules do.

// pairValueClass is valueClass without '/' and ':', which separate the
// two halves of a pair ("admin/Kx93mq2Lp", "deploy:Hk7pq91xZ").
const pairValueClass = `[!#-&(-+\-.0-9<-_a-~\p{Latin}]`

// userClass is what a user name in a pair may hold: an identifier, an
// e-mail address. It starts with a letter or a digit, so that a path
// ("/admin / settings") is no user.
const userClass = `[a-z0-9][a-z0-9._@+-]{0,63}`

// credentialPair finds a login given as user and password together after
// a word that names the pair: "the admin login for the NAS is backup /
// Tq8#mZ2pLx", "creds: deploy:Hk7pq91xZ", "登录账号是 admin / Kx93mq2Lp",
// "账密 root/hk7pq91xz". The password half must look like a credential.
var credentialPair = rule{
	id: "credential-pair",
	keywords: []string{"login", "logon", "log-in", "sign-in", "signin", "cred", "user",
		"登录", "登陆", "账号", "帐号", "帳號", "账户", "账密", "凭据", "凭证"},
	anchors: needing([]string{"/", ":"}, keywordAnchors(nil, "login", "logon", "log-in", "sign-in", "signin", "cred", "user",
		"登录", "登陆", "账号", "帐号", "帳號", "账户", "账密", "凭据", "凭证")),
	re: regexp.MustCompile(`\A(?:[a-z0-9]+[_.-])*` +
		// 1: the word naming the pair.
		`(logins?|logon|log-in|sign-in|signin|creds?|credentials?|user(?:name)?[ \t]*/[ \t]*pass(?:word)?|` +
		`登录|登陆|账号|帐号|帳號|账户|账密|凭据|凭证)` +
		// 2: a few words ("for the NAS") or Chinese characters (账号).
		`((?:[ \t]+[a-z0-9'’.-]+){0,5}?|\p{Han}{0,6}?)` +
		// 3: a verb, a colon or a dash, or nothing.
		`[ \t]*([:=：]|[-–—]|\b(?:is|are|was|were)\b(?:[ \t]+now)?|是|为|為)?[ \t]*` +
		// 4: the user, 5: the separator, 6: the password.
		`(` + userClass + `)([ \t]*/[ \t]*|:)(` + pairValueClass + `{6,})`),
	valid: func(text string, m []int) bool {
		kw, filler, verb := group(text, m, 1), group(text, m, 2), group(text, m, 3)
		user, pass := group(text, m, 4), group(text, m, 6)
		if strings.TrimSpace(filler) != "" && verb == "" {
			return false // "login with username/password"
		}
		if isASCII(kw) && verb == "" && m[3] == m[8] {
			return false // glued: "credentials2024/..."
		}
		if hasBlocker(filler) || pairBlockers(filler) || !userName(user) {
			return false
		}
		// A chain of halves is a path, a URL or a time: "aws/v2/creds".
		if rest := text[m[13]:]; rest != "" && strings.ContainsRune("/:", rune(rest[0])) {
			return false
		}
		// A slash also joins alternatives ("SSO/OAuth2", "HTTP/2"): the
		// password half wants 8 characters, not 6.
		return utf8.RuneCountInString(strings.TrimRight(pass, ".")) >= 8 && credentialValue(pass, true)
	},
}

// userName reports whether user can be the user half of a login: not a
// word naming the field ("username/password2"), a version or a date
// ("v1.2/v1.3beta"), or an acronym ("SSO/OAuth2"): user names are
// written in lowercase.
func userName(user string) bool {
	lower := strings.ToLower(user)
	if labelWords[lower] || datelike.MatchString(lower) {
		return false
	}
	return len(user) < 2 || strings.ToUpper(user) != user || !strings.ContainsFunc(user, unicode.IsLetter)
}

// userThenPassword finds a login given as a user keyword, the user, a
// password keyword and the password: "user mlopez, password orchid77",
// "用户名 admin 密码 orchid77". Naming the user makes the sentence give
// a login, so the password needs to look like a credential only as much
// as after "password is", not as much as password-inline wants.
var userThenPassword = rule{
	id:       "credential-pair",
	keywords: []string{"user", "login", "用户名", "账号", "帐号", "帳號", "账户", "登录名"},
	anchors: needing([]string{"pass", "pw", "密码", "密碼", "口令"},
		keywordAnchors(nil, "user", "login", "用户名", "账号", "帐号", "帳號", "账户", "登录名")),
	re: regexp.MustCompile(`\A(?:[a-z0-9]+[_.-])*` +
		// A verb or a space after the keyword; \b lets a user follow a
		// Chinese keyword glued ("用户名admin"), never an English one.
		`(?:user(?:name)?|user[ _]?id|login|用户名|账号|帐号|帳號|账户|登录名)(?:[ \t]*(?:[:：=]|是|为)[ \t]*|[ \t]+|\b)` +
		// 1: the user.
		`(` + userClass + `)` +
		`[ \t]*[,，;；、/]?[ \t]*(?:and[ \t]+|和|，)?(?:the[ \t]+)?` +
		// 2: the password keyword, 3: what separates it from 4: the password.
		`(password|passwd|passphrase|pass|pw|pwd|密码|密碼|口令)` +
		`((?:[ \t]*(?:[:：=]|\bis\b|是|为))?[ \t]*["'“‘\x60]?)(` + valueClass + `{6,})`),
	valid: func(text string, m []int) bool {
		user, kw, sep, value := group(text, m, 1), group(text, m, 2), group(text, m, 3), group(text, m, 4)
		if isASCII(kw) && sep == "" {
			return false // an identifier: "password_v2_hash"
		}
		return userName(user) && credentialValue(value, true)
	},
}

// needing returns anchors that finds none in a text without any of words,
// which every match of the rule holds besides its keyword: "user" is
// common, a user followed by a password keyword or a slash is not.
func needing(words []string, anchors func(string) []int) func(string) []int {
	return func(lower string) []int {
		if !containsAny(lower, words) {
			return nil
		}
		return anchors(lower)
	}
}

// labelWords name the fields of a login rather than fill them: in
// "username/password2" or "user field and password field" there is no
// user.
var labelWords = map[string]bool{
	"user": true, "users": true, "username": true, "usernames": true, "name": true,
	"login": true, "email": true, "e-mail": true, "id": true, "account": true,
	"password": true, "pass": true, "passwd": true, "pw": true, "pwd": true,
	"field": true, "fields": true, "and": true, "or": true, "the": true,
}

// pairWords, between the keyword and the pair, make "login" name a page,
// a flow or code rather than a login: "the login page is /admin / x".
var pairWords = map[string]bool{
	"page": true, "pages": true, "screen": true, "form": true, "flow": true,
	"button": true, "method": true, "methods": true, "provider": true,
	"module": true, "code": true, "handler": true, "logic": true,
	"test": true, "tests": true, "bug": true, "issue": true, "time": true,
	"times": true, "attempts": true, "service": true,
}

func pairBlockers(filler string) bool {
	for _, w := range strings.Fields(strings.ToLower(filler)) {
		if pairWords[strings.Trim(w, "'’./-")] {
			return true
		}
	}
	return false
}

// keyInline finds a key or token written right after its keyword, with
// no verb or punctuation: "Twilio auth token 4c8e1f0a...", "API key
// Xk29vLq8...", "应用密钥cOFrinLz...". Without a verb any word can follow
// ("token bucket", "auth token expires"), so the value must be key
// material: 16 characters or more with a random-looking run of letters
// and digits (keyMaterial). A bare "key" is left out, as in
// password-assignment: "cache key", "primary key".
var keyInline = rule{
	id: "key-inline",
	keywords: []string{"key", "token", "secret",
		"密钥", "密鑰", "秘钥", "秘鑰", "私钥", "私鑰", "令牌"},
	anchors: keyAnchors,
	re: regexp.MustCompile(`\A(?:[a-z0-9]+[_.-])*` +
		// 1: the keyword.
		`((?:api|access|auth|bearer|refresh|session|secret|private|app|client|bot|master|signing|encryption|license)[ _.-]?(?:key|token|secret)|` +
		`secret[ _.-]?access[ _.-]?key|access[ _.-]?key[ _.-]?secret|apikey|token|secret|` +
		`密钥|密鑰|秘钥|秘鑰|私钥|私鑰|令牌)` +
		// 2: the space before the value, 3: the value.
		`([ \t]*)([a-z0-9+/_=.~-]{16,})`),
	valid: func(text string, m []int) bool {
		kw, space, value := group(text, m, 1), group(text, m, 2), group(text, m, 3)
		if isASCII(kw) && space == "" {
			return false // "token_bucket_size", "secretkey1234..."
		}
		// An address or a URL goes on: "token abc...@host", "key x:y".
		if rest := text[m[7]:]; rest != "" && strings.ContainsRune("@:", rune(rest[0])) {
			return false
		}
		return keyMaterial(strings.TrimRight(value, "."))
	},
}

var keyInlineAnchors = keywordAnchors(compoundWords, "key", "token", "secret",
	"密钥", "密鑰", "秘钥", "秘鑰", "私钥", "私鑰", "令牌")

// keyAnchors drops the anchors of tokens that page through or order
// requests rather than grant access: "--next-token abCD...", "page token
// 9f4d...", "change token 12cs...".
// It also drops those with no run of 12 letters and digits holding a
// digit close after them, which keyMaterial needs: keywords are common in
// prose, and a regular expression run at each costs more than this look.
func keyAnchors(lower string) []int {
	if !hasAlnumRun(lower) {
		return nil
	}
	return slices.DeleteFunc(keyInlineAnchors(lower), func(at int) bool {
		return !hasAlnumRun(lower[at:min(len(lower), at+maxSpan)]) || handleWords[wordBefore(lower, at)] ||
			slices.ContainsFunc(identParts(lower, at), func(w string) bool { return handleWords[w] })
	})
}

// hasAlnumRun reports whether lower holds 12 ASCII letters and digits in
// a row, one of them a digit.
func hasAlnumRun(lower string) bool {
	n, digit := 0, false
	for i := 0; i < len(lower); i++ {
		switch c := lower[i]; {
		case c >= '0' && c <= '9':
			n, digit = n+1, true
		case c >= 'a' && c <= 'z':
			n++
		default:
			n, digit = 0, false
		}
		if n >= 12 && digit {
			return true
		}
	}
	return false
}

// handleWords name tokens that are handles, not credentials.
var handleWords = map[string]bool{
	"next": true, "page": true, "starting": true, "continuation": true,
	"change": true, "sync": true, "pagination": true, "cursor": true,
	"resume": true, "idempotency": true, "request": true, "nonce": true,
}

// wordBefore returns the identifier before the spaces before at in lower.
func wordBefore(lower string, at int) string {
	end := at
	for end > 0 && (lower[end-1] == ' ' || lower[end-1] == '\t') {
		end--
	}
	if end == at {
		return ""
	}
	return strings.Trim(lower[identStart(lower, end):end], "_.-")
}

// identParts returns the parts, between _ . -, of the identifier at at.
func identParts(lower string, at int) []string {
	end := at
	for end < len(lower) && isIdentByte(lower[end]) {
		end++
	}
	return strings.FieldsFunc(lower[at:end], func(r rune) bool { return r == '_' || r == '.' || r == '-' })
}

// keyMaterial reports whether value looks like a generated key rather
// than an identifier, a version, a path or a word: at least 16
// characters, and a run of 12 or more letters and digits (between -, _,
// ., /, +, =, ~) that switches between letters and digits at least four
// times or has a digit and two inner capitals. Hex counts: a 32-digit
// auth token is hex. "records2024summary", "v2-compact-2024" and
// "ttl_seconds_3600" do not.
func keyMaterial(value string) bool {
	if len(value) < 16 || namesNoValue(value) || ethAddress.MatchString(value) {
		return false
	}
	runs := strings.FieldsFunc(value, func(r rune) bool { return strings.ContainsRune("-_./+=~", r) })
	return slices.ContainsFunc(runs, randomRun)
}

// ethAddress is an Ethereum address, public, which follows "token" in
// "the USDC token 0xA0b8...". A private key is 64 hex digits.
var ethAddress = regexp.MustCompile(`^0[xX][0-9a-fA-F]{40}$`)

func randomRun(s string) bool {
	if len(s) < 12 {
		return false
	}
	switches, humps := 0, 0
	var digit bool
	prev := rune(0)
	for _, r := range s {
		isDigit := unicode.IsDigit(r)
		digit = digit || isDigit
		if prev != 0 && isDigit != unicode.IsDigit(prev) {
			switches++
		}
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			humps++
		}
		prev = r
	}
	return digit && (switches >= 4 || humps >= 2)
}

// passwordClause finds a credential given after the clause that names its
// keyword, in the same sentence: "changed the NAS password this morning,
// it's now Vq8#Lm2Ww9", "the wifi password? it is Lantern!Moss42". Between
// the keyword and "it's" only a short stretch without a sentence end, a
// blocker ("policy") or a subordinate clause ("because") may stand.
var passwordClause = rule{
	id:       "password-clause",
	keywords: passwordAssignment.keywords,
	anchors:  clauseAnchors(passwordAssignment.anchors),
	re: regexp.MustCompile(`\A` + assignKeyword +
		// 2: the rest of the keyword's clause.
		`([^.!?\n]{0,60}?)` +
		`(?:[ \t]*[,;:?][ \t]*|[ \t]+[-–—][ \t]+|[ \t]+)(?:(?:and|but|so)[ \t]+)?` +
		`(?:now[ \t]+)?(?:it|that)(?:'s|’s|[ \t]+is|[ \t]+was)(?:[ \t]+now)?(?:[ \t]+(?:set|changed)[ \t]+to)?` +
		`[ \t]*:?[ \t]*["'“‘\x60]?` +
		// 3: the value.
		`(` + valueClass + `{6,})`),
	valid: func(text string, m []int) bool {
		kw, filler, value := group(text, m, 1), group(text, m, 2), group(text, m, 3)
		if hasBlocker(filler) {
			return false
		}
		return credentialValue(value, numericAllowed(kw))
	},
}

// passwordClauseZH is passwordClause in Chinese: "新的密码，现在是
// Lm8#qT2vRz", "数据库口令换过一次，改成了 Qw3rty!88". The clause break is a
// comma; password-assignment-zh reads the keyword and verb without one.
var passwordClauseZH = rule{
	id:       "password-clause-zh",
	keywords: passwordAssignmentZH.keywords,
	anchors:  zhClauseAnchors,
	re: regexp.MustCompile(`\A(?:[a-z0-9]+[_.-])*` +
		`(口令|密码|密碼|密钥|密鑰|秘钥|秘鑰|私钥|私鑰|令牌|授权码|` +
		`(?:api|access|secret|app|client)[ _.-]?(?:key|token|secret)|token|secret|pass(?:word|wd)|pwd|pin)` +
		// 2: the rest of the keyword's clause.
		`([^。！？!?\n，,；;]{0,24}?)[ \t]*[，,；;][ \t]*(?:现在|目前|如今|已经|已|新的|新)?[ \t]*` +
		`(?:是|为|為|改成了?|改为了?|改為|换成了?|換成|变成了?|设成了?|设置为|设为|重置为|更新为)` +
		`[ \t]*[:：]?[ \t]*["'“‘「『\x60]?` +
		// 3: the value.
		`([!#-&(-+\--:<-_a-~]{6,})`),
	valid: func(text string, m []int) bool {
		kw, filler, value := group(text, m, 1), group(text, m, 2), group(text, m, 3)
		if hasBlocker(filler) || slices.ContainsFunc(zhBlockers, func(b string) bool { return strings.Contains(filler, b) }) {
			return false
		}
		if kw == "授权码" && generatedCode(value) {
			return true
		}
		return credentialValue(value, numericAllowed(kw))
	},
}

// clauseAnchors keeps the anchors of keywords followed, within maxSpan
// bytes, by "it's", "it is", "that was" or the like (hasItClause): the
// clause rule cannot match elsewhere, and keywords are common in prose.
func clauseAnchors(anchors func(string) []int) func(string) []int {
	return func(lower string) []int {
		if !hasItClause(lower) {
			return nil // most texts: no keyword's anchors to compute
		}
		return slices.DeleteFunc(anchors(lower), func(at int) bool {
			return !hasItClause(lower[at:min(len(lower), at+maxSpan)])
		})
	}
}

// hasItClause reports whether lower holds "it" or "that" followed by 's,
// ’s, " is" or " was", as password-clause's expression needs. One search
// for "t" and a look after it costs less than a search for each form.
func hasItClause(lower string) bool {
	for off := 0; ; {
		i := strings.IndexByte(lower[off:], 't')
		if i < 0 {
			return false
		}
		p := off + i
		off = p + 1
		if !strings.HasSuffix(lower[:p+1], "it") && !strings.HasSuffix(lower[:p+1], "that") {
			continue
		}
		rest := lower[p+1:]
		for _, v := range []string{"'s", "’s", " is", " was"} {
			if strings.HasPrefix(rest, v) {
				return true
			}
		}
	}
}

// zhClauseAnchors keeps the anchors of keywords followed by a clause
// break (zhClauseBreak) before any sentence end.
func zhClauseAnchors(lower string) []int {
	if !hasZHClauseBreak(lower) {
		return nil
	}
	return slices.DeleteFunc(zhKeywordAnchors(lower), func(at int) bool {
		w := lower[at:min(len(lower), at+maxSpan)]
		comma := strings.IndexAny(w, "，,；;")
		return comma < 0 || strings.ContainsAny(w[:comma], "。！？!?\n") || !zhClauseBreak(w[comma:])
	})
}

func hasZHClauseBreak(lower string) bool {
	for _, sep := range []string{"，", ",", "；", ";"} {
		for off := 0; ; {
			i := strings.Index(lower[off:], sep)
			if i < 0 {
				break
			}
			if zhClauseBreak(lower[off+i:]) {
				return true
			}
			off += i + len(sep)
		}
	}
	return false
}

// zhClauseBreak reports whether s begins with a comma or semicolon, then,
// after an optional adverb (现在, 已经), the first character of one of
// password-clause-zh's verbs: "，现在是", "，改成了".
func zhClauseBreak(s string) bool {
	var ok bool
	for _, p := range []string{"，", ",", "；", ";"} {
		if s, ok = strings.CutPrefix(s, p); ok {
			break
		}
	}
	if !ok {
		return false
	}
	s = strings.TrimLeft(s, " \t")
	for _, adverb := range []string{"现在", "目前", "如今", "已经", "已", "新的", "新"} {
		if rest, ok := strings.CutPrefix(s, adverb); ok {
			s = strings.TrimLeft(rest, " \t")
			break
		}
	}
	for _, v := range []string{"是", "为", "為", "改", "换", "換", "变", "设", "重", "更"} {
		if strings.HasPrefix(s, v) {
			return true
		}
	}
	return false
}
