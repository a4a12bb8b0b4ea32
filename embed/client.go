package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/memgate/memgate/internal/clip"
	"github.com/memgate/memgate/llmapi"
)

// Client defaults and bounds.
const (
	DefaultModel     = "nomic-embed-text"
	DefaultBatchSize = 64
	DefaultTimeout   = 10 * time.Second
	DefaultTries     = 4

	// DefaultMaxResponseBytes bounds one answer: 64 texts of 3,072
	// dimensions written as JSON numbers (~20 bytes each) are about 4 MiB.
	DefaultMaxResponseBytes = 16 << 20
	// MaxTextBytes is how much of a text is sent (cut on a rune boundary):
	// a memory longer than that is rare, and its start says what it is about.
	MaxTextBytes = 8 << 10
)

// Request outcomes, as reported to Metrics.
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"
	OutcomeTimeout = "timeout"
)

// ErrDimension is returned when the endpoint answers vectors of another
// dimension than its first answer did: the model behind the name changed.
var ErrDimension = errors.New("embed: the vector dimension changed")

// StatusError is a non-2xx answer of the endpoint.
type StatusError struct {
	Endpoint string
	Code     int
	Message  string // the server's error message, cut to 300 bytes
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("embed: %s answered %d %s", e.Endpoint, e.Code, http.StatusText(e.Code))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Temporary reports whether asking again may succeed: rate limits, timeouts
// and server errors, not a refused request.
func (e *StatusError) Temporary() bool {
	return e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout || e.Code >= 500
}

// ClientOptions configure a Client.
type ClientOptions struct {
	// URL is the endpoint: a base URL (".../v1") to which "/embeddings" is
	// appended, or the full embeddings URL. http or https, no credentials.
	URL    string
	Model  string // default DefaultModel
	APIKey string // sent as a bearer token when set
	// BatchSize is the most texts sent in one request (default 64).
	BatchSize int
	// Timeout bounds one request, answer read included (default 10s).
	Timeout time.Duration
	// Tries bounds the attempts of one batch in Embed (default 4); waits
	// between them grow from RetryInitial (default 200ms) to RetryMax
	// (default 5s), with jitter.
	Tries        int
	RetryInitial time.Duration
	RetryMax     time.Duration
	// MaxResponseBytes bounds one answer (default 16 MiB).
	MaxResponseBytes int64
	HTTPClient       *http.Client // default: a client without its own timeout
	Logger           *slog.Logger
	Metrics          *Metrics // nil: none
}

// Client asks an OpenAI-compatible embeddings endpoint (Ollama, llama.cpp
// server, vLLM, OpenAI) for vectors. Vectors come back normalised to unit
// length. The dimension is taken from the first answer; a later answer of
// another dimension is ErrDimension. It is safe for concurrent use.
type Client struct {
	url, display string
	model        string
	apiKey       string
	batch        int
	timeout      time.Duration
	tries        int
	retryInitial time.Duration
	retryMax     time.Duration
	maxBytes     int64
	http         *http.Client
	log          *slog.Logger
	met          *Metrics

	mu  sync.Mutex
	dim int // 0 until the first answer
}

// NewClient checks o and returns a client. It sends nothing.
func NewClient(o ClientOptions) (*Client, error) {
	ep, err := llmapi.ParseEndpoint(o.URL, "/embeddings", "MEMGATE_EMBED_API_KEY")
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	c := &Client{url: ep.URL, display: ep.Display, model: strings.TrimSpace(o.Model), apiKey: o.APIKey,
		batch: o.BatchSize, timeout: o.Timeout, tries: o.Tries, retryInitial: o.RetryInitial, retryMax: o.RetryMax,
		maxBytes: o.MaxResponseBytes, http: o.HTTPClient, log: o.Logger, met: o.Metrics}
	if c.model == "" {
		c.model = DefaultModel
	}
	if c.batch <= 0 {
		c.batch = DefaultBatchSize
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.tries <= 0 {
		c.tries = DefaultTries
	}
	if c.retryInitial <= 0 {
		c.retryInitial = 200 * time.Millisecond
	}
	if c.retryMax < c.retryInitial {
		c.retryMax = max(5*time.Second, c.retryInitial)
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxResponseBytes
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Endpoint returns the embeddings URL without its query, for logs.
func (c *Client) Endpoint() string { return c.display }

// Model returns the model name sent.
func (c *Client) Model() string { return c.model }

// Dimension returns the dimension of the answers so far, 0 before the first.
func (c *Client) Dimension() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dim
}

// Embed returns one unit vector per text, in order. Texts are sent in
// batches of BatchSize; a batch that fails for a reason that may pass
// (transport error, timeout, 408, 429, 5xx) is tried again with backoff, up
// to Tries attempts, while ctx lasts.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return c.embed(ctx, texts, c.tries)
}

// embedOnce is Embed without retries, for the read path, which cannot wait.
func (c *Client) embedOnce(ctx context.Context, text string) ([]float32, error) {
	vs, err := c.embed(ctx, []string{text}, 1)
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

func (c *Client) embed(ctx context.Context, texts []string, tries int) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.batch {
		batch := texts[start:min(start+c.batch, len(texts))]
		exp := &backoff.ExponentialBackOff{InitialInterval: c.retryInitial, RandomizationFactor: 0.2,
			Multiplier: 2, MaxInterval: c.retryMax}
		vs, err := backoff.Retry(ctx, func() ([][]float32, error) {
			vs, err := c.request(ctx, batch)
			if err != nil && !retryable(err) {
				return nil, backoff.Permanent(err)
			}
			return vs, err
		}, backoff.WithBackOff(exp), backoff.WithMaxTries(uint(max(tries, 1))), backoff.WithMaxElapsedTime(0),
			backoff.WithNotify(func(err error, wait time.Duration) {
				c.log.Debug("embed request failed, trying again", "endpoint", c.display, "wait", wait, "err", err)
			}))
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// retryable tells whether err may pass by itself.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Temporary()
	}
	var te *llmapi.TransportError // refused, reset, timed out
	return errors.As(err, &te) || llmapi.IsTimeout(err) || errors.Is(err, io.ErrUnexpectedEOF)
}

type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// request sends one batch and reports its outcome to the metrics.
func (c *Client) request(ctx context.Context, texts []string) ([][]float32, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	vs, err := c.roundTrip(ctx, texts)
	outcome := OutcomeOK
	if err != nil {
		outcome = OutcomeError
		if llmapi.IsTimeout(err) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			outcome = OutcomeTimeout
		}
	}
	c.met.request(outcome, time.Since(start))
	return vs, err
}

func (c *Client) roundTrip(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = clip.Bytes(t, MaxTextBytes)
	}
	body, err := json.Marshal(request{Model: c.model, Input: in})
	if err != nil {
		return nil, fmt.Errorf("embed: encode the request: %w", err)
	}
	raw, err := llmapi.PostJSON(ctx, c.http, c.url, c.apiKey, body, c.maxBytes)
	var te *llmapi.TransportError
	var se *llmapi.StatusError
	switch {
	case err == nil:
	case errors.As(err, &te):
		return nil, fmt.Errorf("embed: ask %s: %w", c.display, err)
	case errors.Is(err, llmapi.ErrTooLarge):
		return nil, fmt.Errorf("embed: %s answered more than %d bytes", c.display, c.maxBytes)
	case errors.As(err, &se):
		return nil, &StatusError{Endpoint: c.display, Code: se.Code, Message: llmapi.ServerMessage(se.Body)}
	default:
		return nil, fmt.Errorf("embed: read the answer of %s: %w", c.display, err)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("embed: decode the answer of %s: %w", c.display, err)
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("embed: %s answered %d vectors for %d texts", c.display, len(r.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, d := range r.Data {
		at := i // servers that leave out the index answer in order
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= len(out) || out[at] != nil {
			return nil, fmt.Errorf("embed: %s answered a bad or repeated index %d", c.display, at)
		}
		v, err := unit(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("embed: vector %d of %s: %w", at, c.display, err)
		}
		out[at] = v
	}
	if err := c.checkDimension(len(out[0])); err != nil {
		return nil, err
	}
	for _, v := range out[1:] {
		if len(v) != len(out[0]) {
			return nil, fmt.Errorf("embed: %s answered vectors of %d and %d dimensions in one answer: %w", c.display, len(out[0]), len(v), ErrDimension)
		}
	}
	return out, nil
}

// checkDimension fixes the dimension at the first answer and holds later
// ones to it.
func (c *Client) checkDimension(d int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.dim == 0:
		c.dim = d
	case c.dim != d:
		return fmt.Errorf("embed: %s answered %d dimensions after %d (was the model %q changed?): %w", c.display, d, c.dim, c.model, ErrDimension)
	}
	return nil
}

// unit returns v scaled to unit length, as float32. An empty vector, or one
// holding NaN or an infinity, is an error; a zero vector stays zero.
func unit(v []float64) ([]float32, error) {
	if len(v) == 0 {
		return nil, errors.New("empty embedding")
	}
	var sum float64
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("the embedding holds NaN or an infinity")
		}
		sum += x * x
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out, nil
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(x * inv)
	}
	return out, nil
}
