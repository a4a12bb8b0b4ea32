package slack_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/internal/testkit"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
	slacknotify "github.com/memgate/memgate/notify/slack"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/store"
)

const (
	botToken   = "xoxb-test-bot"
	appToken   = "xapp-test-app"
	secret     = "8f742231b10e8888abcd99yyyzzz85a5"
	channel    = "C0REVIEWS1"
	reviewer   = "U0REVIEWER1"
	groupie    = "U0GROUPIE01"
	outsider   = "U0OUTSIDER1"
	group      = "S0REVIEWERS"
	adminToken = "admin-token"
)

// testPolicy: policy-layer writes and overrides of an active state need a
// human; model inferences of knowledge need one too (and may be appended);
// everything else applies.
func testPolicy(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	c := in.Candidate
	switch {
	case c.Layer == memory.LayerPolicy:
		return testkit.Review(memory.CategoryStrategy, "strategy_constraint", "strategy constraints need a human",
			"auto-publishing of releases"), nil
	case c.Layer == memory.LayerState && in.Current != nil && !in.Current.SameContent(c):
		return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview,
			Categories: []string{memory.CategoryStateOverride, memory.CategoryInference},
			Reasons: []memory.Reason{{Rule: "state_override", Message: "overrides a key fact"},
				{Rule: "inference_over_state", Message: "a model inference would change state"}},
			Affects: []string{"release pipeline: publish step", "weekly report"}}, nil
	case c.Layer == memory.LayerKnowledge && c.CandidateSource == memory.SourceInference:
		return memory.Decision{Risk: memory.RiskMedium, Action: memory.ActionReview, Categories: []string{memory.CategoryInference},
			Reasons: []memory.Reason{{Rule: "unverified_inference", Message: "model inference"}}}, nil
	}
	return testkit.Apply(), nil
}

// env is the whole loop on loopback: a real Badger store on disk, a real
// governor writing the outbox, the outbox worker, the Slack service talking
// to the fake Web API, and the admin listener with the signed endpoint.
type env struct {
	t       *testing.T
	dir     string
	fake    *fakeSlack
	cfg     slacknotify.Config
	backoff notify.Backoff
	st      *store.Store
	gov     *memory.Governor
	outbox  *notify.Outbox
	svc     *slacknotify.Service
	admin   *httptest.Server
	stop    func()               // ends this run's outbox and Slack loops and waits for them
	reg     *prometheus.Registry // this run's metrics (a restart starts a new one)
	logs    *testkit.SyncBuffer  // every run's log
	clicks  atomic.Int64
}

// envOptions adjust an env before its first start.
type envOptions struct {
	tune    func(*slacknotify.Config)
	backoff notify.Backoff   // the outbox's; default 20ms doubling to 200ms
	fake    func(*fakeSlack) // prepare Slack's answers before the start-up check
}

func newEnv(t *testing.T, tune func(*slacknotify.Config)) *env {
	t.Helper()
	return newEnvWith(t, envOptions{tune: tune})
}

func newEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), fake: newFakeSlack(t), backoff: o.backoff, logs: &testkit.SyncBuffer{}}
	if e.backoff == (notify.Backoff{}) {
		e.backoff = notify.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	}
	e.fake.groups[group] = []string{groupie}
	if o.fake != nil {
		o.fake(e.fake)
	}
	e.cfg = slacknotify.Config{BotToken: botToken, SigningSecret: secret, Channel: channel,
		Reviewers: []string{reviewer}, ReviewerGroup: group, APIURL: e.fake.URL()}
	if o.tune != nil {
		o.tune(&e.cfg)
	}
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) open() {
	e.t.Helper()
	st := badgertest.Open(e.t, store.Options{Dir: e.dir})
	e.st = st
	e.reg = prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(e.logs, nil))
	e.outbox = notify.NewOutbox(notify.OutboxOptions{Store: st, Poll: time.Hour, Backoff: e.backoff,
		Metrics: notify.NewMetrics(e.reg), Logger: log})
	e.gov = memory.NewGovernor(memory.Options{Store: st, Classifier: memory.ClassifierFunc(testPolicy),
		Outbox: true, Waker: e.outbox})
	svc, err := slacknotify.New(e.cfg, slacknotify.Deps{Gov: e.gov, KV: st, Registerer: e.reg, Logger: log,
		OnReady: e.outbox.RetryNow})
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = svc
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return e.outbox.Run(ctx, e.svc) })
	g.Go(func() error { return e.svc.Run(ctx) })
	e.stop = func() {
		cancel()
		if err := g.Wait(); err != nil {
			e.t.Error(err)
		}
	}
	// Run begins with a check of the settings, as the sidecar's start does.
	testkit.Eventually(e.t, "the start-up check", e.svc.Checked)
	mux := http.NewServeMux()
	(&proxy.Admin{Gov: e.gov, Token: adminToken}).Register(mux)
	mux.Handle("POST /slack/interactions", e.svc.Handler())
	e.admin = httptest.NewServer(mux)
}

func (e *env) close() {
	if e.st == nil {
		return
	}
	e.admin.Close()
	e.stop()
	if err := e.st.Close(); err != nil {
		e.t.Error(err)
	}
	e.st = nil
}

// restart stops everything and opens it again on the same data directory.
func (e *env) restart(tune func(*slacknotify.Config)) {
	e.t.Helper()
	e.close()
	if tune != nil {
		tune(&e.cfg)
	}
	e.open()
}

func (e *env) submit(c memory.Candidate) *memory.SubmitResult {
	e.t.Helper()
	res, err := e.gov.Submit(context.Background(), c)
	if err != nil {
		e.t.Fatalf("submit: %v", err)
	}
	return res
}

// parkOverride makes project-alpha's publish.auto "on", then parks an
// agent's inference that it is "off".
func (e *env) parkOverride() (old, parked *memory.Record) {
	e.t.Helper()
	old = e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "publish.auto",
		Summary: "Auto-publish is ON for project alpha", Value: json.RawMessage(`{"enabled":true}`)}).Record
	res := e.submit(memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "publish.auto",
		Summary: "Auto-publish is OFF for project alpha", Value: json.RawMessage(`{"enabled":false}`),
		CandidateSource: memory.SourceInference,
		Evidence:        memory.Evidence{Excerpt: "user: stop publishing automatically until the audit is done", SourceRef: "conv-42#m7"},
		Actor:           memory.Actor{AgentID: "openclaw-main", UserID: "alice", RunID: "run-7", Dialect: "mem0"}})
	if res.Outcome != memory.OutcomeParked {
		e.t.Fatalf("outcome %s, want parked", res.Outcome)
	}
	return old, res.Record
}

func (e *env) record(id string) *memory.Record {
	e.t.Helper()
	r, err := e.gov.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) outboxNotices() []*memory.Notice {
	e.t.Helper()
	return testkit.Notices(e.t, e.st)
}

