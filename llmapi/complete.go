package llmapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

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

// ErrNoChoices is returned for an answer without any choice.
var ErrNoChoices = errors.New("the answer has no choices")

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

// Complete sends r with client and returns the first choice. Errors are
// PostJSON's, ErrNoChoices or *DecodeError.
func Complete(ctx context.Context, client *http.Client, r Request) (Answer, error) {
	req := request{Model: r.Model, Temperature: 0,
		Messages: []message{{Role: "system", Content: r.System}, {Role: "user", Content: r.User}}}
	req.ResponseFormat.Type = "json_object"
	body, err := json.Marshal(req)
	if err != nil {
		return Answer{}, fmt.Errorf("encode the request: %w", err)
	}
	raw, err := PostJSON(ctx, client, r.URL, r.APIKey, body, r.MaxBytes)
	if err != nil {
		return Answer{}, err
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

// Explain turns an error of Complete into one fit for a log or an
// operator, naming the endpoint (its display form) and never echoing the
// request or an answer's body, which may repeat what was asked: only the
// server's own message of an error status. maxBytes and timeout are the
// bounds the caller gave, named when they were reached.
func Explain(err error, endpoint string, maxBytes int64, timeout time.Duration) error {
	var status *StatusError
	var decode *DecodeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &status):
		msg := ServerMessage(status.Body)
		if msg != "" {
			msg = ": " + msg
		}
		return fmt.Errorf("%s answered %s%s", endpoint, status.Status, msg)
	case errors.As(err, &decode):
		return fmt.Errorf("decode the answer of %s: %w", endpoint, decode.Err)
	case errors.Is(err, ErrTooLarge):
		return fmt.Errorf("%s answered more than %d bytes: %w", endpoint, maxBytes, ErrTooLarge)
	case IsTimeout(err):
		return fmt.Errorf("%s did not answer within %s: %w", endpoint, timeout, err)
	}
	return fmt.Errorf("ask %s: %w", endpoint, err) // the transport, ErrNoChoices
}
