package llmapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/memgate/memgate/internal/clip"
)

// ErrTooLarge is returned for an answer longer than the bound given.
var ErrTooLarge = errors.New("answer too large")

// StatusError is a non-2xx answer, with its bounded body: the body may
// echo the request (memory text included), so callers decide whether to
// show it; ServerMessage reads the server's own message out of it.
type StatusError struct {
	Code   int
	Status string
	Body   []byte
}

func (e *StatusError) Error() string { return "answered " + e.Status }

// TransportError is an error of the transport (no answer: refused,
// reset, timed out), with *url.Error's "Post <url>:" prefix removed: the
// URL may carry a query the logs should not repeat, and the caller names
// the endpoint by its display form.
type TransportError struct{ Err error }

func (e *TransportError) Error() string { return e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// PostJSON posts body to url as JSON, with apiKey as a bearer token when
// set, and returns the answer of a 2xx response, read up to maxBytes.
// Errors are *TransportError (no answer), an answer cut short ("read the
// answer: …"), ErrTooLarge, *StatusError, or a request that could not be
// built.
func PostJSON(ctx context.Context, client *http.Client, url, apiKey string, body []byte, maxBytes int64) ([]byte, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("the request could not be built") // the error would repeat the URL
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(hr)
	if err != nil {
		return nil, &TransportError{Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", unwrapURLError(err))
	}
	if int64(len(raw)) > maxBytes {
		return nil, ErrTooLarge
	}
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: raw}
	}
	return raw, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// IsTimeout reports whether err is a deadline or a network timeout.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ServerMessage extracts the error message of an error answer: OpenAI's
// {"error": {"message"}}, Ollama's and llama.cpp's {"error": "..."}, or the
// first line of a text body; white space collapsed, cut to 300 bytes.
func ServerMessage(raw []byte) string {
	var withObject struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	var withString struct {
		Error string `json:"error"`
	}
	msg := ""
	switch {
	case json.Unmarshal(raw, &withObject) == nil && withObject.Error.Message != "":
		msg = withObject.Error.Message
	case json.Unmarshal(raw, &withString) == nil && withString.Error != "":
		msg = withString.Error
	case !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")):
		msg, _, _ = strings.Cut(strings.TrimSpace(string(raw)), "\n")
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = clip.BytesMarked(msg, 300)
	}
	return msg
}
