package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/memgate/memgate/llmapi"
)

// Extractor turns a conversation into the facts worth remembering, as
// Mem0's LLM does for adds with infer=true.
type Extractor interface {
	Extract(ctx context.Context, conv []Message, hints ExtractHints) ([]string, error)
}

// ExtractHints are the client's extraction instructions for one add.
type ExtractHints struct {
	Instructions string // custom_instructions
	Includes     string
	Excludes     string
}

// ChatExtractor asks an OpenAI-compatible chat-completions endpoint (a
// local model server, or a hosted API) for the facts in a conversation.
type ChatExtractor struct {
	url string
	// display is url without its query, for errors.
	display string
	model   string
	apiKey  string
	client  *http.Client
	timeout time.Duration // named when an extraction runs out of it
}

// ChatExtractorOptions configure a ChatExtractor.
type ChatExtractorOptions struct {
	// URL is the endpoint: a base URL (".../v1") to which
	// "/chat/completions" is appended, or the full chat-completions URL.
	URL     string
	Model   string        // default "gpt-4o-mini"
	APIKey  string        // sent as a bearer token when set
	Timeout time.Duration // per extraction; default 30s
	Client  *http.Client
}

// NewChatExtractor returns an extractor for an OpenAI-compatible endpoint.
func NewChatExtractor(o ChatExtractorOptions) (*ChatExtractor, error) {
	ep, err := llmapi.ParseEndpoint(o.URL, "/chat/completions", "MEMGATE_EXTRACTOR_API_KEY")
	if err != nil {
		return nil, fmt.Errorf("mem0 extractor: %w", err)
	}
	e := &ChatExtractor{url: ep.URL, display: ep.Display, model: o.Model, apiKey: o.APIKey, client: o.Client, timeout: o.Timeout}
	if e.model == "" {
		e.model = "gpt-4o-mini"
	}
	if e.timeout <= 0 {
		e.timeout = 30 * time.Second
	}
	if e.client == nil {
		e.client = &http.Client{Timeout: e.timeout}
	}
	return e, nil
}

// maxExtractorAnswer bounds the extraction model's answer.
const maxExtractorAnswer = 1 << 20

// extractPrompt is memgate's instruction to the extraction model.
const extractPrompt = `You read a conversation between a user and an AI assistant and list the facts worth remembering long term: who the user is, their preferences, plans, projects and the rules they set for the assistant.
Write each fact as one short, self-contained sentence in the language of the conversation.
Leave out greetings, small talk, thanks, questions and anything only true for this moment.
Answer with JSON only, exactly {"facts": ["...", "..."]}; answer {"facts": []} when nothing is worth remembering.`

// Extract asks the model for facts.
func (e *ChatExtractor) Extract(ctx context.Context, conv []Message, hints ExtractHints) ([]string, error) {
	if len(conv) == 0 {
		return nil, nil
	}
	system := extractPrompt
	for _, h := range []struct{ label, text string }{
		{"Additional instructions", hints.Instructions},
		{"Pay particular attention to", hints.Includes},
		{"Do not record anything about", hints.Excludes},
	} {
		if t := strings.TrimSpace(h.text); t != "" {
			system += "\n" + h.label + ": " + t
		}
	}
	ans, err := llmapi.Complete(ctx, e.client, llmapi.Request{URL: e.url, APIKey: e.apiKey, Model: e.model,
		System: system, User: "Conversation:\n" + transcript(conv), MaxBytes: maxExtractorAnswer})
	if err != nil {
		return nil, fmt.Errorf("mem0 extractor: %w", llmapi.Explain(err, e.display, maxExtractorAnswer, e.timeout))
	}
	return parseFacts(ans.Content)
}

// parseFacts reads the model's answer: {"facts": [...]}, or a bare array,
// possibly inside a Markdown code fence.
func parseFacts(content string) ([]string, error) {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		if nl := strings.IndexByte(s, '\n'); nl >= 0 {
			s = s[nl+1:] // drop the fence's language tag
		}
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	var obj struct {
		Facts []string `json:"facts"`
	}
	if err := json.Unmarshal([]byte(s), &obj); err == nil {
		return obj.Facts, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(s), &list); err == nil {
		return list, nil
	}
	// The answer may repeat the conversation: it is not put in the error.
	return nil, fmt.Errorf("mem0 extractor: the model did not answer {\"facts\": [...]} (%d bytes of something else)", len(content))
}
