package llmapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	var got struct {
		auth string
		body request
	}
	answer := func(w http.ResponseWriter, r *http.Request) {
		got.auth = r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got.body)
		io.WriteString(w, `{"choices":[{"message":{"content":"{\"ok\":true}"}}]}`)
	}
	for _, tc := range []struct {
		name    string
		handle  http.HandlerFunc
		want    Answer
		wantErr func(error) bool
	}{
		{"answer", answer, Answer{Content: `{"ok":true}`}, nil},
		{"refusal", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"choices":[{"message":{"content":null,"refusal":"no"}}]}`)
		}, Answer{Refusal: "no"}, nil},
		{"status", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "overloaded", 503) }, Answer{},
			func(err error) bool {
				var se *StatusError
				return errors.As(err, &se) && strings.Contains(se.Status, "503") && strings.Contains(string(se.Body), "overloaded")
			}},
		{"too large", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 2000)) }, Answer{},
			func(err error) bool { return errors.Is(err, ErrTooLarge) }},
		{"no choices", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"choices":[]}`) }, Answer{},
			func(err error) bool { return errors.Is(err, ErrNoChoices) }},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `<html>`) }, Answer{},
			func(err error) bool { var de *DecodeError; return errors.As(err, &de) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handle)
			defer srv.Close()
			ans, err := Complete(context.Background(), srv.Client(), Request{URL: srv.URL, APIKey: "k", Model: "m",
				System: "sys", User: "usr", MaxBytes: 1000})
			if tc.wantErr == nil && (err != nil || ans != tc.want) {
				t.Fatalf("%+v, %v; want %+v", ans, err, tc.want)
			}
			if tc.wantErr != nil && (err == nil || !tc.wantErr(err)) {
				t.Fatalf("error %v", err)
			}
		})
	}
	b := got.body
	if got.auth != "Bearer k" || b.Model != "m" || b.Temperature != 0 || b.ResponseFormat.Type != "json_object" ||
		len(b.Messages) != 2 || b.Messages[0] != (message{"system", "sys"}) || b.Messages[1] != (message{"user", "usr"}) {
		t.Fatalf("request %+v, auth %q", got.body, got.auth)
	}
}
