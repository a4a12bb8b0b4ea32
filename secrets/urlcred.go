package secrets

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"
)

// credentialURL finds URLs that carry a password in their user info:
// redis://default:T0pS3cret99@host:6379, postgres://app:...@db/app,
// https://user:pass@host. Placeholders such as <password>, ${PASS} or ****
// are not credentials.
var credentialURL = rule{
	id:       "credential-url",
	keywords: []string{"://"},
	anchors:  schemeAnchors,
	re: regexp.MustCompile(`\A[a-z][a-z0-9+.-]{1,30}://` +
		// The password may hold a raw '#' or '?', which people write
		// unencoded.
		`([^\s:/?#@'"<>]*):([^\s/@'"]+)@[a-z0-9\[\]_-]`),
	valid: func(text string, m []int) bool {
		pw := group(text, m, 2)
		// host:8080?mail=a@b is a port and a query, not user info.
		if i := strings.IndexAny(pw, "?#"); i >= 0 && allDigits(pw[:i]) {
			return false
		}
		return urlPassword(pw)
	},
}

// urlPassword reports whether the password part of a URL's user info is a
// real one.
func urlPassword(pw string) bool {
	if p, err := url.PathUnescape(pw); err == nil {
		pw = p
	}
	if len(pw) < 4 || placeholder(pw) || placeholderWords[strings.ToLower(pw)] {
		return false
	}
	return true
}

// placeholderWords stand for a password in documentation. Only words: a
// documentation password with digits ("pass123") is a password people
// use, and counts.
var placeholderWords = map[string]bool{
	"pass": true, "password": true, "passwd": true, "pwd": true, "secret": true,
	"changeme": true, "user": true, "username": true, "token": true,
	"mypassword": true, "yourpassword": true, "pw": true,
	"redacted": true, "hidden": true, "masked": true, "none": true, "null": true,
}

// basicAuthHeader finds "Authorization: Basic <base64 of user:password>".
var basicAuthHeader = rule{
	id:       "basic-auth-header",
	keywords: []string{"basic"},
	onLower:  true,
	re:       regexp.MustCompile(`\bbasic[ \t]+([a-z0-9+/]{8,}={0,2})(?:[^a-z0-9+/=]|$)`),
	valid: func(text string, m []int) bool {
		b, err := base64.StdEncoding.DecodeString(group(text, m, 1))
		if err != nil || !printable(b) {
			return false
		}
		_, pw, ok := strings.Cut(string(b), ":")
		return ok && urlPassword(pw)
	},
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cliPassword finds passwords given to database and SSH clients on their
// command line: mysql -pSECRET, sshpass -p 'SECRET', redis-cli -a SECRET.
var cliPassword = rule{
	id:       "cli-password",
	keywords: []string{"mysql", "mariadb", "sshpass", "redis-cli"},
	re: regexp.MustCompile(`\b(?:mysql|mysqladmin|mysqldump|mariadb|sshpass|redis-cli)\b[^\n|;&]{0,80}?[ \t]-[pa][ \t]?["']?` +
		`(` + valueClass + `{6,})`),
	valid: func(text string, m []int) bool {
		return credentialValue(group(text, m, 1), true)
	},
}
