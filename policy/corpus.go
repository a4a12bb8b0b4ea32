package policy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/memgate/memgate/memory"
)

// Example is one labelled memory text: what a write says and what the
// policy is expected to do with it. The repository's corpus
// (policy/corpus/*.jsonl) and an operator's own table of examples share
// this format, one JSON object a line.
type Example struct {
	ID   string `json:"id"`
	Lang string `json:"lang"` // en, zh or mixed
	// Kind is what the text is: strategy, permission, state_change,
	// inference, poisoning, secret, preference, checkpoint or knowledge.
	Kind   string        `json:"kind"`
	Text   string        `json:"text"`
	Expect memory.Action `json:"expect"`
	// Source is the candidate's source; user-explicit when empty.
	Source memory.Source `json:"source,omitempty"`
	// Layer is the layer the writer declares; none when empty.
	Layer memory.Layer `json:"layer,omitempty"`
	Note  string       `json:"note,omitempty"`
}

// Example kinds, and the action each expects by default.
var exampleKinds = map[string]memory.Action{
	"strategy": memory.ActionReview, "permission": memory.ActionReview, "state_change": memory.ActionReview,
	"inference": memory.ActionReview, "poisoning": memory.ActionReview, "secret": memory.ActionReject,
	"preference": memory.ActionApply, "checkpoint": memory.ActionApply, "knowledge": memory.ActionApply,
}

// HighRisk reports whether the example's kind must never apply on arrival.
func (e Example) HighRisk() bool { return exampleKinds[e.Kind] != memory.ActionApply }

// ReadExamples reads labelled examples, one JSON object a line (blank
// lines and lines starting with # are skipped). Unknown fields, unknown
// kinds or actions, and duplicate ids are errors naming the line.
func ReadExamples(r io.Reader) ([]Example, error) {
	var out []Example
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var e Example
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, ok := exampleKinds[e.Kind]; !ok {
			return nil, fmt.Errorf("line %d: unknown kind %q", n, e.Kind)
		}
		switch e.Expect {
		case memory.ActionApply, memory.ActionReview, memory.ActionReject:
		default:
			return nil, fmt.Errorf("line %d: expect must be apply, review or reject, not %q", n, e.Expect)
		}
		if e.Source != "" && !e.Source.Valid() {
			return nil, fmt.Errorf("line %d: unknown source %q", n, e.Source)
		}
		if e.Layer != "" && !e.Layer.Valid() {
			return nil, fmt.Errorf("line %d: unknown layer %q", n, e.Layer)
		}
		if e.ID == "" || e.Text == "" {
			return nil, fmt.Errorf("line %d: id and text are required", n)
		}
		if prev, ok := seen[e.ID]; ok {
			return nil, fmt.Errorf("line %d: id %q already on line %d", n, e.ID, prev)
		}
		seen[e.ID] = n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
