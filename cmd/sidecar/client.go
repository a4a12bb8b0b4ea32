package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// cliEnv is what every admin subcommand shares.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// clientFlags are the flags of every subcommand that talks to the admin API.
type clientFlags struct {
	admin   string
	token   string
	dataDir string
	json    bool
	timeout time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.admin, "admin-url", "http://127.0.0.1:7601", "base URL of the sidecar's admin listener")
	fs.StringVar(&c.token, "admin-token", "", "admin token (default: MEMGATE_ADMIN_TOKEN, else <data-dir>/admin.token)")
	fs.StringVar(&c.dataDir, "data-dir", "memgate-data", "data directory holding a generated admin token")
	fs.BoolVar(&c.json, "json", false, "print the API's JSON answer instead of text")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on the admin call")
}

// resolveToken returns the admin token and where it came from, so that a
// refusal can name the source that was tried.
func (c *clientFlags) resolveToken() (token, source string, err error) {
	if c.token != "" {
		if os.Getenv("MEMGATE_ADMIN_TOKEN") == c.token {
			return c.token, "MEMGATE_ADMIN_TOKEN", nil
		}
		return c.token, "--admin-token", nil
	}
	path := filepath.Join(c.dataDir, tokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("no admin token: set MEMGATE_ADMIN_TOKEN or --admin-token, or run next to the sidecar's data directory (%s: %v)", path, err)
	}
	return strings.TrimSpace(string(b)), path, nil
}

// tokenRefused explains a 401: which token source was used, and where the
// sidecar takes its own from.
func tokenRefused(err error, source string) error {
	hint := "pass the sidecar's token with MEMGATE_ADMIN_TOKEN or --admin-token"
	if source != "MEMGATE_ADMIN_TOKEN" && source != "--admin-token" {
		hint = "if the sidecar was started with MEMGATE_ADMIN_TOKEN, its generated token file is not in use: export the same MEMGATE_ADMIN_TOKEN here or pass --admin-token"
	}
	return fmt.Errorf("%w\nthe admin token from %s was refused; %s", err, source, hint)
}

// apiError is the admin API's JSON error.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// call sends one admin request and decodes the JSON answer into out (a
// *json.RawMessage keeps it raw).
func (c *clientFlags) call(ctx context.Context, method, path string, body, out any) error {
	token, source, err := c.resolveToken()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.admin, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Memgate-Route", "cli")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w (is the sidecar running?)", c.admin, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the admin answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		ae := &apiError{Status: resp.StatusCode, Code: "http", Message: strings.TrimSpace(string(data))}
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			ae.Code, ae.Message = e.Error.Code, e.Error.Message
		}
		if resp.StatusCode == http.StatusUnauthorized {
			return tokenRefused(ae, source)
		}
		return ae
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the admin answer: %w", err)
	}
	return nil
}

// download GETs an admin route that streams its answer (no --timeout: it
// may be long) and returns the body; what names it in errors.
func (c *clientFlags) download(ctx context.Context, path, what string) (io.ReadCloser, error) {
	token, source, err := c.resolveToken()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(c.admin, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Memgate-Route", "cli")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", c.admin, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		err := fmt.Errorf("%s: HTTP %d: %s", what, resp.StatusCode, strings.TrimSpace(string(b)))
		if resp.StatusCode == http.StatusUnauthorized {
			return nil, tokenRefused(err, source)
		}
		return nil, err
	}
	return resp.Body, nil
}

// show prints the raw JSON when --json is set, else the text rendering.
func (c *clientFlags) show(w io.Writer, raw json.RawMessage, text func(io.Writer) error) error {
	if c.json {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := w.Write(buf.Bytes())
		return err
	}
	var buf bytes.Buffer
	if err := text(&buf); err != nil {
		return err
	}
	_, err := io.WriteString(w, inert(buf.String()))
	return err
}

// showAs is show with the text written from raw decoded into a T.
func showAs[T any](c *clientFlags, w io.Writer, raw json.RawMessage, text func(io.Writer, T) error) error {
	return c.show(w, raw, func(w io.Writer) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		return text(w, v)
	})
}

// callShow sends one admin request and shows its answer as showAs does.
func callShow[T any](ctx context.Context, c *clientFlags, w io.Writer, method, path string, body any, text func(io.Writer, T) error) error {
	var raw json.RawMessage
	if err := c.call(ctx, method, path, body, &raw); err != nil {
		return err
	}
	return showAs(c, w, raw, text)
}

// inert escapes what a terminal would act on instead of showing: control
// characters but tab and newline (ESC sequences can move the cursor,
// retitle the window or rewrite lines above), DEL, C1 controls, bidi
// overrides and invalid UTF-8. Memories are written by agents; a reviewer
// must see what they hold, not what they make the terminal do.
func inert(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 { // an invalid byte, not U+FFFD
				fmt.Fprintf(&b, "\\x%02x", s[i])
				continue
			}
			b.WriteRune(r)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case (r >= 0x80 && r <= 0x9f) || r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
