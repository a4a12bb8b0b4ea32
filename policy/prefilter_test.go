package policy

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/memgate/memgate/memory"
)

// secretPatterns are regexps for credentials (the default policy matched
// them until the governor's scanner took over): a workload of patterns
// with many literals, for the prefilter tests.
var secretPatterns = []string{
	"AKIA[0-9A-Z]{16}",
	"\\bsk-[A-Za-z0-9_-]{16,}",
	"\\bgh[pousr]_[A-Za-z0-9]{30,}",
	"\\bxox[abprs]-[A-Za-z0-9-]{10,}",
	"AIza[0-9A-Za-z_-]{35}",
	"-----BEGIN [A-Z ]*PRIVATE KEY-----",
	"\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}",
	"(?i)\\bbearer\\s+[A-Za-z0-9._~+/-]{20,}",
	"(?i)(password|passwd|pwd|passphrase|secret|api[ _-]?key|access[ _-]?key|secret[ _-]?key|auth[ _-]?token|access[ _-]?token|token|private[ _-]?key|credentials?)[\"']?\\s*[:=\uff1a]\\s*[\"'\u201c]?[^\\s\"'\u201d]*[0-9!@#$%^&*_+=/\\\\-][^\\s\"'\u201d]*",
	"(?i)\\b(password|passwd|passphrase|api[ _-]?key|secret[ _-]?key|access[ _-]?token|token)\\s+(is|was)\\s+[\"'\u201c]?[^\\s\"'\u201d]*[0-9!@#$%^&*_+=/\\\\-][^\\s\"'\u201d]*",
	"(\u5bc6\u7801|\u53e3\u4ee4|\u5bc6\u94a5|\u79d8\u94a5|\u79c1\u94a5|\u4ee4\u724c)\\s*(\u662f|\u4e3a|[:=\uff1a])\\s*[\"'\u201c]?[A-Za-z0-9!@#$%^&*_+=/-]{4,}",
}

