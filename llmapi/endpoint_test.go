package llmapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		raw, suffix      string
		url, display     string
		err              string // a part of the error; "" for none
		mustNotMentionIt bool   // the error must not repeat raw
	}{
		{raw: "http://127.0.0.1:8080/v1", suffix: "/chat/completions", url: "http://127.0.0.1:8080/v1/chat/completions", display: "http://127.0.0.1:8080/v1/chat/completions"},
		{raw: " http://127.0.0.1:8080/v1/ ", suffix: "/chat/completions", url: "http://127.0.0.1:8080/v1/chat/completions", display: "http://127.0.0.1:8080/v1/chat/completions"},
		{raw: "https://api.example.org/v1/chat/completions", suffix: "/chat/completions", url: "https://api.example.org/v1/chat/completions", display: "https://api.example.org/v1/chat/completions"},
		{raw: "https://api.example.org/v1?key=s3cret#frag", suffix: "/embeddings", url: "https://api.example.org/v1/embeddings?key=s3cret", display: "https://api.example.org/v1/embeddings"},
		{raw: "http://localhost:11434/v1/embeddings/", suffix: "/embeddings", url: "http://localhost:11434/v1/embeddings", display: "http://localhost:11434/v1/embeddings"},
		{raw: "", suffix: "/embeddings", err: "a URL is required"},
		{raw: "https://user:s3cret@api.example.org/v1", suffix: "/embeddings", err: "set MEMGATE_KEY instead", mustNotMentionIt: true},
		{raw: "http://[::1:bad/v1?key=s3cret", suffix: "/embeddings", err: "does not parse", mustNotMentionIt: true},
		{raw: "ftp://api.example.org/v1", suffix: "/embeddings", err: "must start with http:// or https://"},
		{raw: "http:///v1", suffix: "/embeddings", err: "has no host"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseEndpoint(tt.raw, tt.suffix, "MEMGATE_KEY")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				if tt.mustNotMentionIt && strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error repeats the credentials: %v", err)
				}
				return
			}
			if err != nil || got.URL != tt.url || got.Display != tt.display {
				t.Fatalf("got %+v, %v; want %s shown as %s", got, err, tt.url, tt.display)
			}
		})
	}
}

// TestTransportErrorsDoNotRepeatTheURL: a refused connection names neither
// the URL nor its query, and a deadline reads as a timeout.
func TestTransportErrorsDoNotRepeatTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = PostJSON(context.Background(), &http.Client{}, "http://"+addr+"/v1/embeddings?key=s3cret", "", []byte(`{}`), 100)
	var te *TransportError
	if !errors.As(err, &te) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "/v1/embeddings") {
		t.Fatalf("refused: %v (%T)", err, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = PostJSON(ctx, &http.Client{}, "http://"+addr+"/v1", "", []byte(`{}`), 100)
	if err == nil || IsTimeout(err) {
		t.Fatalf("a canceled request: %v, IsTimeout %v", err, IsTimeout(err))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	if _, err = PostJSON(ctx, &http.Client{}, "http://"+addr+"/v1", "", []byte(`{}`), 100); !IsTimeout(err) {
		t.Fatalf("a request past its deadline: %v is not a timeout", err)
	}
}

func TestServerMessage(t *testing.T) {
	for raw, want := range map[string]string{
		`{"error": {"message": "model  not\nfound"}}`: "model not found",
		`{"error": "overloaded"}`:                     "overloaded",
		"Bad Gateway\n<html>":                         "Bad Gateway",
		`{"detail": "x"}`:                             "",
		strings.Repeat("é", 200):                      strings.Repeat("é", 150) + "…",
	} {
		if got := ServerMessage([]byte(raw)); got != want {
			t.Errorf("ServerMessage(%.40q) = %.40q, want %.40q", raw, got, want)
		}
	}
}
