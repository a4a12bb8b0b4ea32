package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
)

// CheckSlackLimits checks every text in a Block Kit document (a message's
// blocks, a modal view), decoded from JSON, against Slack's limits.
var CheckSlackLimits = checkSlackLimits

// Slack's Block Kit limits (api.slack.com/reference/block-kit), in UTF-16
// code units as Slack counts them.
var slackLimits = map[string]int{
	"text object": 3000, "header": 150, "section fields": 10, "field": 2000, "context elements": 10,
	"actions elements": 25, "button text": 75, "button value": 2000, "action_id": 255, "block_id": 255,
	"input label": 2000, "placeholder": 150, "modal title": 24, "private_metadata": 3000, "modal blocks": 100,
}

func checkSlackLimits(t testing.TB, where string, doc any) {
	t.Helper()
	over := func(what string, n int) {
		t.Helper()
		if n > slackLimits[what] {
			t.Errorf("%s: %s of %d, Slack allows %d", where, what, n, slackLimits[what])
		}
	}
	textOf := func(v any) string {
		m, _ := v.(map[string]any)
		s, _ := m["text"].(string)
		return s
	}
	eachObject(doc, func(x map[string]any) {
		typ, _ := x["type"].(string)
		if s, ok := x["text"].(string); ok && (typ == "mrkdwn" || typ == "plain_text") {
			if s == "" || !utf8.ValidString(s) {
				t.Errorf("%s: a text object is empty or not UTF-8: %q", where, s)
			}
			over("text object", slackLen(s))
		}
		if id, ok := x["action_id"].(string); ok {
			over("action_id", len(id))
		}
		if id, ok := x["block_id"].(string); ok {
			over("block_id", len(id))
		}
		switch typ {
		case "header":
			over("header", slackLen(textOf(x["text"])))
		case "section":
			fields, _ := x["fields"].([]any)
			over("section fields", len(fields))
			for _, f := range fields {
				over("field", slackLen(textOf(f)))
			}
		case "context":
			els, _ := x["elements"].([]any)
			over("context elements", len(els))
		case "actions":
			els, _ := x["elements"].([]any)
			over("actions elements", len(els))
		case "button":
			over("button text", slackLen(textOf(x["text"])))
			value, _ := x["value"].(string)
			over("button value", slackLen(value))
		case "input":
			over("input label", slackLen(textOf(x["label"])))
		case "plain_text_input":
			over("placeholder", slackLen(textOf(x["placeholder"])))
		case "modal":
			for _, k := range []string{"title", "submit", "close"} {
				over("modal title", slackLen(textOf(x[k])))
			}
			meta, _ := x["private_metadata"].(string)
			over("private_metadata", slackLen(meta))
			blocks, _ := x["blocks"].([]any)
			over("modal blocks", len(blocks))
		}
	})
}

func mrkdwnTexts(doc any) []string {
	var out []string
	eachObject(doc, func(x map[string]any) {
		if s, ok := x["text"].(string); ok && x["type"] == "mrkdwn" {
			out = append(out, s)
		}
	})
	return out
}

// eachObject calls fn with every object in v, a document decoded from JSON,
// then goes into its values: the walk both checks above share.
func eachObject(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			eachObject(c, fn)
		}
	case map[string]any:
		fn(x)
		for _, c := range x {
			eachObject(c, fn)
		}
	}
}

