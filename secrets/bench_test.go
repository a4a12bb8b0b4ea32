package secrets

import (
	"strings"
	"testing"
)

// benchTexts returns the texts FindSecrets is benchmarked on: memories as
// they come (benign, with a secret, and a mix of 85% benign), and 16 KB
// documents: keyword-dense prose, and memories joined as
// memory.ScanRecord joins a record's fields.
func benchTexts() map[string][]string {
	var secret []string
	for _, c := range secretCases {
		secret = append(secret, c.text)
	}
	// Prose dense in rule keywords, the gate's worst case.
	long := strings.Repeat("The quarterly report covers API latency, access reviews, the token budget, "+
		"and who owns which key; see https://wiki.corp.internal/q3 for details. 项目进展顺利，密码需要定期修改。\n", 100)
	var records strings.Builder
	for i := 0; records.Len() < 16<<10; i++ {
		records.WriteString(benignCases[i%len(benignCases)])
		records.WriteString("\n\n")
	}
	mixed := append(append([]string(nil), benignCases...), secret[:len(secret)/4]...)
	return map[string][]string{
		"benign":       benignCases,
		"secret":       secret,
		"mixed":        mixed,
		"16KB-prose":   {strings.ToValidUTF8(long[:16<<10], "")},
		"16KB-records": {strings.ToValidUTF8(records.String()[:16<<10], "")},
	}
}

var benchNames = []string{"benign", "secret", "mixed", "16KB-prose", "16KB-records"}

// benchEach runs one sub-benchmark per name, calling scan on its texts in
// turn.
func benchEach(b *testing.B, texts map[string][]string, names []string, scan func(string)) {
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				scan(texts[name][i%len(texts[name])])
				i++
			}
		})
	}
}

func BenchmarkFindSecrets(b *testing.B) {
	s := newScanner(b)
	benchEach(b, benchTexts(), benchNames, func(text string) { s.FindSecrets(text) })
}

// BenchmarkGitleaksDetector is gitleaks' detector alone, ungated, on the
// same texts: the baseline the gate and the other passes are measured
// against.
func BenchmarkGitleaksDetector(b *testing.B) {
	s := newScanner(b)
	benchEach(b, benchTexts(), benchNames, func(text string) { s.leaks.detector.DetectString(text) })
}

// BenchmarkFindPII is the personal-data scan, which memory.ScanRecord runs
// beside FindSecrets on every write, on the same texts and on texts with
// personal data.
func BenchmarkFindPII(b *testing.B) {
	s := newScanner(b)
	var pii []string
	for _, c := range piiCases {
		pii = append(pii, c.text)
	}
	texts := benchTexts()
	texts["pii"] = pii
	benchEach(b, texts, append(benchNames, "pii"), func(text string) { s.FindPII(text) })
}
