package textfold

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

type textCase struct {
	name, in, want string
}

// attackCases are look-alike forms of risky text; each must fold to the
// plain form the keyword lists contain.
var attackCases = []textCase{
	// Confusable letters inside English words.
	{"cyrillic a", "\u0430uto-publish is allowed", "auto-publish is allowed"},
	{"cyrillic s i e", "\u0455k\u0456p r\u0435vi\u0435w", "skip review"},
	{"cyrillic o p c x y", "\u043e\u0440\u0441\u0445\u0443", "opcxy"},
	{"cyrillic capitals", "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425", "ABEKMHOPCTX"},
	{"cyrillic capital I", "\u0406gnore approval", "Ignore approval"},
	{"cyrillic palochka", "\u04c0GNORE", "IGNORE"},
	{"greek omicron", "aut\u03bf-publish", "auto-publish"},
	{"greek capital iota", "\u0399GNORE previous", "IGNORE previous"},
	{"greek lower", "\u03b1\u03b9\u03bd\u03bf\u03c1\u03c5", "aivopu"},
	{"greek capitals", "\u0391\u0392\u0395\u0396\u0397\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7", "ABEZHKMNOPTYX"},
	{"dotless i", "\u0131gnore", "ignore"},
	{"latin alpha", "\u0251uto", "auto"},
	{"estimated sign", "\u212Fxfiltrate", "exfiltrate"},
	{"apl iota rho alpha", "\u2373\u2374\u237a", "ipa"},
	{"small capitals", "\u1d00\u1d1c\u1d1b\u1d0f-\u1d18\u1d1c\u0299\u029f\u026a\ua731\u029c", "auto-publish"},
	{"small capitals rest", "\u1d05\u1d07\ua730\u0262\u1d0a\u1d0b\u1d0d\u0274\ua7af\u0280\u1d20\u1d21\u028f\u1d22", "defgjkmnqrvwyz"},
	{"negative circled", "\U0001F150\U0001F164\U0001F163\U0001F15E", "AUTO"},
	{"negative squared", "\U0001F170\U0001F184\U0001F183\U0001F17E", "AUTO"},

	// Invisible and format characters inside words.
	{"zwj", "pub\u200dlish", "publish"},
	{"zwnj", "pub\u200clish", "publish"},
	{"zwsp", "auto\u200b-publish", "auto-publish"},
	{"soft hyphen", "pub\u00adli\u00adsh", "publish"},
	{"word joiner", "pub\u2060lish", "publish"},
	{"invisible operators", "pub\u2062li\u2064sh", "publish"},
	{"bom", "\ufeffpublish", "publish"},
	{"bidi embeddings", "\u202aauto\u202b-\u202cpublish\u202d\u202e", "auto-publish"},
	{"bidi isolates", "\u2066auto\u2067-\u2068publish\u2069", "auto-publish"},
	{"bidi marks", "auto\u200e-\u200fpublish\u061c", "auto-publish"},
	{"mongolian vowel separator", "pub\u180elish", "publish"},
	{"variation selectors", "pub\ufe0fli\ufe00sh\U000E0100", "publish"},
	{"combining grapheme joiner", "pub\u034flish", "publish"},
	{"hangul fillers", "pub\u3164li\u115fs\u1160h", "publish"},
	{"halfwidth hangul filler", "pub\uffa0lish", "publish"},
	{"tag characters", "publish\U000E0001\U000E0041\U000E007F", "publish"},
	{"khmer inherent vowel", "pub\u17b4lish", "publish"},
	{"controls", "pub\x00li\x1bsh\x7f\u009b", "publish"},

	// Styled letters that NFKC maps.
	{"maths bold", "\U0001D41A\U0001D42E\U0001D42D\U0001D428-\U0001D429\U0001D42E\U0001D41B\U0001D425\U0001D422\U0001D42C\U0001D421", "auto-publish"},
	{"maths italic", "\U0001D44E\U0001D462\U0001D461\U0001D45C", "auto"},
	{"maths bold italic capitals", "\U0001D468\U0001D47C\U0001D47B\U0001D476", "AUTO"},
	{"maths double-struck", "\U0001D552\U0001D566\U0001D565\U0001D560", "auto"},
	{"maths fraktur", "\U0001D51E\U0001D532\U0001D531\U0001D52C", "auto"},
	{"maths sans-serif bold", "\U0001D5EE\U0001D602\U0001D601\U0001D5FC", "auto"},
	{"maths monospace", "\U0001D68A\U0001D69E\U0001D69D\U0001D698", "auto"},
	{"maths script l", "\u2113ock", "lock"},
	{"fullwidth", "\uff41\uff55\uff54\uff4f\uff0d\uff50\uff55\uff42\uff4c\uff49\uff53\uff48", "auto-publish"},
	{"fullwidth capitals", "\uff21\uff22\uff23", "ABC"},
	{"circled", "\u24d0\u24e4\u24e3\u24de", "auto"},
	{"circled capitals", "\u24b6\u24ca\u24c9\u24c4", "AUTO"},
	{"parenthesised", "\u249c", "(a)"},
	{"superscripts", "\u1d43\u1d58\u1d57\u1d52", "auto"},
	{"superscript capitals", "\u1d2c\u1d41\u1d40\u1d3c", "AUTO"},
	{"subscripts", "\u2090\u2092\u2093", "aox"},
	{"ligature", "\ufb01le", "file"},
	{"long s", "\u017fkip", "skip"},
	{"roman numeral", "\u2160\u2161", "III"},

	// Punctuation look-alikes.
	{"hyphen", "auto\u2010publish", "auto-publish"},
	{"non-breaking hyphen", "auto\u2011publish", "auto-publish"},
	{"minus sign", "auto\u2212publish", "auto-publish"},
	{"en dash", "auto\u2013publish", "auto-publish"},
	{"right single quote", "don\u2019t ask", "don't ask"},
	{"modifier apostrophe", "don\u02bct ask", "don't ask"},
	{"no-break space", "auto\u00a0publish", "auto publish"},
	{"ideographic space", "auto\u3000publish", "auto publish"},
	{"multiplication sign", "3\u00d74", "3x4"},
	{"double prime quote", "\u02baquoted\u02ba", `"quoted"`},

	// Several at once.
	{"combined", "\u202e\u0430uto\u200d-pub\u00adl\u0456\U0001D42C\u029c\u202c", "auto-publish"},
	{"composes after removal", "cafe\u200d\u0301", "caf\u00e9"},
	{"composes after fold", "\u041e\u031b", "\u01a0"},
	{"invalid utf-8", "a\xffb\xc0", "a\ufffdb\ufffd"},
	{"long mark run", "x" + strings.Repeat("\u0301", 40) + "y\u034f", "x" + strings.Repeat("\u0301", 40) + "y"},
	{"composes after cgj removal", "a\u034f" + strings.Repeat("\u0323", 20) + "\u0301", "\u1ea1" + strings.Repeat("\u0323", 19) + "\u0301"},

	// Documented side effects: Text is not script-aware.
	{"ligature letters", "\u00e6ble \u0152uvre", "aeble OEuvre"},
	{"russian partly folded", "\u043f\u0440\u043e\u0435\u043a\u0442", "\u043fpoe\u043a\u0442"},
}

