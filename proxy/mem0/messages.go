package mem0

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/memgate/memgate/memory"
)

// Message is one conversation turn as a Mem0 client sends it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// maxMessages bounds one add: each message may become a governed write.
const maxMessages = 100

// parseMessages reads messages in every form the Mem0 SDKs accept: a
// string (one user message), one message object, or an array of strings
// and message objects. A message's content is a string, or OpenAI-style
// parts of which the text parts are kept (images are not remembered).
func parseMessages(raw json.RawMessage) ([]Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var items []json.RawMessage
	switch raw[0] {
	case '[':
		if err := unmarshalPart(raw, &items); err != nil {
			return nil, memory.Errorf(memory.EINVALID, "messages: %v", err)
		}
	case '"', '{':
		items = []json.RawMessage{raw}
	default:
		return nil, memory.Errorf(memory.EINVALID, "messages must be an array of {role, content} objects")
	}
	if len(items) > maxMessages {
		return nil, memory.Errorf(memory.EINVALID, "messages has %d items, more than the %d allowed in one add", len(items), maxMessages)
	}
	out := make([]Message, 0, len(items))
	for i, item := range items {
		m, err := parseMessage(item)
		if err != nil {
			return nil, memory.Errorf(memory.EINVALID, "messages[%d]: %s", i, memory.ErrorMessage(err))
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMessage(raw json.RawMessage) (Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := unmarshalPart(raw, &s); err != nil {
			return Message{}, memory.Errorf(memory.EINVALID, "%v", err)
		}
		return Message{Role: "user", Content: s}, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return Message{}, memory.Errorf(memory.EINVALID, "must be a {role, content} object or a string")
	}
	var m struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
		Text    *string         `json:"text"`
	}
	if err := unmarshalPart(raw, &m); err != nil {
		return Message{}, memory.Errorf(memory.EINVALID, "%v", err)
	}
	out := Message{Role: "user"}
	if m.Role != nil && strings.TrimSpace(*m.Role) != "" {
		out.Role = clean(strings.ToLower(*m.Role), 32)
	}
	text, err := contentText(m.Content)
	if err != nil {
		return Message{}, err
	}
	if text == "" && m.Text != nil {
		text = *m.Text
	}
	out.Content = strings.TrimSpace(text)
	return out, nil
}

// contentText returns the text of a message's content.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := unmarshalPart(raw, &s); err != nil {
			return "", memory.Errorf(memory.EINVALID, "content: %v", err)
		}
		return s, nil
	case '{':
		return partText(raw)
	case '[':
		var parts []json.RawMessage
		if err := unmarshalPart(raw, &parts); err != nil {
			return "", memory.Errorf(memory.EINVALID, "content: %v", err)
		}
		var texts []string
		for _, p := range parts {
			t, err := partText(p)
			if err != nil {
				return "", err
			}
			if t != "" {
				texts = append(texts, t)
			}
		}
		return strings.Join(texts, "\n"), nil
	}
	return "", memory.Errorf(memory.EINVALID, "content must be a string or an array of content parts")
}

func partText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		err := unmarshalPart(raw, &s)
		if err != nil {
			return "", memory.Errorf(memory.EINVALID, "content part: %v", err)
		}
		return s, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return "", memory.Errorf(memory.EINVALID, "a content part must be an object or a string")
	}
	var p struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := unmarshalPart(raw, &p); err != nil {
		return "", memory.Errorf(memory.EINVALID, "content part: %v", err)
	}
	if p.Text == nil || (p.Type != "" && p.Type != "text") {
		return "", nil // an image or another non-text part
	}
	return *p.Text, nil
}

// sourceOf is the candidate source of a message by its role; ok is false
// for messages that are instructions, not memories (system, developer).
func sourceOf(role string) (memory.Source, bool) {
	switch role {
	case "system", "developer":
		return "", false
	case "assistant", "ai", "model":
		return memory.SourceInference, true
	case "tool", "function":
		return memory.SourceTool, true
	}
	return memory.SourceUser, true
}