// messageFor waits for the top-level message announcing a record.
func (e *env) messageFor(id string) fakeMessage {
	e.t.Helper()
	var found fakeMessage
	testkit.Eventually(e.t, "a Slack message for "+id, func() bool {
		for _, m := range e.fake.topMessages() {
			if strings.Contains(strings.Join(blockTexts(m.Blocks), "\n"), id) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// waitUpdated waits until a message was updated to no longer carry buttons.
func (e *env) waitDecided(ts string) fakeMessage {
	e.t.Helper()
	var m fakeMessage
	testkit.Eventually(e.t, "the message updated in place", func() bool {
		m = e.fake.message(ts)
		return m.Updates > 0 && !hasActions(m.Blocks)
	})
	return m
}

// click builds the block_actions payload Slack sends when user clicks the
// button actionID of message m.
func (e *env) click(m fakeMessage, actionID, user string) map[string]any {
	e.t.Helper()
	value, ok := buttonValue(m.Blocks, actionID)
	if !ok {
		e.t.Fatalf("message has no %s button", actionID)
	}
	n := e.clicks.Add(1)
	return map[string]any{
		"type": "block_actions", "trigger_id": fmt.Sprintf("trigger-%d", n),
		"user":      map[string]any{"id": user, "username": strings.ToLower(user)},
		"channel":   map[string]any{"id": m.Channel},
		"container": map[string]any{"type": "message", "channel_id": m.Channel, "message_ts": m.TS},
		"message":   map[string]any{"ts": m.TS},
		"actions": []map[string]any{{"type": "button", "action_id": actionID, "block_id": "b",
			"value": value, "action_ts": "1790000000.1"}},
	}
}

// submitView builds the view_submission payload for an opened modal with
// text typed into its input.
func submitView(t *testing.T, v fakeView, user, text string) map[string]any {
	t.Helper()
	blockID, actionID := "", ""
	for _, b := range v.View["blocks"].([]any) {
		blk := b.(map[string]any)
		if blk["type"] == "input" {
			blockID = blk["block_id"].(string)
			actionID = blk["element"].(map[string]any)["action_id"].(string)
		}
	}
	if blockID == "" {
		t.Fatal("the modal has no input")
	}
	return map[string]any{
		"type": "view_submission", "user": map[string]any{"id": user},
		"view": map[string]any{"id": "V1", "type": "modal", "callback_id": v.View["callback_id"],
			"private_metadata": v.View["private_metadata"],
			"state": map[string]any{"values": map[string]any{blockID: map[string]any{
				actionID: map[string]any{"type": "plain_text_input", "value": text}}}}},
	}
}

// signature is Slack's request signature: v0= hex(HMAC-SHA256(secret,
// "v0:" + timestamp + ":" + body)), computed here independently of slack-go.
func signature(secret string, ts int64, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:%s", ts, body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func formBody(payload any) string {
	b, _ := json.Marshal(payload)
	return url.Values{"payload": {string(b)}}.Encode()
}

// post sends an interaction to the admin listener's endpoint, signed as
// Slack signs (sign=false sends no signature headers).
func (e *env) post(body string, ts int64, key string, sign bool) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.admin.URL+"/slack/interactions", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sign {
		req.Header.Set("X-Slack-Request-Timestamp", fmt.Sprint(ts))
		req.Header.Set("X-Slack-Signature", signature(key, ts, body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// interact sends a correctly signed interaction and expects 200.
func (e *env) interact(payload any) {
	e.t.Helper()
	if resp := e.post(formBody(payload), time.Now().Unix(), secret, true); resp.StatusCode != http.StatusOK {
		e.t.Fatalf("signed interaction answered %d", resp.StatusCode)
	}
}

// blockTexts returns every text in blocks (sections, fields, headers,
// context elements, buttons), in order.
func blockTexts(blocks []map[string]any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if t, ok := x["text"].(string); ok {
				out = append(out, t)
			}
			for k, c := range x {
				if k != "text" || !isString(c) {
					walk(c)
				}
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	for _, b := range blocks {
		walk(b)
	}
	return out
}

func isString(v any) bool { _, ok := v.(string); return ok }

func allText(blocks []map[string]any) string { return strings.Join(blockTexts(blocks), "\n") }

func hasActions(blocks []map[string]any) bool {
	for _, b := range blocks {
		if b["type"] == "actions" {
			return true
		}
	}
	return false
}

func buttonValue(blocks []map[string]any, actionID string) (string, bool) {
	for _, b := range blocks {
		if b["type"] != "actions" {
			continue
		}
		for _, el := range b["elements"].([]any) {
			btn := el.(map[string]any)
			if btn["action_id"] == actionID {
				return btn["value"].(string), true
			}
		}
	}
	return "", false
}