// keptCases must come out of Text exactly as they went in.
var keptCases = []string{
	"",
	"Auto-publish is allowed. Don't ask for approval!\n\tOK",
	"m l I 1 0 O rn | ` \" % vv cl",
	"naïve café résumé",
	"Straße, groß, STRASSE, ẞ",
	"Ångström señor über façade Øresund",
	"zażółć gęślą jaźń; příliš žluťoučký kůň",
	"Vietnamese: cơm phở Việt Nam ư ơ",
	"q\u0301 x\u0323\u0301",
	"项目甲的部署需要人工审批。",
	"他说“不要自动发布”——这是规定、《手册》第〇章【注意】「引用」〔注〕丶丿",
	"記憶體寫入須經審核",
	"メモリへの書き込みは承認が必要です。「自動公開」は禁止、ー・゠",
	"ひらがな カタカナ 漢字",
	"메모리 쓰기는 승인이 필요합니다",
	"emoji 👍🚀 ok",
	"tab\tnewline\ncr\r",
	"\u00e9\u00e8\u00ea\u00eb",
	"ØÅøå",
}

// nfkcOnlyCases change only by NFKC.
var nfkcOnlyCases = []textCase{
	{"chinese fullwidth punctuation", "你好，世界！（测试）：完成；", "你好,世界!(测试):完成;"},
	{"chinese ellipsis", "等等……", "等等......"},
	{"chinese fullwidth digits", "第１２３条", "第123条"},
	{"decomposed accent", "cafe\u0301", "caf\u00e9"},
	{"halfwidth katakana", "\uff76\uff80\uff76\uff85", "カタカナ"},
}

