package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/snapshot"
	"github.com/memgate/memgate/store"
)

// The CLI against a real admin API on loopback, over a real Badger store.

func cliFixture(t *testing.T) (*memory.Governor, string) {
	t.Helper()
	st := badgertest.New(t)
	cls := memory.ClassifierFunc(func(_ context.Context, in *memory.PolicyInput) (memory.Decision, error) {
		if in.Candidate.Layer == memory.LayerPolicy || in.Current != nil {
			return memory.Decision{Risk: memory.RiskHigh, Action: memory.ActionReview, Categories: []string{"strategy"},
				Reasons: []memory.Reason{{Rule: "strategy.publish", Message: "auto-publish needs a human"}}, Affects: []string{"release pipeline"}}, nil
		}
		return memory.Decision{Risk: memory.RiskLow, Action: memory.ActionApply}, nil
	})
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: cls})
	er := &eraser{gov: gov, kv: st, compact: st.Compact, newID: memory.NewULIDSource(), log: slog.New(slog.DiscardHandler)}
	mux := http.NewServeMux()
	(&proxy.Admin{Gov: gov, Log: slog.New(slog.DiscardHandler), Token: "tok",
		Erase:    func(ctx context.Context, req memory.ErasureRequest) (any, error) { return er.Erase(ctx, req) },
		Snapshot: func(ctx context.Context, w io.Writer) error { return snapshot.Save(ctx, st, w) },
		Replay:   replayPolicy(gov), Audit: st}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return gov, srv.URL
}

// runCLI runs the CLI with the admin flags placed after the subcommand
// words (the leading words that are not flags or ids).
func runCLI(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	n := 1
	if args[0] == "review" || args[0] == "snapshot" || args[0] == "policy" || args[0] == "audit" {
		n = 2
	}
	full := append(append(append([]string{}, args[:n]...), "--admin-url", url, "--admin-token", "tok"), args[n:]...)
	var out bytes.Buffer
	err := run(context.Background(), full, strings.NewReader(""), &out, &out)
	return out.String(), err
}