// patternWorkload is the default policy's features plus secretPatterns.
func patternWorkload(t *testing.T) *textFeatures {
	t.Helper()
	data, err := mergeData(DefaultFiles())
	if err != nil {
		t.Fatal(err)
	}
	spec := data[ConfigRoot].(map[string]any)["features"].(map[string]any)
	pats := map[string]any{}
	for k, v := range spec["patterns"].(map[string]any) {
		pats[k] = v
	}
	var secret []any
	for _, p := range secretPatterns {
		secret = append(secret, p)
	}
	pats["secret"] = secret
	spec["patterns"] = pats
	f, err := parseFeatures(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPrefilterNeverChangesAMatch checks the prefilter only skips texts the
// regexp cannot match, over secretPatterns, the default's patterns and
// tricky texts.
func TestPrefilterNeverChangesAMatch(t *testing.T) {
	f := patternWorkload(t)
	texts := prefilterTexts()
	var all []*prefiltered
	for _, pf := range f.patterns {
		all = append(all, pf.res...)
	}
	for _, cs := range f.captures {
		all = append(all, cs.patterns...)
	}
	checked := 0
	{
		for _, re := range all {
			plain := regexp.MustCompile(re.re.String())
			if len(re.literals) > 0 {
				checked++
			}
			for _, s := range texts {
				if got, want := re.mayMatch(s) && re.re.MatchString(s), plain.MatchString(s); got != want {
					t.Errorf("%q on %q: prefiltered %v, plain %v (literals %q)", re.re, s, got, want, re.literals)
				}
			}
		}
	}
	if checked < 8 {
		t.Errorf("only %d secret patterns got a prefilter", checked)
	}
}

// TestPatternFeaturesMatchThePlainRegexps checks the shared literal index:
// a pattern feature is found exactly when one of its regexps, run without
// any prefilter, matches the summary, the excerpt or the value.
func TestPatternFeaturesMatchThePlainRegexps(t *testing.T) {
	f := patternWorkload(t)
	hits := 0
	for _, text := range prefilterTexts() {
		value, _ := json.Marshal(map[string]string{"note": text})
		for _, rec := range []*memory.Record{
			{Summary: text},
			{Summary: "a note", Evidence: memory.Evidence{Excerpt: text}},
			{Summary: "a note", Value: value},
		} {
			found := make([]bool, len(f.names))
			f.matchPatterns(rec, nil, found)
			for _, pf := range f.patterns {
				want := false
				for _, re := range pf.res {
					plain := regexp.MustCompile(re.re.String())
					for _, raw := range []string{rec.Summary, rec.Evidence.Excerpt, valueText(rec.Value)} {
						want = want || plain.MatchString(raw)
					}
				}
				if found[pf.id] != want {
					t.Errorf("%s on %+v: found %v, plain regexps %v", f.names[pf.id], rec, found[pf.id], want)
				}
				if want {
					hits++
				}
			}
		}
	}
	if hits < 20 {
		t.Errorf("only %d matches: the texts no longer exercise the patterns", hits)
	}
}

// prefilterTexts are texts for the secret patterns and the captures:
// secrets in many spellings, near misses and the realistic writes.
func prefilterTexts() []string {
	texts := []string{
		"my password is hunter2", "MY PASSWORD IS Hunter2", "PaSsWoRd: x9!", "paſſword: s3cret!",
		"api_key=sk-abcdefghijklmnop1234", "Api-Key: 12345678", "TOKEN: ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"Bearer abcdefghijklmnopqrstuvwxyz123", "-----BEGIN RSA PRIVATE KEY-----", "AKIAABCDEFGHIJKLMNOP",
		"密码是 abc12345", "服务器密码：Pa55word", "令牌为 tok_12345", "the password policy needs 12 characters",
		"nothing to see here", "", "sk-", "xoxb-1234567890-abc", "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.sig_abcdefgh",
	}
	for _, w := range realisticWrites {
		texts = append(texts, w.summary, w.evidence)
	}
	texts = append(texts, "The agent may only access the staging database", "ACCESS-KEY: abc123!", "accesskey=xyz9",
		"API_KEY = abc1!", "Api Key: 12345678", "apikey:x1", "my Token is abc-123", "AccessToken=zz9", "access  key: 1a",
		"-----BEGIN  PRIVATE KEY-----", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "GHP_abc", " the alpha project ", " 项目alpha ", " project ", " projects ", " my project x ")
	return texts
}

func TestPrefilterLiterals(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{`AKIA[0-9A-Z]{16}`, []string{"AKIA"}},
		{`\bsk-[a-z]+`, []string{"sk-"}},
		{`(?i)(password|token)\s*=`, []string{"password", "token"}},
		{`(?i)(pass|pwd)word`, []string{"password", "pwdword"}},
		{`(密码|口令)是`, []string{"密码是", "口令是"}},
		{`[a-z]+@example`, []string{"@example"}},
		{`[a-z]+[0-9]*`, nil},
		{`a|[0-9]`, nil},
		{`([a-z0-9]+) project`, []string{" project"}},
		{`x*(ab)+[0-9]`, []string{"ab"}},
		{`[a-z]+(foo|ba)`, []string{"foo", "ba"}},
		{`[a-z]+(foo|[0-9])`, nil},
		{`(?i)access[ _-]?key`, []string{"access key", "access_key", "access-key", "accesskey"}},
		{`gh[pu]_x`, []string{"ghp_x", "ghu_x"}},
		{`x?abc`, []string{"xabc", "abc"}},
		{`(ab)?[a-z]`, nil},
	} {
		p, err := compilePrefiltered(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.literals) == 0 && tc.want == nil {
			continue
		}
		got := map[string]bool{}
		for _, l := range p.literals {
			got[l] = true
		}
		for _, w := range tc.want {
			if !got[w] && !got[lowerASCII(w)] {
				t.Errorf("%s: literals %q lack %q", tc.pattern, p.literals, w)
			}
		}
		if tc.want == nil {
			t.Errorf("%s: literals %q, want none", tc.pattern, p.literals)
		}
	}
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}
