package slack_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/slacktest"
)

// fakeSlack is a Slack Web API on loopback: slack-go's slacktest server
// extended with the methods memgate calls (chat.postMessage with threads,
// chat.update, chat.postEphemeral, usergroups.users.list, views.open,
// apps.connections.open) and a Socket Mode websocket. It records every call
// and can be told to fail the next calls of a method.
type fakeSlack struct {
	t   *testing.T
	srv *slacktest.Server

	mu         sync.Mutex
	calls      []fakeCall
	messages   map[string]*fakeMessage // by ts
	order      []string                // ts of top-level messages, in post order
	ephemerals []fakeEphemeral
	views      []fakeView
	groups     map[string][]string
	failures   map[string][]fakeFailure
	nextTS     int
	authError  string // every method answers ok:false with it (a revoked token)
	notMember  bool   // the bot is not in the channel: posts answer not_in_channel

	sockMu   sync.Mutex
	sock     *websocket.Conn
	sockUp   chan struct{}
	acks     chan string
	appToken string // the bearer apps.connections.open was called with
}

type fakeCall struct {
	Method string
	At     time.Time
	Status int
	Form   url.Values
}

type fakeMessage struct {
	Channel string
	TS      string
	Text    string
	Blocks  []map[string]any
	Updates int
	Replies []fakeReply
}

type fakeReply struct {
	Text      string
	Blocks    []map[string]any
	Broadcast bool
}

type fakeEphemeral struct{ Channel, User, Text string }

type fakeView struct {
	TriggerID string
	View      map[string]any
}

// fakeFailure is one scripted answer: an HTTP status (with Retry-After) or
// a Slack ok:false error.
type fakeFailure struct {
	Status     int
	RetryAfter string
	SlackError string
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{t: t, messages: map[string]*fakeMessage{}, groups: map[string][]string{},
		failures: map[string][]fakeFailure{}, sockUp: make(chan struct{}, 1), acks: make(chan string, 16), nextTS: 1}
	f.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/auth.test", f.method("auth.test", f.authTest))
		c.Handle("/conversations.info", f.method("conversations.info", f.conversationInfo))
		c.Handle("/chat.postMessage", f.method("chat.postMessage", f.postMessage))
		c.Handle("/chat.update", f.method("chat.update", f.update))
		c.Handle("/chat.postEphemeral", f.method("chat.postEphemeral", f.postEphemeral))
		c.Handle("/usergroups.users.list", f.method("usergroups.users.list", f.groupMembers))
		c.Handle("/views.open", f.method("views.open", f.openView))
		c.Handle("/apps.connections.open", f.method("apps.connections.open", f.connectionsOpen))
		c.Handle("/socket", f.socket)
	})
	f.srv.Start()
	t.Cleanup(f.close)
	return f
}

func (f *fakeSlack) URL() string { return f.srv.GetAPIURL() }

func (f *fakeSlack) close() {
	f.sockMu.Lock()
	if f.sock != nil {
		f.sock.Close()
	}
	f.sockMu.Unlock()
	f.srv.Stop()
}

// failNext makes the next calls of method answer with the given failures,
// in order.
func (f *fakeSlack) failNext(method string, fs ...fakeFailure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = append(f.failures[method], fs...)
}

// method wraps a handler: parses the request, records the call and plays
// scripted failures first.
func (f *fakeSlack) method(name string, h func(r *http.Request, form url.Values, body []byte) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		f.mu.Lock()
		var fail *fakeFailure
		if q := f.failures[name]; len(q) > 0 {
			fail, f.failures[name] = &q[0], q[1:]
		}
		call := fakeCall{Method: name, At: time.Now(), Status: http.StatusOK, Form: form}
		if fail != nil && fail.Status != 0 {
			call.Status = fail.Status
		}
		f.calls = append(f.calls, call)
		authError := f.authError
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case authError != "" && (fail == nil || fail.Status == 0):
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": authError})
			return
		case fail != nil && fail.Status != 0:
			if fail.RetryAfter != "" {
				w.Header().Set("Retry-After", fail.RetryAfter)
			}
			w.WriteHeader(fail.Status)
			_, _ = w.Write([]byte(`<html>unavailable</html>`))
			return
		case fail != nil:
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": fail.SlackError})
			return
		}
		_ = json.NewEncoder(w).Encode(h(r, form, body))
	}
}

func decodeBlocks(t *testing.T, s string) []map[string]any {
	if s == "" {
		return nil
	}
	var out []map[string]any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Errorf("blocks are not JSON: %v", err)
	}
	return out
}

// setAuthError makes every method answer ok:false with code ("" to stop):
// a wrong, revoked or expired token.
func (f *fakeSlack) setAuthError(code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authError = code
}

// setMember puts the bot in the channel or takes it out (an invite, a kick).
func (f *fakeSlack) setMember(in bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notMember = !in
}

func (f *fakeSlack) authTest(*http.Request, url.Values, []byte) any {
	return map[string]any{"ok": true, "url": "https://memgate-test.slack.com/", "team": "memgate-test", "team_id": "T0TEST",
		"user": "memgate", "user_id": "U0MEMGATE1", "bot_id": "B0MEMGATE1"}
}

func (f *fakeSlack) conversationInfo(_ *http.Request, form url.Values, _ []byte) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if form.Get("channel") != channel {
		return map[string]any{"ok": false, "error": "channel_not_found"}
	}
	return map[string]any{"ok": true, "channel": map[string]any{"id": channel, "name": "memory-reviews",
		"is_channel": true, "is_member": !f.notMember, "is_archived": false}}
}