func TestCLIReviewFlow(t *testing.T) {
	gov, url := cliFixture(t)
	ctx := context.Background()
	v1, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: "beta"})
	if err != nil {
		t.Fatal(err)
	}
	parked, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerState, SubjectID: "project-alpha", FactType: "stage", Summary: "项目 alpha 已上线",
		Actor: memory.Actor{AgentID: "agent-7", RunID: "run-9"}, Evidence: memory.Evidence{Excerpt: "用户说：已经上线了"}})
	if err != nil || parked.Outcome != memory.OutcomeParked {
		t.Fatalf("%v %v", parked, err)
	}
	id := parked.Record.ID

	out, err := runCLI(t, url, "review", "list")
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "项目 alpha 已上线") || !strings.Contains(out, "beta") {
		t.Fatalf("review list: %v\n%s", err, out)
	}
	out, err = runCLI(t, url, "review", "list", "--json")
	var body struct{ Reviews []memory.ReviewItem }
	if err != nil || json.Unmarshal([]byte(out), &body) != nil || len(body.Reviews) != 1 {
		t.Fatalf("review list --json: %v\n%s", err, out)
	}
	out, err = runCLI(t, url, "review", "show", id)
	if err != nil || !strings.Contains(out, "Would replace:") || !strings.Contains(out, v1.Record.ID) {
		t.Fatalf("review show: %v\n%s", err, out)
	}
	out, err = runCLI(t, url, "review", "approve", "--note", "confirmed", id)
	if err != nil || !strings.Contains(out, "is now active") {
		t.Fatalf("review approve: %v\n%s", err, out)
	}
	if _, err := runCLI(t, url, "review", "approve", id); err == nil || !strings.Contains(err.Error(), "already_decided") {
		t.Fatalf("second approve: %v", err)
	}
	out, err = runCLI(t, url, "explain", id)
	for _, want := range []string{"agent agent-7", "run run-9", "用户说：已经上线了", "release pipeline", "rp_" + id, "strategy.publish", "approved by cli via cli"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("explain lacks %q: %v\n%s", want, err, out)
		}
	}
	// Flags after the id, as the usage lines write them.
	for _, args := range [][]string{{"explain", id, "--json"}, {"history", id, "--json"}, {"review", "show", id, "--json"}} {
		out, err := runCLI(t, url, args...)
		if err != nil || !json.Valid([]byte(out)) {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	out, err = runCLI(t, url, "history", id)
	if err != nil || !strings.Contains(out, "superseded") || !strings.Contains(out, "active") {
		t.Fatalf("history: %v\n%s", err, out)
	}
	out, err = runCLI(t, url, "rollback", "--reason", "premature", id)
	if err != nil || !strings.Contains(out, "rolled back "+id) || !strings.Contains(out, v1.Record.ID) {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	out, err = runCLI(t, url, "quarantine", "--run", "run-9", "--reason", "bad run", "--json")
	if err != nil || !strings.Contains(out, `"rolledBack"`) {
		t.Fatalf("quarantine: %v\n%s", err, out)
	}
	if _, err := runCLI(t, url, "quarantine", "--reason", "x"); err == nil {
		t.Fatal("quarantine without --run or --actor succeeded")
	}
	out, err = runCLI(t, url, "restore", "--subject", "project-alpha", "--at", "2020-01-01T00:00:00Z", "--reason", "reset")
	if err != nil || !strings.Contains(out, "rolled back 1") {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	backup := filepath.Join(t.TempDir(), "memgate.backup")
	if out, err := runCLI(t, url, "snapshot", "save", backup); err != nil || !strings.Contains(out, "wrote") {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	restored := t.TempDir()
	var out2 bytes.Buffer
	if err := run(ctx, []string{"snapshot", "load", "--data-dir", restored, backup}, strings.NewReader(""), &out2, &out2); err != nil {
		t.Fatalf("snapshot load: %v\n%s", err, out2.String())
	}
	st2, err := store.Open(store.Options{Dir: filepath.Join(restored, "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	hist, err := memory.NewGovernor(memory.Options{Store: st2, Classifier: memory.ClassifierFunc(nil)}).History(ctx, parked.Record.SlotID)
	if err != nil || len(hist) != 2 {
		t.Fatalf("restored history: %d versions, %v", len(hist), err)
	}
	if _, err := runCLI(t, url, "explain", "nope"); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("explain of an unknown id: %v", err)
	}
}

func TestCLIWithoutTokenExplains(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"review", "list", "--data-dir", t.TempDir()}, strings.NewReader(""), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "MEMGATE_ADMIN_TOKEN") {
		t.Fatalf("want an error naming MEMGATE_ADMIN_TOKEN, got %v", err)
	}
}

func TestCLIPolicyReplayReportsChangedDecisions(t *testing.T) {
	gov, url := cliFixture(t)
	ctx := context.Background()
	// The fixture's policy parks every policy-layer write; the default policy
	// applies task checkpoints and parks strategy constraints too, but it
	// also parks a rule the fixture let through because it was filed as
	// knowledge.
	for _, c := range []memory.Candidate{
		{Layer: memory.LayerCheckpoint, SubjectID: "task-1", FactType: "step", Summary: "step 2 of 4 is done"},
		{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: "publish.auto", Summary: "auto-publish is disabled for project alpha"},
		{Layer: memory.LayerKnowledge, SubjectID: "u1", Summary: "Never deploy to production on Fridays"},
	} {
		if _, err := gov.Submit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for name, content := range policy.DefaultFiles() {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCLI(t, url, "policy", "replay", "--policy-dir", dir, "--json")
	if err != nil {
		t.Fatalf("policy replay: %v\n%s", err, out)
	}
	var rep policy.ReplayReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Evaluated != 3 || rep.Changed != 1 || rep.Transitions["apply->review"] != 1 || len(rep.Changes) != 1 {
		t.Fatalf("replay report %+v, want 3 evaluated with the rule filed as knowledge changing apply->review", rep)
	}
	text, err := runCLI(t, url, "policy", "replay", "--policy-dir", dir)
	if err != nil || !strings.Contains(text, "3 recorded writes: 2 same, 1 changed") || !strings.Contains(text, "apply->review") {
		t.Fatalf("replay text: %v\n%s", err, text)
	}
	// A broken policy is refused with a clear error, nothing replayed.
	if err := os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package memgate\nthis is not rego"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, url, "policy", "replay", "--policy-dir", dir); err == nil || !strings.Contains(err.Error(), "does not load") {
		t.Fatalf("broken policy replay: %v", err)
	}
}

// TestCLITextIsInert: what the CLI prints as text shows control characters
// and bidi overrides instead of letting them act on the terminal.
func TestCLITextIsInert(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, 中文", "plain text, 中文"},
		{"tab\tand\nnewline", "tab\tand\nnewline"},
		{"\x1b]0;owned\x07title", `\x1b]0;owned\x07title`},
		{"\x1b[2K\x1b[1Arewrite", `\x1b[2K\x1b[1Arewrite`},
		{"cr\rreturn", `cr\x0dreturn`},
		{"del\x7f c1\u009b", `del\x7f c1\u009b`},
		{"bidi \u202eevil\u202c", `bidi \u202eevil\u202c`},
		{"bad \xff byte, real \uFFFD", `bad \xff byte, real ` + "\uFFFD"},
	} {
		if got := inert(tc.in); got != tc.want {
			t.Errorf("inert(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCLIShadowMode: `policy mode` switches a running sidecar to shadow
// mode, a write policy parks is applied and `review list --shadow` lists
// it with its rule, `explain` says it was applied in shadow mode, and
// `policy mode enforce` parks the next one.
func TestCLIShadowMode(t *testing.T) {
	gov, url := cliFixture(t)
	ctx := context.Background()
	submit := func(fact string) *memory.SubmitResult {
		t.Helper()
		res, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerPolicy, SubjectID: "project-alpha", FactType: fact, Summary: "auto-publish is on"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if out, err := runCLI(t, url, "policy", "mode"); err != nil || out != "policy mode: enforce\n" {
		t.Fatalf("policy mode: %v %q", err, out)
	}
	if out, err := runCLI(t, url, "review", "list", "--shadow"); err != nil || !strings.Contains(out, "No write was let through") {
		t.Fatalf("review list --shadow before any: %v %q", err, out)
	}
	if _, err := runCLI(t, url, "policy", "mode", "audit"); err == nil {
		t.Fatal("policy mode audit: want an error")
	}
	if out, err := runCLI(t, url, "policy", "mode", "shadow"); err != nil || out != "policy mode: shadow\n" {
		t.Fatalf("policy mode shadow: %v %q", err, out)
	}
	res := submit("publish.auto")
	if res.Outcome != memory.OutcomeApplied {
		t.Fatalf("in shadow mode: %s, want applied", res.Outcome)
	}
	out, err := runCLI(t, url, "review", "list", "--shadow")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Policy mode: shadow", res.Record.ID, "review", "apply", "strategy.publish", "project-alpha/publish.auto", "auto-publish is on", "active"} {
		if !strings.Contains(out, want) {
			t.Errorf("review list --shadow lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, url, "explain", res.Record.ID)
	if err != nil || !strings.Contains(out, "applied in shadow mode: policy would have parked it (rules strategy.publish)") ||
		!strings.Contains(out, "[shadow]") {
		t.Errorf("explain: %v\n%s", err, out)
	}
	if out, err := runCLI(t, url, "policy", "mode", "enforce"); err != nil || out != "policy mode: enforce\n" {
		t.Fatalf("policy mode enforce: %v %q", err, out)
	}
	if res := submit("publish.manual"); res.Outcome != memory.OutcomeParked {
		t.Errorf("back in enforce mode: %s, want parked", res.Outcome)
	}
	// The page cursor: one write a page, and the more: line names the next.
	if err := gov.SetPolicyMode(memory.PolicyShadow); err != nil {
		t.Fatal(err)
	}
	second := submit("publish.weekly")
	out, err = runCLI(t, url, "review", "list", "--shadow", "--limit", "1")
	if err != nil || !strings.Contains(out, second.Record.ID) || !strings.Contains(out, "more: sidecar review list --shadow --after ") {
		t.Errorf("review list --shadow --limit 1: %v\n%s", err, out)
	}
}
