package slack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		retry      bool
		reason     string
		retryAfter time.Duration
		alone      bool // ThisNoticeOnly
	}{
		{"rate limited with Retry-After", &slack.RateLimitedError{RetryAfter: 7 * time.Second}, true, notify.ReasonRateLimited, 7 * time.Second, false},
		{"429 without Retry-After", slack.StatusCodeError{Code: 429}, true, notify.ReasonRateLimited, 0, false},
		{"503", slack.StatusCodeError{Code: 503}, true, notify.ReasonServerError, 0, false},
		{"408", slack.StatusCodeError{Code: 408}, true, notify.ReasonServerError, 0, false},
		// A proxy's 403 or a wrong API URL's 404 fails every notice alike: kept.
		{"403", slack.StatusCodeError{Code: 403}, true, notify.ReasonConfig, 0, false},
		{"404", slack.StatusCodeError{Code: 404}, true, notify.ReasonConfig, 0, false},
		{"413: this message only", slack.StatusCodeError{Code: 413}, false, notify.ReasonClientError, 0, false},
		// Settings errors are never dropped.
		{"invalid_auth", slack.SlackErrorResponse{Err: "invalid_auth"}, true, notify.ReasonConfig, 0, false},
		{"token_revoked", slack.SlackErrorResponse{Err: "token_revoked"}, true, notify.ReasonConfig, 0, false},
		{"missing_scope", slack.SlackErrorResponse{Err: "missing_scope"}, true, notify.ReasonConfig, 0, false},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, true, notify.ReasonConfig, 0, false},
		{"not_in_channel", slack.SlackErrorResponse{Err: "not_in_channel"}, true, notify.ReasonConfig, 0, false},
		{"is_archived", slack.SlackErrorResponse{Err: "is_archived"}, true, notify.ReasonConfig, 0, false},
		// Only what this one message can never be is dropped.
		{"msg_too_long", slack.SlackErrorResponse{Err: "msg_too_long"}, false, notify.ReasonRejected, 0, false},
		{"invalid_blocks", slack.SlackErrorResponse{Err: "invalid_blocks"}, false, notify.ReasonRejected, 0, false},
		{"message_not_found", slack.SlackErrorResponse{Err: "message_not_found"}, false, notify.ReasonRejected, 0, false},
		// An error nobody listed is kept, retried on its own.
		{"an unknown error", slack.SlackErrorResponse{Err: "some_new_error"}, true, notify.ReasonRejected, 0, true},
		{"internal_error", slack.SlackErrorResponse{Err: "internal_error"}, true, notify.ReasonServerError, 0, false},
		{"ratelimited", slack.SlackErrorResponse{Err: "ratelimited"}, true, notify.ReasonServerError, 0, false},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true, notify.ReasonNetwork, 0, false},
		{"unknown record", memory.Errorf(memory.ENOTFOUND, "memory x not found"), false, notify.ReasonInternal, 0, false},
		{"store failure", errors.New("store: view: disk on fire"), true, notify.ReasonNetwork, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			retry, err := classify(fmt.Errorf("chat.postMessage: %w", tt.err))
			var de *notify.DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("classify returned %v, not a DeliveryError", err)
			}
			if retry != tt.retry || de.Reason != tt.reason || de.RetryAfter != tt.retryAfter || de.ThisNoticeOnly != tt.alone {
				t.Fatalf("classify = (retry %v, %s, %s, alone %v), want (%v, %s, %s, %v)",
					retry, de.Reason, de.RetryAfter, de.ThisNoticeOnly, tt.retry, tt.reason, tt.retryAfter, tt.alone)
			}
		})
	}
}

// Every settings error in the table names what to fix, and every row has a
// class: a row without one would read as an unknown error.
func TestSlackErrorTable(t *testing.T) {
	for code, row := range slackErrors {
		switch row.class {
		case settings:
			if row.problem == "" {
				t.Errorf("%s: a settings error without a problem", code)
			}
		case passing, thisMessage:
			if row.problem != "" {
				t.Errorf("%s: only settings errors name a problem", code)
			}
		default:
			t.Errorf("%s: no class", code)
		}
	}
}

