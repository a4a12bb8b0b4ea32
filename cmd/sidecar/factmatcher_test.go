package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/facts"
)

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