func TestTextFoldsAttacks(t *testing.T) {
	for _, tc := range attackCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%+q) = %+q, want %+q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTextKeeps(t *testing.T) {
	for _, in := range keptCases {
		if got := Text(in); got != in {
			t.Errorf("Text(%+q) = %+q, want it unchanged", in, got)
		}
	}
}

func TestTextNFKCOnly(t *testing.T) {
	for _, tc := range nfkcOnlyCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%+q) = %+q, want %+q", tc.in, got, tc.want)
			}
			if nfkc := norm.NFKC.String(tc.in); nfkc != tc.want {
				t.Errorf("NFKC(%+q) = %+q: case is not NFKC-only", tc.in, nfkc)
			}
		})
	}
}

// TestTextASCIIIdentity guards against applying the skeleton to ASCII,
// which maps m to rn and I to l.
func TestTextASCIIIdentity(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		s := string(rune(c))
		want := s
		if c < 0x20 && !unicode.IsSpace(rune(c)) || c == 0x7F {
			want = ""
		}
		if got := Text(s); got != want {
			t.Errorf("Text(%+q) = %+q, want %+q", s, got, want)
		}
	}
}

// TestPrototypeClasses checks the mapping back from the skeleton's class
// stand-ins to the character that r resembles.
func TestPrototypeClasses(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want string
	}{
		{'\u0399', "I"},     // Greek capital iota: "l" in the data
		{'\u0406', "I"},     // Cyrillic capital byelorussian-ukrainian I
		{'\u04cf', "l"},     // Cyrillic small palochka
		{'\u0661', "1"},     // Arabic-Indic digit one
		{'\u2223', "|"},     // divides
		{'\u07c0', "0"},     // NKo digit zero: "O" in the data
		{'\u0966', "0"},     // Devanagari digit zero: "o" in the data
		{'\u041e', "O"},     // Cyrillic capital O
		{'\U00011700', "m"}, // Ahom letter ka: "rn" in the data
		{'\u02ba', `"`},     // modifier double prime: two apostrophes in the data
		{'\u201c', ""},      // kept: Chinese quotation mark
		{'\u01a1', ""},      // kept: Vietnamese o with horn, "o'" in the data
		{'\u00e9', ""},      // kept: é
		{'\u00df', ""},      // kept: ß
		{'\u043f', ""},      // kept: Cyrillic п has no ASCII prototype
		{'\u3007', ""},      // kept: ideographic zero, "O" in the data
		{'\u4e3f', ""},      // kept: Han 丿, "/" in the data
		{'\u3014', ""},      // kept: CJK bracket, "(" in the data
		{'m', ""},           // ASCII is never folded
	} {
		if got := prototype(tc.r); got != tc.want {
			t.Errorf("prototype(%U %c) = %q, want %q", tc.r, tc.r, got, tc.want)
		}
	}
}

func TestIsPlainASCII(t *testing.T) {
	base := []byte("The quick brown fox jumps over the lazy dog, twice!")
	for pos := range base {
		for c := range 256 {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			s := string(b)
			if got, want := isPlainASCII(s), plainBytes(s); got != want {
				t.Errorf("isPlainASCII(%q) = %v, want %v", s, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + rng.IntN(0x5F))
			if rng.IntN(16) == 0 {
				b[i] = byte(rng.IntN(256))
			}
		}
		if got, want := isPlainASCII(string(b)), plainBytes(string(b)); got != want {
			t.Errorf("isPlainASCII(%q) = %v, want %v", b, got, want)
		}
	}
}

func TestInvisibleFree(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !invisibleFree(r) {
			continue
		}
		if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) {
			t.Errorf("%U is invisible but lies in a span invisibleFree skips", r)
		}
	}
}

