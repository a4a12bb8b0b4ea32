// Package chat makes one request to an OpenAI-compatible chat-completions
// endpoint (OpenAI, Ollama, llama.cpp server, vLLM…): a system and a user
// message, temperature 0, a JSON-object answer. memgate asks models in two
// places, the Mem0 fact extractor and the judge; they share this round
// trip and keep their prompts, parsing and error wording.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// CompletionsURL returns the chat-completions URL of base: base itself if
// it already ends in /chat/completions, else base with it appended.
func CompletionsURL(base string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/chat/completions") {
		return base
	}
	return base + "/chat/completions"
}

// Request is one completion to ask for.
type Request struct {
	URL          string // the chat-completions URL
	APIKey       string // sent as a bearer token when set
	Model        string
	System, User string
	// MaxBytes bounds the answer read; a longer one is ErrTooLarge.
	MaxBytes int64
}

// Answer is the first choice's message.
type Answer struct {
	Content string
	Refusal string // set when the model declined
}

// ErrTooLarge is returned for an answer longer than Request.MaxBytes.
var ErrTooLarge = errors.New("answer too large")

// ErrNoChoices is returned for an answer without any choice.
var ErrNoChoices = errors.New("the answer has no choices")

// StatusError is a non-2xx answer, with its bounded body: the body may
// echo the request, so callers decide whether to show it.
type StatusError struct {
	Status string
	Body   []byte
}

func (e *StatusError) Error() string { return "answered " + e.Status }

// DecodeError is an answer that is not a chat completion.
type DecodeError struct{ Err error }

func (e *DecodeError) Error() string { return "decode the answer: " + e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

type request struct {
	Model          string    `json:"model"`
	Messages       []message `json:"messages"`
	Temperature    float64   `json:"temperature"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type response struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
		} `json:"message"`
	} `json:"choices"`
}

// Complete sends r with client and returns the first choice. Errors from
// the transport are returned as they are; the others are ErrTooLarge,
// ErrNoChoices, *StatusError or *DecodeError.
func Complete(ctx context.Context, client *http.Client, r Request) (Answer, error) {
	req := request{Model: r.Model, Temperature: 0,
		Messages: []message{{Role: "system", Content: r.System}, {Role: "user", Content: r.User}}}
	req.ResponseFormat.Type = "json_object"
	body, err := json.Marshal(req)
	if err != nil {
		return Answer{}, fmt.Errorf("encode the request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if r.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+r.APIKey)
	}
	resp, err := client.Do(hr)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, r.MaxBytes+1))
	if err != nil {
		return Answer{}, fmt.Errorf("read the answer: %w", err)
	}
	if int64(len(raw)) > r.MaxBytes {
		return Answer{}, ErrTooLarge
	}
	if resp.StatusCode/100 != 2 {
		return Answer{}, &StatusError{Status: resp.Status, Body: raw}
	}
	var cr response
	if err := json.Unmarshal(raw, &cr); err != nil {
		return Answer{}, &DecodeError{Err: err}
	}
	if len(cr.Choices) == 0 {
		return Answer{}, ErrNoChoices
	}
	m := cr.Choices[0].Message
	return Answer{Content: m.Content, Refusal: m.Refusal}, nil
}
