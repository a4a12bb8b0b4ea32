package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/textfold"
	"github.com/memgate/memgate/textread"
)

// The features the sidecar reads off a candidate's texts itself, rather
// than from a keyword list or pattern of the policy's data (textread). A
// policy that refers to one names it in memgate_config.features.builtin.
const (
	// featureForeign: some text of the write is in a language the
	// lexicons do not read (textread.Other).
	featureForeign = "lang.other"
	// featureObfuscated: some text of the write reads as English only
	// with rot13 undone or backwards.
	featureObfuscated = "text.obfuscated"
	// featureEncoded: some text of the write hides readable text in
	// base64 or hex.
	featureEncoded = "text.encoded"
)

var builtinFeatures = []string{featureForeign, featureObfuscated, featureEncoded}

// The candidate fields that carry the texts the features were found in,
// for the policy's reference definitions (features.rego) and the plain
// path: text_scan is what keyword lists are matched against, text_more the
// raw texts besides summary, evidence and value that patterns are matched
// against, text_read the builtin features.
const (
	textScanKey = "text_scan"
	textMoreKey = "text_more"
	textReadKey = "text_read"
)

// maxMoreBytes bounds the other texts of a write policy reads: a memory's
// summary, value and metadata are bounded already, this keeps a write's
// scan bounded whatever the limits upstream become.
const maxMoreBytes = 64 << 10

// candidateText is every text of a candidate that policy reads, and what
// textread found in them. Rule 10 of DESIGN.md: what a writer puts in
// value, metadata or evidence reaches the agent or the reviewer too, so it
// is read like the summary; and text the classifier cannot read, or that
// was hidden from it, is said so.
type candidateText struct {
	// folded is the summary folded (textfold.Text), norm the same
	// normalized (normalizeFolded).
	folded, norm string
	// more are the other texts, raw: the value's and the metadata's keys
	// and strings, the evidence when the writer gave it (not the
	// conversation a memory was drawn from), then every decoded reading
	// of these and of the summary. foldedMore are the same folded.
	more, foldedMore []string
	// moreNorm are the other texts normalized; heads the clause heads
	// (clauseHeads) of the summary, then of each other text. They are
	// made once, for the keyword match of the whole write and for the
	// classifier's score of each text.
	moreNorm, heads []string
	// builtin are the builtin features found, by name.
	builtin map[string]bool
}

// readCandidate gathers rec's texts. contextSources are the source
// reference prefixes whose evidence is a conversation the memory was drawn
// from: that evidence is context, matched by patterns only (as before),
// since every message of it is judged as a write of its own, or is the
// model input an extracted fact is judged without.
func readCandidate(rec *memory.Record, contextSources []string) *candidateText {
	ct := &candidateText{folded: textfold.Text(rec.Summary)}
	size := 0
	add := func(raw string) {
		if raw == "" || size >= maxMoreBytes {
			return
		}
		if size+len(raw) > maxMoreBytes {
			raw = clipUTF8(raw, maxMoreBytes-size)
		}
		size += len(raw)
		ct.more = append(ct.more, raw)
		ct.foldedMore = append(ct.foldedMore, textfold.Text(raw))
	}
	add(valueWords(rec.Value))
	add(mapWords(rec.Metadata))
	if ex := rec.Evidence.Excerpt; ex != "" && ex != rec.Summary && !hasAnyPrefix(rec.Evidence.SourceRef, contextSources) {
		add(ex)
	}
	n := len(ct.more)
	ct.read(rec.Summary, ct.folded)
	for i := range n {
		ct.read(ct.more[i], ct.foldedMore[i])
	}
	// Readings are texts too: their language counts, and what they say is
	// matched like the rest (add appends them to more).
	for i := n; i < len(ct.more); i++ {
		if textread.LanguageFolded(ct.foldedMore[i]) == textread.Other {
			ct.set(featureForeign)
		}
	}
	ct.norm = normalizeFolded(ct.folded)
	ct.heads = append(ct.heads, clauseHeads(ct.folded))
	for _, f := range ct.foldedMore {
		ct.moreNorm = append(ct.moreNorm, normalizeFolded(f))
		ct.heads = append(ct.heads, clauseHeads(f))
	}
	return ct
}

// read notes the language of one text and adds its hidden readings.
func (ct *candidateText) read(raw, folded string) {
	t := textread.Read(raw, folded)
	if t.Lang == textread.Other {
		ct.set(featureForeign)
	}
	for _, r := range t.Readings {
		if r.Kind.Obfuscating() {
			ct.set(featureObfuscated)
		}
		if r.Kind == textread.Base64 || r.Kind == textread.Hex {
			ct.set(featureEncoded)
		}
		if len(ct.more) < maxReadingTexts {
			ct.more = append(ct.more, r.Text)
			ct.foldedMore = append(ct.foldedMore, textfold.Text(r.Text))
		}
	}
}

// contextSourceList is f's context sources; none for a policy without
// features.
func (f *textFeatures) contextSourceList() []string {
	if f == nil {
		return nil
	}
	return f.contextSources
}

// maxReadingTexts bounds how many texts a write's scan matches.
const maxReadingTexts = 32

func (ct *candidateText) set(name string) {
	if ct.builtin == nil {
		ct.builtin = map[string]bool{}
	}
	ct.builtin[name] = true
}

// scanNorm is the text keyword lists are matched against: the normalized
// summary, then each other text normalized, a space apart so that no
// keyword spans two texts.
func (ct *candidateText) scanNorm() string {
	if len(ct.moreNorm) == 0 {
		return ct.norm
	}
	return ct.norm + strings.Join(ct.moreNorm, "")
}

// clauses is every normalized clause of the summary and the other texts.
func (ct *candidateText) clauses() []string {
	out := foldedClauses(ct.folded)
	for _, f := range ct.foldedMore {
		out = append(out, foldedClauses(f)...)
	}
	return out
}

// clauseHeads is clauseHeads of the summary and the other texts.
func (ct *candidateText) clauseHeads() string { return strings.Join(ct.heads, "") }

// valueWords renders a structured value as the words a reader sees in it:
// keys and scalars, entries a sentence apart ({"enabled": true} gives
// "enabled true."). "" for none.
func valueWords(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return ""
	}
	var b strings.Builder
	writeWords(&b, "", v)
	return strings.TrimSpace(b.String())
}

// mapWords is valueWords of metadata.
func mapWords(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	var b strings.Builder
	writeWords(&b, "", m)
	return strings.TrimSpace(b.String())
}

// writeWords writes v's keys and scalars, in key order; each scalar ends
// its entry with a full stop, so clauses do not run across entries.
func writeWords(b *strings.Builder, key string, v any) {
	if b.Len() > maxMoreBytes {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			writeWords(b, k, x[k])
		}
	case []any:
		for _, e := range x {
			writeWords(b, key, e)
		}
	case nil:
	default:
		if key != "" {
			b.WriteString(key)
			b.WriteByte(' ')
		}
		if s, ok := x.(string); ok {
			b.WriteString(s)
		} else {
			fmt.Fprint(b, x)
		}
		b.WriteString(".\n")
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	return s != "" && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// clipUTF8 bounds s to n bytes without splitting a character.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
