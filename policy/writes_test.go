package policy

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/secrets"
)

// write is one memory write as a surface hands it to the governor.
type write struct {
	name     string
	summary  string
	layer    memory.Layer // "" for free text (Mem0, MCP)
	factType string
	subject  string // "" = the scope's user, as the governor defaults it
	value    string // JSON
	source   memory.Source
	evidence string
	// sourceRef is the evidence's source; metadata the writer's.
	sourceRef string
	metadata  map[string]any
	op        memory.Op
	current   *memory.Record // the slot's active version
	pending   []*memory.Record
	want      outcome
}

type outcome struct {
	action     memory.Action
	risk       memory.Risk // "" = not checked
	categories []string
	layer      memory.Layer
	factType   string
	subject    string
	value      string // JSON; "" = none derived
	rule       string // a rule that must fire; "" = not checked
}

// activeRecord is a slot's active version.
func activeRecord(layer memory.Layer, summary, value string) *memory.Record {
	r := &memory.Record{ID: "01JACTIVE00000000000000000", SlotID: "slot_x", Op: memory.OpWrite, Layer: layer,
		Summary: summary, Status: memory.StatusActive, CandidateSource: memory.SourceUser,
		CreatedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	if value != "" {
		r.Value = json.RawMessage(value)
	}
	return r
}

func pendingRecord(layer memory.Layer, summary, value string) *memory.Record {
	r := activeRecord(layer, summary, value)
	r.ID, r.Status = "01JPENDING0000000000000000", memory.StatusPending
	return r
}

var (
	offAlpha   = activeRecord(memory.LayerPolicy, "auto-publish is disabled for project alpha", `{"enabled":false}`)
	phase2     = activeRecord(memory.LayerState, "Project alpha is in phase 2", "")
	chinese    = activeRecord(memory.LayerPreference, "请用中文回答", "")
	rateLimit  = activeRecord(memory.LayerKnowledge, "The API allows 60 requests a minute", "")
	phaseValue = activeRecord(memory.LayerState, "phase 2", `{"phase":"2"}`)
)

// realisticWrites are memory writes an agent makes, in English and Chinese:
// free text as Mem0 and MCP send it and structured native writes, with and
// without an active version and parked writes in their slot, from users, tools
// and model inferences.
var realisticWrites = []write{
	// Free text: strategy constraints and permission boundaries.
	{name: "auto-publish off, English", summary: "Auto-publish is disabled for project Alpha.",
		want: outcome{action: "review", risk: "high", categories: []string{"strategy"}, layer: "policy", factType: "publish.auto", subject: "project-alpha", value: `{"enabled":false}`, rule: "strategy_constraint"}},
	{name: "auto-publish off, Chinese", summary: "项目 alpha 当前阶段禁止自动发布",
		want: outcome{action: "review", risk: "high", categories: []string{"strategy"}, layer: "policy", factType: "publish.auto", subject: "project-alpha", value: `{"enabled":false}`}},
	{name: "auto-publish back on overrides", summary: "Turn automatic publishing back on for project alpha", current: offAlpha,
		want: outcome{action: "review", categories: []string{"state_override", "strategy"}, layer: "policy", factType: "publish.auto", subject: "project-alpha", value: `{"enabled":true}`, rule: "state_override"}},
	{name: "auto-publish resumed, Chinese, overrides", summary: "项目alpha恢复自动发布", current: offAlpha,
		want: outcome{action: "review", categories: []string{"state_override", "strategy"}, layer: "policy", factType: "publish.auto", subject: "project-alpha", value: `{"enabled":true}`}},
	{name: "auto-publish restated in Chinese is no override", summary: "项目 alpha 禁止自动发布", current: offAlpha,
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "policy", factType: "publish.auto", subject: "project-alpha", value: `{"enabled":false}`, rule: "same_as_current"}},
	{name: "manual confirmation, English", summary: "Production deployments for project beta require manual confirmation",
		want: outcome{action: "review", categories: []string{"strategy"}, layer: "policy", factType: "confirm.manual", subject: "project-beta", value: `{"required":true}`}},
	{name: "manual confirmation, Chinese", summary: "项目beta上线前需要人工确认",
		want: outcome{action: "review", categories: []string{"strategy"}, layer: "policy", factType: "confirm.manual", subject: "project-beta", value: `{"required":true}`}},
	{name: "permission boundary, English", summary: "The agent may only access the staging database of project gamma",
		want: outcome{action: "review", risk: "high", categories: []string{"strategy"}, layer: "policy", factType: "access.scope", subject: "project-gamma", rule: "permission_boundary", value: `{"allowed":true}`}},
	{name: "permission boundary, Chinese", summary: "agent 对项目 gamma 的生产库没有访问权限",
		want: outcome{action: "review", categories: []string{"strategy"}, layer: "policy", factType: "access.scope", subject: "project-gamma", value: `{"allowed":false}`, rule: "permission_boundary"}},
	{name: "data that must not change, English", summary: "Never modify the invoices table",
		want: outcome{action: "review", categories: []string{"strategy"}, layer: "policy", factType: "data.modify", value: `{"allowed":false}`}},
	{name: "data that must not change, Chinese", summary: "禁止修改项目delta的用户表",
		want: outcome{action: "review", categories: []string{"strategy"}, layer: "policy", factType: "data.modify", subject: "project-delta", value: `{"allowed":false}`}},

	// Free text: state.
	{name: "new project phase", summary: "Project alpha is in phase 3",
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "state", factType: "status.phase", subject: "project-alpha", rule: "new_fact"}},
	{name: "project phase change", summary: "Project alpha is now in phase 3",
		want: outcome{action: "review", risk: "high", categories: []string{"state_override"}, layer: "state", factType: "status.phase", subject: "project-alpha", rule: "status_change"}},
	{name: "project phase override", summary: "Project alpha is now in phase 3", current: phase2,
		want: outcome{action: "review", risk: "high", categories: []string{"state_override"}, layer: "state", factType: "status.phase", subject: "project-alpha", rule: "state_override"}},
	{name: "project phase, Chinese", summary: "项目alpha当前阶段是测试阶段",
		want: outcome{action: "apply", categories: []string{}, layer: "state", factType: "status.phase", subject: "project-alpha"}},
	{name: "deadline", summary: "The deadline for project alpha is March 3",
		want: outcome{action: "apply", categories: []string{}, layer: "state", factType: "status.deadline", subject: "project-alpha"}},
	{name: "owner", summary: "The owner of project alpha is Li Wei",
		want: outcome{action: "apply", categories: []string{}, layer: "state", factType: "status.owner", subject: "project-alpha"}},
	{name: "state racing a parked write", summary: "Project alpha is in phase 3",
		pending: []*memory.Record{pendingRecord(memory.LayerState, "Project alpha is now in phase 4", "")},
		want:    outcome{action: "review", risk: "medium", categories: []string{}, layer: "state", factType: "status.phase", rule: "pending_conflict"}},

	// Free text: checkpoints, preferences, knowledge.
	{name: "checkpoint, English", summary: "Finished step 3 of the data migration",
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "checkpoint", rule: "checkpoint"}},
	{name: "checkpoint, Chinese", summary: "迁移任务已完成第三步，下一步是校验数据",
		want: outcome{action: "apply", categories: []string{}, layer: "checkpoint"}},
	{name: "preference, English", summary: "I prefer concise answers with code first",
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "preference", rule: "preference"}},
	{name: "language preference, Chinese", summary: "请用中文回答",
		want: outcome{action: "apply", categories: []string{}, layer: "preference", factType: "preference.language"}},
	{name: "language preference changes", summary: "Please reply in English", current: chinese,
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "preference", factType: "preference.language"}},
	{name: "knowledge", summary: "The Berlin office opens at 9am",
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "knowledge", rule: "knowledge_verified"}},
	{name: "knowledge, Chinese", summary: "柏林办公室早上九点开门",
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "knowledge"}},

	// Free text: secrets.
	{name: "password", summary: "My password is hunter2",
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge", rule: "secret_detected"}},
	{name: "API key", summary: "api key: sk-live-0123456789abcdefABCDEF",
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge"}},
	{name: "password, Chinese", summary: "数据库密码是 Passw0rd!",
		want: outcome{action: "reject", categories: []string{}, layer: "knowledge"}},
	{name: "secret in a strategy constraint", summary: "auto-publish for project alpha uses token: ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		want: outcome{action: "reject", categories: []string{"strategy"}, layer: "policy", factType: "publish.auto"}},

	// Free text: example and test keys are keys, split or not.
	{name: "AWS's documented example key", summary: "Example creds from the AWS docs: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge", rule: "secret_detected"}},
	{name: "Stripe publishable test key", summary: "checkout uses pk_test_TYooMQauvdEDq54NiTphI7jx",
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge", rule: "secret_detected"}},
	{name: "GitHub token split over lines", summary: "the bot token:\nghp_gy902Hmr\nHx7kUeUjeYee2FOd\nvEICn8jaLh4P",
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge", rule: "secret_detected"}},

	// Free text: personal data (pii_detected, not secret_detected).
	{name: "test card number", summary: "My card number is 4111 1111 1111 1111",
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge", rule: "pii_detected"}},
	{name: "Chinese resident id", summary: "我的身份证号是11010519491231002X",
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge", rule: "pii_detected"}},
	{name: "IBAN in metadata", summary: "Rent goes to the landlord's account", metadata: map[string]any{"iban": "DE89 3704 0044 0532 0130 00"},
		want: outcome{action: "reject", risk: "high", categories: []string{}, layer: "knowledge", rule: "pii_detected"}},
	{name: "parcel and phone numbers are no PII", summary: "Parcel 1Z999AA10123456784 arrived on 2024-03-12; the courier's phone is +1 415 555 0132",
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "knowledge", rule: "knowledge_verified"}},

	// Free text: model inferences.
	{name: "inferred preference", summary: "The user probably prefers dark mode", source: memory.SourceInference,
		want: outcome{action: "apply", categories: []string{}, layer: "preference"}},
	{name: "inferred state", summary: "Project alpha is probably in phase 4 now", source: memory.SourceInference,
		want: outcome{action: "review", risk: "high", categories: []string{"inference"}, layer: "state", factType: "status.phase", rule: "inference_key_fact"}},
	{name: "inferred knowledge without evidence", summary: "The team seems to use PostgreSQL", source: memory.SourceInference,
		want: outcome{action: "apply", risk: "medium", categories: []string{"inference"}, layer: "knowledge", rule: "inference_unverified"}},
	{name: "inferred knowledge with evidence", summary: "The team uses PostgreSQL 16", source: memory.SourceInference, evidence: "we run everything on Postgres 16",
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "knowledge", rule: "knowledge_verified"}},
	{name: "inferred strategy, Chinese", summary: "看起来项目alpha应该关闭自动发布", source: memory.SourceInference,
		want: outcome{action: "review", risk: "high", categories: []string{"inference", "strategy"}, layer: "policy", factType: "publish.auto", subject: "project-alpha", value: `{"enabled":false}`}},

	// Structured native writes.
	{name: "native policy", layer: "policy", factType: "publish.auto", subject: "project-alpha", summary: "auto-publish off", value: `{"enabled":false}`,
		want: outcome{action: "review", risk: "high", categories: []string{"strategy"}, layer: "policy", factType: "publish.auto", subject: "project-alpha"}},
	{name: "native policy repeated", layer: "policy", factType: "publish.auto", subject: "project-alpha", summary: "auto publish: off", value: `{"enabled": false}`, current: offAlpha,
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "policy", factType: "publish.auto", rule: "same_as_current"}},
	{name: "native state value override", layer: "state", factType: "status.phase", subject: "project-alpha", summary: "phase 3", value: `{"phase":"3"}`, current: phaseValue,
		want: outcome{action: "review", risk: "high", categories: []string{"state_override"}, layer: "state", factType: "status.phase"}},
	{name: "native new state", layer: "state", factType: "release.version", subject: "project-alpha", summary: "v2.4.1 is released", value: `{"version":"2.4.1"}`,
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "state", factType: "release.version"}},
	{name: "native knowledge override", layer: "knowledge", factType: "api.rate_limit", subject: "vendor-x", summary: "The API allows 100 requests a minute", current: rateLimit,
		want: outcome{action: "review", risk: "medium", categories: []string{"state_override"}, layer: "knowledge", factType: "api.rate_limit", rule: "knowledge_override"}},
	{name: "tool knowledge", layer: "knowledge", subject: "repo-x", summary: "CI takes 14 minutes on main", source: memory.SourceTool,
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "knowledge"}},
	{name: "checkpoint advances", layer: "checkpoint", factType: "task.progress", subject: "run-7", summary: "step 4 of 6 done",
		current: activeRecord(memory.LayerCheckpoint, "step 3 of 6 done", ""),
		want:    outcome{action: "apply", risk: "low", categories: []string{}, layer: "checkpoint", factType: "task.progress", rule: "checkpoint"}},
	{name: "delete of a state fact", op: memory.OpDelete, layer: "state", factType: "status.phase", subject: "project-alpha", current: phase2,
		want: outcome{action: "review", risk: "high", categories: []string{"state_override"}, layer: "state", factType: "status.phase", rule: "delete_key_fact"}},
	{name: "delete of a preference", op: memory.OpDelete, layer: "preference", factType: "preference.language", subject: "user-1", current: chinese,
		want: outcome{action: "apply", risk: "low", categories: []string{}, layer: "preference", factType: "preference.language", rule: "delete"}},
	{name: "native state same as parked", layer: "state", factType: "status.phase", subject: "project-alpha", summary: "Project alpha is in phase 4",
		pending: []*memory.Record{pendingRecord(memory.LayerState, "project alpha is in phase 4.", "")},
		want:    outcome{action: "apply", categories: []string{}, layer: "state", factType: "status.phase", rule: "new_fact"}},
	{name: "strategy filed as knowledge", layer: "knowledge", subject: "project-alpha", summary: "auto-publish is off for project alpha",
		want: outcome{action: "review", risk: "high", categories: []string{"strategy"}, layer: "policy", factType: "publish.auto", rule: "strategy_in_text"}},
	{name: "tool leaks a key in evidence", layer: "knowledge", subject: "repo-x", summary: "deploys use the AWS account", source: memory.SourceTool, evidence: "AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP",
		want: outcome{action: "reject", categories: []string{}, layer: "knowledge"}},
	{name: "inferred state override", layer: "state", factType: "status.phase", subject: "project-alpha", summary: "Project alpha is in phase 5", source: memory.SourceInference, current: phase2,
		want: outcome{action: "review", risk: "high", categories: []string{"inference", "state_override"}, layer: "state", factType: "status.phase"}},
}

