package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/facts"
)

// TestDebugListenerServesTheProfilerOnLoopbackOnly: the profiler has no
// token, so a routable address is refused; on loopback it answers.
func TestDebugListenerServesTheProfilerOnLoopbackOnly(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:7602", ":7602"} {
		if _, err := debugListener(addr, log); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("debugListener(%q) = %v, want a refusal", addr, err)
		}
	}
	l, err := debugListener("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	go l.srv.Serve(l.ln)
	defer l.srv.Close()
	resp, err := http.Get("http://" + l.ln.Addr().String() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("GET /debug/pprof/: %d %.200s", resp.StatusCode, body)
	}
}

// TestFactMatcherFollowsTheFlags: the comparison alone without
// --extractor-url or with --extractor-relate=false; with it, the model too.
func TestFactMatcherFollowsTheFlags(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name   string
		cfg    serveConfig
		model  bool
		errHas string
	}{
		{"no extractor", serveConfig{extractorRelate: true}, false, ""},
		{"extractor", serveConfig{extractorURL: "http://127.0.0.1:8080/v1", extractorRelate: true, relateTimeout: time.Second}, true, ""},
		{"relate off", serveConfig{extractorURL: "http://127.0.0.1:8080/v1"}, false, ""},
		{"bad URL", serveConfig{extractorURL: "ftp://x/v1", extractorRelate: true}, false, "--extractor-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := factMatcher(tc.cfg, nil, log)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("%T, %v; want an error naming %s", m, err, tc.errHas)
				}
				return
			}
			_, isModel := m.(*facts.ModelMatcher)
			if err != nil || isModel != tc.model {
				t.Fatalf("%T, %v", m, err)
			}
		})
	}
}