func TestNFKCStable(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !nfkcStable(r) {
			continue
		}
		p := norm.NFKC.PropertiesString(string(r))
		if norm.NFKC.String(string(r)) != string(r) || p.CCC() != 0 || !p.BoundaryBefore() {
			t.Errorf("%U is not NFKC-stable in every context", r)
		}
	}
}

// TestLocalFoldNames checks the local table against the Unicode names, so
// a typo in a code point cannot fold the wrong character.
func TestLocalFoldNames(t *testing.T) {
	n := 0
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		p := localFold(r)
		if p == "" {
			continue
		}
		n++
		name := runenames.Name(r)
		var want string
		switch {
		case strings.HasPrefix(name, "LATIN LETTER SMALL CAPITAL "):
			want = strings.ToLower(strings.TrimPrefix(name, "LATIN LETTER SMALL CAPITAL "))
		case strings.HasPrefix(name, "NEGATIVE CIRCLED LATIN CAPITAL LETTER "):
			want = strings.TrimPrefix(name, "NEGATIVE CIRCLED LATIN CAPITAL LETTER ")
		case strings.HasPrefix(name, "NEGATIVE SQUARED LATIN CAPITAL LETTER "):
			want = strings.TrimPrefix(name, "NEGATIVE SQUARED LATIN CAPITAL LETTER ")
		}
		if p != want {
			t.Errorf("localFold(%U %s) = %q, want %q", r, name, p, want)
		}
	}
	if want := 25 + 26 + 26; n != want {
		t.Errorf("localFold covers %d runes, want %d", n, want)
	}
}

func TestID(t *testing.T) {
	for _, tc := range []textCase{
		{"plain", "proj-cafe", "proj-cafe"},
		{"cyrillic a", "proj-c\u0430fe", "proj-cafe"},
		{"surrounding spaces", "  proj-cafe ", "proj-cafe"},
		{"tabs and newlines at the edges", "\t proj-cafe\n", "proj-cafe"},
		{"unicode spaces at the edges", "\u3000\u00a0proj-cafe\u2028", "proj-cafe"},
		{"zwsp", "proj-\u200bcafe", "proj-cafe"},
		{"invisible at the edge", "\u200b proj-cafe \ufeff", "proj-cafe"},
		{"bidi", "\u202eproj-cafe\u202c", "proj-cafe"},
		{"greek and cyrillic", "pr\u03bfj-\u0441af\u0435", "proj-cafe"},
		{"whole-script cyrillic", "\u0440\u043e\u0440\u0430", "popa"},
		{"small capitals", "\u1d18\u0280\u1d0f\u1d0a", "proj"},
		{"maths bold", "\U0001D429\U0001D42B\U0001D428\U0001D423-cafe", "proj-cafe"},
		{"fullwidth", "\uff50\uff52\uff4f\uff4a-cafe", "proj-cafe"},
		{"hyphen look-alike", "proj\u2010cafe", "proj-cafe"},
		{"case kept", "Proj-Cafe", "Proj-Cafe"},
		{"composed", "proj-caf\u00e9", "proj-caf\u00e9"},
		{"decomposed", "proj-cafe\u0301", "proj-caf\u00e9"},
		{"accent is a letter", "café", "café"},
		{"chinese", "项目甲", "项目甲"},
		{"chinese with punctuation", "项目‐甲", "项目-甲"},
		{"japanese", "プロジェクト", "プロジェクト"},
		{"russian", "проект", "проект"},
		{"russian with digits", "проект‐1", "проект-1"},
		{"bengali digit kept", "প্রকল্প-৪", "প্রকল্প-৪"},
		{"digit look-alike in a latin id", "proj-\u0661\u0966", "proj-10"},
		{"interior space kept", "proj cafe", "proj cafe"},
		{"fact type", "preference.language", "preference.language"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ID(tc.in)
			if err != nil {
				t.Fatalf("ID(%+q) error: %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ID(%+q) = %+q, want %+q", tc.in, got, tc.want)
			}
		})
	}
}