// Every text memgate builds for Slack stays within Slack's limits, with a
// visible ellipsis, whatever the size of what it shows: here far beyond
// what a candidate may carry (reasons, notes and names that only policy or
// an operator sets are not bounded on the way in).
func TestEveryTextWithinSlackLimitsWhateverItShows(t *testing.T) {
	huge := strings.Repeat("很长的记忆 with English & <!channel> <@U1> 🚀 `tick` *bold* ", 2000) // ~100,000 characters
	ids := strings.Repeat("<&>🚀", 64)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	many := make([]string, 300)
	rules := make([]memory.Reason, 300)
	for i := range many {
		many[i] = huge[:3000]
		rules[i] = memory.Reason{Rule: huge[:500], Message: huge}
	}
	rec := &memory.Record{ID: ids, SlotID: ids, Layer: memory.LayerKnowledge, SubjectID: huge, FactType: huge, Summary: huge,
		Value: json.RawMessage(`{"t":"` + strings.Repeat("x", 70000) + `"}`), Status: memory.StatusPending, RiskLevel: memory.RiskHigh,
		Categories: many, Affects: many, Evidence: memory.Evidence{Excerpt: huge, SourceRef: huge}, ExpectedHead: ids, Reparked: 1 << 40,
		CandidateSource: memory.Source(huge), Actor: memory.Actor{AgentID: huge, UserID: huge, RunID: huge, SessionID: huge, Dialect: huge, Client: huge, RemoteAddr: huge},
		Decision: &memory.Decision{PolicyError: huge, Revision: huge}, CreatedAt: now}
	conflicting := []string{ids, ids, ids, ids, ids, ids, ids, ids, ids, ids, ids, ids}
	views := map[string]reviewView{
		"pending": {Record: rec, Current: rec, Conflicting: conflicting, Stale: true, Rules: rules, Now: now},
	}
	for name, rv := range map[string]*memory.Review{
		"approved in Slack by a huge id": {Outcome: memory.OutcomeApproved, By: huge, Route: routeSlack, Note: huge, At: now},
		"approved as append by admin":    {Outcome: memory.OutcomeApproved, By: huge, Route: huge, Mode: memory.ModeAppend, Note: huge, At: now},
		"rejected":                       {Outcome: memory.OutcomeRejected, By: huge, Route: "cli", Note: huge, At: now},
	} {
		d := rec.Clone()
		d.Status, d.Review = memory.StatusActive, rv
		if rv.Outcome == memory.OutcomeRejected {
			d.Status = memory.StatusRejected
		}
		views[name] = reviewView{Record: d, Replaced: rec, Point: &memory.RollbackPoint{ID: ids, Replaced: ids}, Rules: rules}
	}
	for name, v := range views {
		t.Run(name, func(t *testing.T) {
			fallback, blocks := reviewMessage(v)
			if len(blocks) > maxBlocks || slackLen(fallback) > maxFallback || !strings.HasSuffix(fallback, "…") {
				t.Fatalf("%d blocks, fallback of %d characters (%q)", len(blocks), slackLen(fallback), fallback)
			}
			checkSlackLimits(t, name, testkit.AsJSON(t, blocks))
			all := fmt.Sprint(testkit.AsJSON(t, blocks))
			if !strings.Contains(all, "…") {
				t.Error("nothing says it was cut")
			}
			for _, s := range mrkdwnTexts(testkit.AsJSON(t, blocks)) { // plain text is not parsed for mentions
				if strings.Contains(s, "<!channel>") || strings.Contains(s, "<@U1>") {
					t.Errorf("user text reached Slack unescaped: %.300s", s)
				}
			}
		})
	}
	t.Run("reject dialog", func(t *testing.T) {
		meta, _ := json.Marshal(rejectMetadata{ID: ids, Version: rec.ParkVersion(), Channel: "C1"})
		checkSlackLimits(t, "modal", testkit.AsJSON(t, rejectModal(rec, string(meta))))
	})
	t.Run("stale, reminder, rollback and quarantine texts", func(t *testing.T) {
		ex := &memory.Explanation{Record: rec, Events: []*memory.Event{{Type: memory.EventStale, By: huge, Related: []string{huge, huge}}}}
		for name, b := range map[string]slack.Block{
			"stale":      section(":warning: " + staleText(ex)),
			"quarantine": section(":no_entry: *Quarantine*\n" + clip(huge, maxSectionText-30)),
			"outcome":    section(outcomeText(views["approved in Slack by a huge id"].Record)),
		} {
			checkSlackLimits(t, name, testkit.AsJSON(t, []slack.Block{b}))
		}
		if n := slackLen(plainClip(huge, maxFallback)); n > maxFallback {
			t.Errorf("fallback of %d", n)
		}
	})
}

func TestBoundNeverLeavesHalfAToken(t *testing.T) {
	for _, tail := range []string{"&amp;", "&lt;", "<@U0REVIEWER1>", "<!date^1790000000^{date_short_pretty} {time}|2026-12-01 09:00 UTC>"} {
		for cut := 20; cut < 20+len(tail)+2; cut++ {
			s := strings.Repeat("a", 18) + tail + strings.Repeat("b", 50)
			got := bound(s, cut)
			if slackLen(got) > cut || !strings.HasSuffix(got, "…") {
				t.Fatalf("bound(%q, %d) = %q", s, cut, got)
			}
			body := strings.TrimSuffix(got, "…")
			if strings.Count(body, "<") != strings.Count(body, ">") || strings.Count(body, "&") != strings.Count(body, ";") {
				t.Fatalf("bound(%q, %d) = %q: half a token", s, cut, got)
			}
		}
	}
}

func TestButtonValueRoundTrip(t *testing.T) {
	r := &memory.Record{ID: "01J0ABC", ExpectedHead: "01J0HEAD", Reparked: 2}
	got := parseButton(buttonValue(r))
	if got.ID != r.ID || got.Version != r.ParkVersion() {
		t.Fatalf("round trip: %+v", got)
	}
	for _, legacy := range []string{"01J0ABC", "{not json", `{"v":"1:x"}`} {
		if got := parseButton(legacy); got.ID != legacy || got.Version != "" {
			t.Fatalf("parseButton(%q) = %+v, want the bare id without a version", legacy, got)
		}
	}
}