func TestRecheckDelayBacksOff(t *testing.T) {
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{
		{0, 10 * time.Minute}, {1, time.Minute}, {2, 2 * time.Minute}, {3, 4 * time.Minute},
		{4, 8 * time.Minute}, {5, 10 * time.Minute}, {50, 10 * time.Minute},
	} {
		if got := recheckDelay(tt.failures); got != tt.want {
			t.Errorf("recheckDelay(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		name, in string
		limit    int
		want     string // exact result, or "" to check bounds only
	}{
		{"short", "auto-publish on", 100, "auto-publish on"},
		{"escapes control characters", "a <!channel> & <@U1>", 100, "a &lt;!channel&gt; &amp; &lt;@U1&gt;"},
		{"chinese", strings.Repeat("记忆", 100), 50, ""},
		{"emoji count two", strings.Repeat("🚀", 100), 50, ""},
		{"never splits an escape", strings.Repeat("<", 100), 40, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clip(tt.in, tt.limit)
			if tt.want != "" && got != tt.want {
				t.Fatalf("clip = %q, want %q", got, tt.want)
			}
			if slackLen(got) > tt.limit || !utf8.ValidString(got) {
				t.Fatalf("clip = %q: %d characters (limit %d) or invalid UTF-8", got, slackLen(got), tt.limit)
			}
			if tt.want == "" && !strings.Contains(got, "characters)") {
				t.Fatalf("clipped text does not say so: %q", got)
			}
			if strings.Count(got, "&") != strings.Count(got, ";") {
				t.Fatalf("an escape was cut: %q", got)
			}
		})
	}
}

func TestConfigFlagsAndValidation(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	c.RegisterFlags(fs)
	err := fs.Parse([]string{"--slack-bot-token", "xoxb-1", "--slack-channel", "C1", "--slack-reviewers", " U1, U2 ,,",
		"--slack-api-url", "http://127.0.0.1:9/api", "--slack-remind-after", "30m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Enabled() || strings.Join(c.Reviewers, ",") != "U1,U2" || c.APIURL != "http://127.0.0.1:9/api/" || c.RemindAfter != 30*time.Minute {
		t.Fatalf("config %+v", c)
	}
	for name, bad := range map[string]Config{
		"no channel":             {BotToken: "xoxb-1"},
		"bot token as app token": {BotToken: "xoxb-1", Channel: "C1", AppToken: "xoxb-1"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, bad)
		}
	}
	if (Config{}).Enabled() {
		t.Error("an empty config enables Slack")
	}
}

func TestReviewMessageWithinLimitsForEveryShape(t *testing.T) {
	long := strings.Repeat("很长的记忆 with English & <tags> 🚀 ", 600)
	many := make([]string, 200)
	rules := make([]memory.Reason, 200)
	for i := range many {
		many[i] = long[:300]
		rules[i] = memory.Reason{Rule: "rule_" + strings.Repeat("x", 40), Message: long[:200]}
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	rec := &memory.Record{ID: "01J", Layer: memory.LayerKnowledge, SubjectID: long[:200], FactType: long[:200],
		Summary: long, Value: []byte(`{"text":"` + strings.Repeat("x", 5000) + `"}`), Status: memory.StatusPending,
		RiskLevel: memory.RiskHigh, Categories: many, Affects: many, Evidence: memory.Evidence{Excerpt: long, SourceRef: long},
		Actor:    memory.Actor{AgentID: long[:250], UserID: long[:250], RunID: long[:250], SessionID: long[:250], Dialect: "mem0", Client: long[:250], RemoteAddr: "127.0.0.1:1"},
		Decision: &memory.Decision{PolicyError: long, Revision: "abcdef0123456789abcdef"}, CreatedAt: now}
	conflicting := make([]string, 40)
	for i := range conflicting {
		conflicting[i] = "01JCONFLICT"
	}
	decided := rec.Clone()
	decided.Status = memory.StatusActive
	decided.Review = &memory.Review{Outcome: memory.OutcomeApproved, By: long[:250], Route: "admin", Note: long, At: now}
	for name, v := range map[string]reviewView{
		"pending": {Record: rec, Current: rec, Conflicting: conflicting, Stale: true, Rules: rules, Now: now},
		"decided": {Record: decided, Replaced: rec, Point: &memory.RollbackPoint{ID: "rp_01J", Replaced: "01I"}, Rules: rules},
	} {
		t.Run(name, func(t *testing.T) {
			fallback, blocks := reviewMessage(v)
			if len(blocks) > maxBlocks || slackLen(fallback) > maxFallback {
				t.Fatalf("%d blocks, fallback of %d characters", len(blocks), slackLen(fallback))
			}
			for i, b := range blocks {
				switch b := b.(type) {
				case *slack.SectionBlock:
					if b.Text != nil && slackLen(b.Text.Text) > maxSectionText {
						t.Errorf("section %d: %d characters", i, slackLen(b.Text.Text))
					}
					for _, f := range b.Fields {
						if slackLen(f.Text) > maxFieldText {
							t.Errorf("field in block %d: %d characters", i, slackLen(f.Text))
						}
					}
				case *slack.HeaderBlock:
					if slackLen(b.Text.Text) > maxHeaderText {
						t.Errorf("header: %d characters", slackLen(b.Text.Text))
					}
				case *slack.ContextBlock:
					for _, el := range b.ContextElements.Elements {
						if tx, ok := el.(*slack.TextBlockObject); ok && slackLen(tx.Text) > 3000 {
							t.Errorf("context %d: %d characters", i, slackLen(tx.Text))
						}
					}
				}
			}
		})
	}
}

func TestReviewersGroupCache(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	calls, fail := 0, false
	members := []string{"UGROUP1"}
	r := newReviewers([]string{"ULISTED"}, "S1", time.Minute, func(_ context.Context, g string) ([]string, error) {
		calls++
		if fail {
			return nil, errors.New("slack unreachable")
		}
		return members, nil
	}, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	check := func(user string, want bool, wantErr bool) {
		t.Helper()
		ok, err := r.allowed(context.Background(), user)
		if ok != want || (err != nil) != wantErr {
			t.Fatalf("allowed(%s) = %v, %v; want %v (error %v)", user, ok, err, want, wantErr)
		}
	}
	check("ULISTED", true, false)
	check("", false, false)
	if calls != 0 {
		t.Fatal("a listed reviewer needed a group lookup")
	}
	check("UGROUP1", true, false)
	check("UOTHER", false, false)
	if calls != 1 {
		t.Fatalf("%d lookups within the TTL, want 1", calls)
	}
	members = []string{"UGROUP2"} // membership changes; seen after the TTL
	now = now.Add(2 * time.Minute)
	check("UGROUP1", false, false)
	check("UGROUP2", true, false)
	fail = true // Slack down after the TTL: the last known members still decide
	now = now.Add(2 * time.Minute)
	check("UGROUP2", true, false)

	// Nothing cached and no answer: fail closed, with an error to report.
	cold := newReviewers(nil, "S1", time.Minute, func(context.Context, string) ([]string, error) {
		return nil, errors.New("slack unreachable")
	}, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	if ok, err := cold.allowed(context.Background(), "UGROUP2"); ok || err == nil {
		t.Fatalf("cold cache without Slack: %v, %v; want refused with an error", ok, err)
	}
}