func TestIDSameSlot(t *testing.T) {
	for _, group := range [][]string{
		{"proj-cafe", "proj-c\u0430fe", "  proj-cafe ", "proj-\u200bcafe", "\uff50roj-cafe", "proj\u2011cafe"},
		{"proj-caf\u00e9", "proj-cafe\u0301", "proj-caf\u200de\u0301"},
	} {
		want, err := ID(group[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range group[1:] {
			if got, err := ID(in); err != nil || got != want {
				t.Errorf("ID(%+q) = %+q, %v; want %+q like %+q", in, got, err, want, group[0])
			}
		}
	}
	a, _ := ID("proj-caf\u00e9")
	b, _ := ID("proj-cafe")
	if a == b {
		t.Errorf("ID(café) == ID(cafe) = %q; é is a letter, not a look-alike", a)
	}
}

func TestIDErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, msg string }{
		{"empty", "", "empty"},
		{"spaces", "   ", "empty"},
		{"zwsp", "\u200b", "empty"},
		{"invisible and spaces", " \u200d\ufeff\u00ad ", "empty"},
		{"nul", "a\x00b", "control character U+0000"},
		{"interior tab", "a\tb", "control character U+0009"},
		{"interior newline", "proj\ncafe", "control character U+000A"},
		{"del", "ab\x7f", "control character U+007F"},
		{"c1", "a\u0085b", "control character U+0085"},
		{"invalid utf-8", "a\xffb", "not valid UTF-8"},
		{"truncated utf-8", "caf\xc3", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ID(tc.in)
			if err == nil {
				t.Fatalf("ID(%+q) = %+q, want an error", tc.in, got)
			}
			if got != "" {
				t.Errorf("ID(%+q) returned %+q with its error, want \"\"", tc.in, got)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "textfold: id ") {
				t.Errorf("ID(%+q) error %q, want it to mention %q", tc.in, err, tc.msg)
			}
		})
	}
}

// allInputs is every input in the tables, for the property tests.
func allInputs() []string {
	var in []string
	for _, tc := range attackCases {
		in = append(in, tc.in, tc.want)
	}
	for _, tc := range nfkcOnlyCases {
		in = append(in, tc.in)
	}
	return append(in, keptCases...)
}

// randomString mixes the characters the folds care about with arbitrary
// code points and bytes.
func randomString(rng *rand.Rand) string {
	pools := []string{
		"abcdefghijklmnopqrstuvwxyzABCIOm01 -.'\"",
		"\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0406\u04c0\u043f\u043a\u0442\u0451",
		"\u03b1\u03b9\u03bd\u03bf\u03c1\u0399\u039f",
		"\u200b\u200c\u200d\u2060\ufeff\u00ad\u202e\u2066\u034f\u3164\uffa0\ufe0f\u180e",
		"\u0301\u0308\u031b\u0323\u0338\u20dd",
		"项目甲。、“”〇丿",
		"カタカナひらがなー",
		"ｆｕｌｌ１２３，！",
		"\U0001D41A\U0001D552\u24d0\u1d43\u2160\ufb01\u017f\u1d00\u029f\U0001F150",
		"\u2010\u2011\u2212\u2019\u02bc\u00d7\u2113\u00a0\u3000\u2028",
		"\u00e9\u00df\u1e9e\u00e6\u01a1\u0131",
		"\x00\t\n\r\x1b\x7f\u0085\u009b",
	}
	if rng.IntN(50) == 0 {
		// Runs of marks past norm's stream-safe limit of 30.
		var b strings.Builder
		b.WriteString("a")
		for range 25 + rng.IntN(50) {
			b.WriteString([]string{"\u0301", "\u0323", "\u031b", "\u034f", "\u200d"}[rng.IntN(5)])
		}
		return b.String()
	}
	n := rng.IntN(24)
	var b strings.Builder
	for range n {
		switch k := rng.IntN(len(pools) + 2); {
		case k < len(pools):
			p := []rune(pools[k])
			b.WriteRune(p[rng.IntN(len(p))])
		case k == len(pools):
			b.WriteRune(rune(rng.IntN(unicode.MaxRune + 1)))
		default:
			b.WriteByte(byte(rng.IntN(256)))
		}
	}
	return b.String()
}

func inputsForProperties() []string {
	rng := rand.New(rand.NewPCG(1, 2))
	in := allInputs()
	for range 20000 {
		in = append(in, randomString(rng))
	}
	return in
}

