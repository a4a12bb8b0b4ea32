package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

func TestRetentionFromPolicyData(t *testing.T) {
	const module = "package memgate\n\ndecision := {\"risk\": \"low\", \"action\": \"apply\", \"categories\": [], \"reasons\": [{\"rule\": \"ok\", \"message\": \"ok\"}], \"affects\": []}\n"
	day := 24 * time.Hour
	cases := []struct {
		name    string
		data    string
		want    memory.Retention
		wantErr string
	}{
		{"none", `{}`, memory.Retention{}, ""},
		{"per layer and default", `{"memgate_config": {"retention": {"default_days": 365, "days": {"knowledge": 90, "preference": 0}}}}`,
			memory.Retention{Default: 365 * day, Layers: map[memory.Layer]time.Duration{memory.LayerKnowledge: 90 * day, memory.LayerPreference: 0}}, ""},
		{"unknown layer", `{"memgate_config": {"retention": {"days": {"gossip": 3}}}}`, memory.Retention{}, "unknown layer"},
		{"negative", `{"memgate_config": {"retention": {"default_days": -1}}}`, memory.Retention{}, "whole number"},
		{"a fraction", `{"memgate_config": {"retention": {"default_days": 1.5}}}`, memory.Retention{}, "whole number"},
		{"unknown key", `{"memgate_config": {"retention": {"weeks": 2}}}`, memory.Retention{}, "unknown key"},
		{"durations", `{"memgate_config": {"retention": {"default_days": "90d", "days": {"knowledge": "36h", "checkpoint": "30s", "policy": "1h30m", "preference": "0s"}}}}`,
			memory.Retention{Default: 90 * day, Layers: map[memory.Layer]time.Duration{memory.LayerKnowledge: 36 * time.Hour,
				memory.LayerCheckpoint: 30 * time.Second, memory.LayerPolicy: 90 * time.Minute, memory.LayerPreference: 0}}, ""},
		{"days as a string", `{"memgate_config": {"retention": {"default_days": " 7d"}}}`, memory.Retention{Default: 7 * day}, ""},
		{"a negative duration", `{"memgate_config": {"retention": {"days": {"knowledge": "-5m"}}}}`, memory.Retention{}, `retention.days.knowledge: want a whole number of days (0 or more), or a string such as "90d", "36h" or "30s", not "-5m"`},
		{"a unit Go lacks", `{"memgate_config": {"retention": {"default_days": "2w"}}}`, memory.Retention{}, `retention.default_days: want a whole number`},
		{"fractional days", `{"memgate_config": {"retention": {"default_days": "1.5d"}}}`, memory.Retention{}, `not "1.5d"`},
		{"a bare number as a string", `{"memgate_config": {"retention": {"default_days": "90"}}}`, memory.Retention{}, `not "90"`},
		{"an empty string", `{"memgate_config": {"retention": {"default_days": ""}}}`, memory.Retention{}, `not ""`},
		{"a boolean", `{"memgate_config": {"retention": {"default_days": true}}}`, memory.Retention{}, "not true"},
		{"more days than a duration holds", `{"memgate_config": {"retention": {"default_days": 1000000000}}}`, memory.Retention{}, "whole number"},
		{"more days than a duration holds, as a string", `{"memgate_config": {"retention": {"default_days": "1000000000d"}}}`, memory.Retention{}, "whole number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(context.Background(), FileSet{"memgate.rego": module, "data.json": tc.data})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.retention
			if got.Default != tc.want.Default || len(got.Layers) != len(tc.want.Layers) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for l, d := range tc.want.Layers {
				if got.For(l) != d {
					t.Fatalf("%s: got %v, want %v", l, got.For(l), d)
				}
			}
			if got.For(memory.LayerState) != tc.want.Default {
				t.Fatalf("state falls back to %v, want %v", got.For(memory.LayerState), tc.want.Default)
			}
		})
	}
}