func (f *fakeSlack) postMessage(_ *http.Request, form url.Values, _ []byte) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notMember {
		return map[string]any{"ok": false, "error": "not_in_channel"}
	}
	ch := form.Get("channel")
	if thread := form.Get("thread_ts"); thread != "" {
		m, ok := f.messages[thread]
		if !ok {
			return map[string]any{"ok": false, "error": "thread_not_found"}
		}
		m.Replies = append(m.Replies, fakeReply{Text: form.Get("text"), Blocks: decodeBlocks(f.t, form.Get("blocks")),
			Broadcast: form.Get("reply_broadcast") == "true"})
		return map[string]any{"ok": true, "channel": ch, "ts": f.newTS()}
	}
	ts := f.newTS()
	f.messages[ts] = &fakeMessage{Channel: ch, TS: ts, Text: form.Get("text"), Blocks: decodeBlocks(f.t, form.Get("blocks"))}
	f.order = append(f.order, ts)
	return map[string]any{"ok": true, "channel": ch, "ts": ts}
}

func (f *fakeSlack) newTS() string {
	f.nextTS++
	return fmt.Sprintf("1790000000.%06d", f.nextTS)
}

func (f *fakeSlack) update(_ *http.Request, form url.Values, _ []byte) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notMember {
		return map[string]any{"ok": false, "error": "not_in_channel"}
	}
	m, ok := f.messages[form.Get("ts")]
	if !ok || m.Channel != form.Get("channel") {
		return map[string]any{"ok": false, "error": "message_not_found"}
	}
	m.Text, m.Blocks = form.Get("text"), decodeBlocks(f.t, form.Get("blocks"))
	m.Updates++
	return map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text}
}

func (f *fakeSlack) postEphemeral(_ *http.Request, form url.Values, _ []byte) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ephemerals = append(f.ephemerals, fakeEphemeral{Channel: form.Get("channel"), User: form.Get("user"), Text: form.Get("text")})
	return map[string]any{"ok": true, "message_ts": f.newTS()}
}

func (f *fakeSlack) groupMembers(_ *http.Request, form url.Values, _ []byte) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	users, ok := f.groups[form.Get("usergroup")]
	if !ok {
		return map[string]any{"ok": false, "error": "no_such_subteam"}
	}
	return map[string]any{"ok": true, "users": users}
}

func (f *fakeSlack) openView(_ *http.Request, _ url.Values, body []byte) any {
	var req struct {
		TriggerID string         `json:"trigger_id"`
		View      map[string]any `json:"view"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.TriggerID == "" {
		return map[string]any{"ok": false, "error": "invalid_arguments"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views = append(f.views, fakeView{TriggerID: req.TriggerID, View: req.View})
	return map[string]any{"ok": true, "view": map[string]any{"id": "V" + strconv.Itoa(len(f.views))}}
}

func (f *fakeSlack) connectionsOpen(r *http.Request, _ url.Values, _ []byte) any {
	f.mu.Lock()
	f.appToken = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Unlock()
	return map[string]any{"ok": true, "url": "ws://" + r.Host + "/socket"}
}

// Slack-go sends Origin https://api.slack.com, as Slack expects.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// socket is Socket Mode's websocket: hello, pings, envelopes out, acks in.
func (f *fakeSlack) socket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.sockMu.Lock()
	f.sock = conn
	err = conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1})
	f.sockMu.Unlock()
	if err != nil {
		return
	}
	select {
	case f.sockUp <- struct{}{}:
	default:
	}
	done := make(chan struct{})
	defer close(done)
	go func() { // Slack pings; slack-go reconnects if it hears nothing for 30s
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = conn.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
			}
		}
	}()
	for {
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := conn.ReadJSON(&ack); err != nil {
			return
		}
		f.acks <- ack.EnvelopeID
	}
}

// sendInteractive pushes an interactive envelope over the socket.
func (f *fakeSlack) sendInteractive(envelopeID string, payload any) {
	f.t.Helper()
	f.sockMu.Lock()
	defer f.sockMu.Unlock()
	if f.sock == nil {
		f.t.Fatal("no Socket Mode connection")
	}
	err := f.sock.WriteJSON(map[string]any{"envelope_id": envelopeID, "type": "interactive",
		"payload": payload, "accepts_response_payload": false})
	if err != nil {
		f.t.Fatal(err)
	}
}

// Snapshots for assertions.

func (f *fakeSlack) callsTo(method string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return where(f.calls, func(c fakeCall) bool { return c.Method == method })
}

func (f *fakeSlack) topMessages() []fakeMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]fakeMessage, 0, len(f.order))
	for _, ts := range f.order {
		out = append(out, *f.messages[ts])
	}
	return out
}

func (f *fakeSlack) message(ts string) fakeMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.messages[ts]; ok {
		return *m
	}
	return fakeMessage{}
}

func (f *fakeSlack) ephemeralsFor(user string) []fakeEphemeral {
	f.mu.Lock()
	defer f.mu.Unlock()
	return where(f.ephemerals, func(e fakeEphemeral) bool { return e.User == user })
}

// where is a new slice of the items keep holds for (nil: none).
func where[T any](items []T, keep func(T) bool) []T {
	var out []T
	for _, it := range items {
		if keep(it) {
			out = append(out, it)
		}
	}
	return out
}

func (f *fakeSlack) openedViews() []fakeView {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeView(nil), f.views...)
}
