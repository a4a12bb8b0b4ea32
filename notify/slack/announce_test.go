package slack_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memgate/memgate/memory"
	slacknotify "github.com/memgate/memgate/notify/slack"
)

func TestParkedWriteAnnouncesTheFiveQuestions(t *testing.T) {
	e := newEnv(t, nil)
	old, parked := e.parkOverride()
	m := e.messageFor(parked.ID)

	if got := len(e.fake.callsTo("chat.postMessage")); got != 1 {
		t.Fatalf("%d messages posted, want exactly one", got)
	}
	if m.Channel != channel {
		t.Fatalf("posted to %q, want %q", m.Channel, channel)
	}
	text := allText(m.Blocks)
	for _, want := range []struct{ question, text string }{
		{"who: agent", "openclaw-main"}, {"who: user", "alice"}, {"who: run", "run-7"}, {"who: dialect", "mem0"},
		{"old", "Auto-publish is ON for project alpha"}, {"old id", old.ID},
		{"new", "Auto-publish is OFF for project alpha"},
		{"evidence", "stop publishing automatically until the audit is done"}, {"evidence source", "conv-42#m7"},
		{"affects", "release pipeline: publish step"}, {"affects", "weekly report"},
		{"rollback point", memory.RollbackPointID(parked.ID)},
		{"risk", "high"}, {"category", "state_override"}, {"category", "inference"},
		{"rule", "state_override"}, {"rule", "inference_over_state"},
		{"cli id", "sidecar review approve " + parked.ID},
	} {
		if !strings.Contains(text, want.text) {
			t.Errorf("message lacks %s (%q):\n%s", want.question, want.text, text)
		}
	}
	// Old and new side by side: the two fields of one section.
	sideBySide := false
	for _, b := range m.Blocks {
		if fields, ok := b["fields"].([]any); ok && len(fields) == 2 {
			l, r := fields[0].(map[string]any)["text"].(string), fields[1].(map[string]any)["text"].(string)
			sideBySide = strings.Contains(l, "ON") && strings.Contains(r, "OFF")
		}
	}
	if !sideBySide {
		t.Error("old and new are not side by side in one section's fields")
	}
	// Link-free: ids are code, unfurling is off.
	if strings.Contains(text, "http://") || strings.Contains(text, "https://") {
		t.Errorf("message carries a link:\n%s", text)
	}
	call := e.fake.callsTo("chat.postMessage")[0]
	if call.Form.Get("unfurl_links") != "false" {
		t.Errorf("link unfurling not disabled: %v", call.Form)
	}
	// A state write may not be appended: Approve and Reject only.
	for action, want := range map[string]bool{slacknotify.ActionApprove: true, slacknotify.ActionAppend: false, slacknotify.ActionReject: true} {
		if _, ok := buttonValue(m.Blocks, action); ok != want {
			t.Errorf("button %s present=%v, want %v", action, ok, want)
		}
	}
	// Every button carries the record and the parked version the message shows.
	for _, action := range []string{slacknotify.ActionApprove, slacknotify.ActionReject} {
		v, _ := buttonValue(m.Blocks, action)
		var got struct {
			ID string `json:"id"`
			V  string `json:"v"`
		}
		if err := json.Unmarshal([]byte(v), &got); err != nil || got.ID != parked.ID || got.V != parked.ParkVersion() {
			t.Errorf("%s button carries %q, want the record id %s and version %s", action, v, parked.ID, parked.ParkVersion())
		}
	}
}

func TestAppendButtonOnlyWhereTheLayerAllows(t *testing.T) {
	e := newEnv(t, nil)
	knowledge := e.submit(memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", FactType: "release.cadence",
		Summary: "Releases seem to happen every Tuesday", CandidateSource: memory.SourceInference}).Record
	policy := e.submit(memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "deploy.approval",
		Summary: "Deploys need no human approval"}).Record
	for _, tt := range []struct {
		id         string
		wantAppend bool
	}{{knowledge.ID, true}, {policy.ID, false}} {
		m := e.messageFor(tt.id)
		if _, ok := buttonValue(m.Blocks, slacknotify.ActionAppend); ok != tt.wantAppend {
			t.Errorf("%s: append button %v, want %v", tt.id, ok, tt.wantAppend)
		}
	}
}

// Slack's limits: 50 blocks, 3000 characters in a section's text, 2000 in a
// field, 150 in a header; Slack counts UTF-16 code units.
func checkBlockLimits(t *testing.T, blocks []map[string]any) {
	t.Helper()
	if len(blocks) > 50 {
		t.Errorf("%d blocks, Slack allows 50", len(blocks))
	}
	length := func(s string) int { return len(utf16.Encode([]rune(s))) }
	for i, b := range blocks {
		if txt, ok := b["text"].(map[string]any); ok {
			s := txt["text"].(string)
			limit := 3000
			if b["type"] == "header" {
				limit = 150
			}
			if length(s) > limit {
				t.Errorf("block %d (%s): text of %d characters, limit %d", i, b["type"], length(s), limit)
			}
			if !utf8.ValidString(s) {
				t.Errorf("block %d: text is not valid UTF-8", i)
			}
		}
		if fields, ok := b["fields"].([]any); ok {
			for _, f := range fields {
				if s := f.(map[string]any)["text"].(string); length(s) > 2000 || !utf8.ValidString(s) {
					t.Errorf("block %d: field of %d characters (limit 2000) or invalid UTF-8", i, length(s))
				}
			}
		}
		if els, ok := b["elements"].([]any); ok && b["type"] == "context" {
			for _, el := range els {
				if s, _ := el.(map[string]any)["text"].(string); length(s) > 3000 {
					t.Errorf("block %d: context element of %d characters", i, length(s))
				}
			}
		}
	}
}

func TestLongChineseAndEnglishMemoriesStayWithinSlackLimits(t *testing.T) {
	e := newEnv(t, nil)
	// Near memgate's bounds: 16 KB of summary, 16 KB of evidence.
	zh := strings.Repeat("项目阿尔法的自动发布已关闭，直到审计完成。", 250) // ~15.7 KB, ~5,000 characters
	en := strings.Repeat("The deploy window moved to Friday 18:00 UTC <!channel> & more. ", 250)
	emoji := strings.Repeat("🚀 发布 ", 1000)
	old := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "项目-alpha", FactType: "发布.自动", Summary: en}).Record
	parked := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "项目-alpha", FactType: "发布.自动", Summary: zh,
		Evidence: memory.Evidence{Excerpt: emoji, SourceRef: strings.Repeat("参考", 400)},
		Actor:    memory.Actor{AgentID: "智能体-1", Dialect: "mcp"}}).Record
	m := e.messageFor(parked.ID)
	checkBlockLimits(t, m.Blocks)
	text := allText(m.Blocks)
	if !strings.Contains(text, "项目阿尔法的自动发布已关闭") || !strings.Contains(text, "The deploy window moved") {
		t.Error("the beginning of the old or new text is missing")
	}
	if !strings.Contains(text, "characters)") {
		t.Error("a clipped text does not say it was clipped")
	}
	if strings.Contains(text, "<!channel>") {
		t.Error("user text can mention the channel: <!channel> was not escaped")
	}
	if !strings.Contains(text, old.ID) || !strings.Contains(text, "智能体-1") {
		t.Error("ids or actor missing from the message")
	}
	if len(m.Text) == 0 || utf8.RuneCountInString(m.Text) > 300 {
		t.Errorf("notification text of %d characters", utf8.RuneCountInString(m.Text))
	}
}