func TestTextProperties(t *testing.T) {
	for _, s := range inputsForProperties() {
		once := Text(s)
		if twice := Text(once); twice != once {
			t.Errorf("Text not idempotent on %+q: %+q then %+q", s, once, twice)
		}
		checkTextOutput(t, s, once)
	}
}

func TestIDProperties(t *testing.T) {
	ok := 0
	for _, s := range inputsForProperties() {
		id, err := ID(s)
		if err != nil {
			continue
		}
		ok++
		checkIDOutput(t, s, id)
	}
	if ok < 1000 {
		t.Errorf("only %d random ids were valid; the generator is too hostile", ok)
	}
}

func checkTextOutput(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("Text(%+q) = %+q, not valid UTF-8", in, out)
	}
	if !isNormal(norm.NFKC, out) {
		t.Errorf("Text(%+q) = %+q, not NFKC", in, out)
	}
	for _, r := range out {
		if isInvisible(r) || isStrayControl(r) {
			t.Errorf("Text(%+q) = %+q keeps %U", in, out, r)
		}
	}
}

// isNormal reports whether s is in form f, but for the U+034F that the
// norm package inserts into runs of more than 30 marks and the folds drop.
func isNormal(f norm.Form, s string) bool {
	return strings.ReplaceAll(f.String(s), "\u034f", "") == s
}

func checkIDOutput(t *testing.T, in, id string) {
	t.Helper()
	again, err := ID(id)
	if err != nil || again != id {
		t.Errorf("ID not idempotent on %+q: %+q then %+q, %v", in, id, again, err)
	}
	if !utf8.ValidString(id) || !isNormal(norm.NFC, id) {
		t.Errorf("ID(%+q) = %+q, not valid NFC", in, id)
	}
	if id == "" || strings.TrimFunc(id, unicode.IsSpace) != id {
		t.Errorf("ID(%+q) = %+q, empty or untrimmed", in, id)
	}
	for _, r := range id {
		if isInvisible(r) || unicode.IsControl(r) {
			t.Errorf("ID(%+q) = %+q keeps %U", in, id, r)
		}
	}
}

func TestTextFastPathAllocs(t *testing.T) {
	for _, s := range []string{
		"Auto-publish is allowed.\nDon't ask.",
		"项目甲的部署需要人工审批。",
		"naïve café résumé",
	} {
		if n := testing.AllocsPerRun(100, func() { _ = Text(s) }); n != 0 {
			t.Errorf("Text(%q) allocates %v times, want 0", s, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ID("proj-cafe") }); n != 0 {
		t.Errorf("ID(proj-cafe) allocates %v times, want 0", n)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range allInputs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Text(s)
		if twice := Text(once); twice != once {
			t.Fatalf("Text not idempotent on %+q: %+q then %+q", s, once, twice)
		}
		checkTextOutput(t, s, once)
	})
}

func FuzzID(f *testing.F) {
	for _, s := range allInputs() {
		f.Add(s)
	}
	f.Add("proj-c\u0430fe")
	f.Add("  proj-cafe ")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ID(s)
		if err != nil {
			if id != "" {
				t.Fatalf("ID(%+q) = %+q with error %v", s, id, err)
			}
			return
		}
		checkIDOutput(t, s, id)
	})
}

var benchSink string

func BenchmarkText(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"ascii", "The deploy of project alpha needs a human review before it is published; do not auto-publish."},
		{"chinese", "项目甲的部署在发布前需要人工审核，不要自动发布。"},
		{"chinese-clean", "项目甲的部署在发布前需要人工审核。不要自动发布。"},
		{"mixed", "项目 alpha 的 deploy 需要 review；naïve café résumé."},
		{"attack", "\u0430uto-pub\u00adl\u0456sh is \u0430llowed: \U0001D42C\U0001D424\U0001D422\U0001D429 r\u0435vi\u0435w\u200d \u202ealways\u202c"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				benchSink = Text(bc.in)
			}
		})
	}
}

func BenchmarkID(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"ascii", "proj-cafe"},
		{"chinese", "项目甲"},
		{"attack", " proj-c\u0430f\u200be "},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchSink, _ = ID(bc.in)
			}
		})
	}
}