// evaluator is what the governor asks: placement, then a decision, or
// both in one query.
type evaluator interface {
	memory.Classifier
	memory.WritePolicy
}

// submit runs a write through policy the way the governor does: a free-text
// write is first placed (layer, fact type, subject, value), then decided
// against its slot's state.
func submit(ctx context.Context, t testing.TB, c evaluator, w write) (memory.Decision, *memory.PolicyInput) {
	t.Helper()
	rec := &memory.Record{ID: "01JCAND000000000000000000", Op: w.op, Layer: w.layer, SubjectID: w.subject,
		FactType: w.factType, Summary: w.summary, Status: memory.StatusPending, CandidateSource: w.source,
		Actor: memory.Actor{AgentID: "openclaw", UserID: "user-1", Dialect: "mem0"}, Scope: memory.Scope{UserID: "user-1"},
		Evidence: memory.Evidence{Excerpt: w.evidence, SourceRef: w.sourceRef}, Metadata: w.metadata,
		CreatedAt: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	if rec.Op == "" {
		rec.Op = memory.OpWrite
	}
	if rec.CandidateSource == "" {
		rec.CandidateSource = memory.SourceUser
	}
	if w.value != "" {
		rec.Value = json.RawMessage(w.value)
	}
	fromScope := rec.SubjectID == ""
	if fromScope {
		rec.SubjectID = rec.Scope.Entity()
	}
	// As the governor does: every write with text is placed; its layer is
	// the higher of the declared and the inferred one.
	rec.DeclaredLayer = rec.Layer
	if rec.Summary != "" || len(rec.Value) > 0 {
		place, err := c.Place(ctx, &memory.PolicyInput{Op: rec.Op, Candidate: rec, Pending: []*memory.Record{}, Actor: rec.Actor, Dialect: rec.Actor.Dialect})
		if err != nil {
			t.Fatalf("place: %v", err)
		}
		rec.InferredLayer = place.Layer
		if rec.FactType == "" {
			rec.FactType = place.FactType
		}
		if fromScope && place.SubjectID != "" {
			rec.SubjectID = place.SubjectID
		}
		if len(rec.Value) == 0 && len(place.Value) > 0 {
			rec.Value = place.Value
		}
	}
	rec.Layer = memory.HighestLayer(rec.DeclaredLayer, rec.InferredLayer)
	if rec.Layer == "" {
		rec.Layer = memory.LayerKnowledge
	}
	var slotLayers []memory.Layer
	if w.current != nil {
		slotLayers = append(slotLayers, w.current.Layer)
	}
	for _, p := range w.pending {
		slotLayers = append(slotLayers, p.Layer)
	}
	rec.Layer = memory.HighestLayer(append(slotLayers, rec.Layer)...)
	pending := w.pending
	if pending == nil {
		pending = []*memory.Record{}
	}
	in := &memory.PolicyInput{Op: rec.Op, Candidate: rec, Current: w.current, Pending: pending, Actor: rec.Actor,
		Dialect: rec.Actor.Dialect, Secrets: memory.ScanRecord(testScanner(t), rec)}
	d, err := c.Classify(ctx, in)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	return d, in
}

func TestRealisticWrites(t *testing.T) {
	if len(realisticWrites) < 40 {
		t.Fatalf("want at least 40 realistic writes, have %d", len(realisticWrites))
	}
	ctx := context.Background()
	p := compileDefault(t)
	for _, w := range realisticWrites {
		t.Run(w.name, func(t *testing.T) {
			d, in := submit(ctx, t, p, w)
			rec := in.Candidate
			if d.Action != w.want.action {
				t.Errorf("action %s, want %s (reasons %v)", d.Action, w.want.action, d.Reasons)
			}
			if w.want.risk != "" && d.Risk != w.want.risk {
				t.Errorf("risk %s, want %s (reasons %v)", d.Risk, w.want.risk, d.Reasons)
			}
			if !slices.Equal(d.Categories, w.want.categories) {
				t.Errorf("categories %q, want %q", d.Categories, w.want.categories)
			}
			if rec.Layer != w.want.layer {
				t.Errorf("layer %s, want %s", rec.Layer, w.want.layer)
			}
			if rec.FactType != w.want.factType {
				t.Errorf("factType %q, want %q", rec.FactType, w.want.factType)
			}
			if w.want.subject != "" && rec.SubjectID != w.want.subject {
				t.Errorf("subjectId %q, want %q", rec.SubjectID, w.want.subject)
			}
			if w.layer == "" && w.want.value != string(rec.Value) {
				t.Errorf("value %s, want %s", rec.Value, w.want.value)
			}
			if w.want.rule != "" && !slices.ContainsFunc(d.Reasons, func(r memory.Reason) bool { return r.Rule == w.want.rule }) {
				t.Errorf("rule %s did not fire: %v", w.want.rule, d.Reasons)
			}
			if len(d.Reasons) == 0 || d.Revision != p.Revision() {
				t.Errorf("decision lacks reasons or revision: %+v", d)
			}
		})
	}
}

// compileDefault compiles the embedded default policy.
func compileDefault(t testing.TB) *Compiled {
	t.Helper()
	p, err := compile(context.Background(), DefaultFiles(), compileConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testScanner is the governor's secret scanner, as the sidecar wires it.
func testScanner(t testing.TB) memory.SecretScanner {
	t.Helper()
	sc, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
