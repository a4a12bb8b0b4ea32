package mem0

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
)

// sdkDir holds the npm harness: package.json, its lockfile and compat.mjs.
var sdkDir = filepath.Join("testdata", "sdk")

// needSDK skips (or, in CI, fails) when node or the installed SDK is missing.
func needSDK(t *testing.T) string {
	t.Helper()
	missing := func(msg string) {
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed; the mem0ai SDK compatibility test needs Node.js 18 or later")
	}
	if _, err := os.Stat(filepath.Join(sdkDir, "node_modules", "mem0ai", "package.json")); err != nil {
		missing("the mem0ai SDK is not installed: run npm ci --prefix proxy/mem0/testdata/sdk")
	}
	return node
}

// TestMem0SDKCompatibility drives memgate with the real mem0ai npm SDK
// (the latest release, and the version the OpenClaw plugin pins), under
// the test policy and under memgate's built-in default policy, on Badger;
// and once on PostgreSQL (the default policy with the latest SDK), the
// store a fleet shares, not the whole matrix again.
func TestMem0SDKCompatibility(t *testing.T) {
	node := needSDK(t)
	type policyCase struct {
		name string
		cls  func(*testing.T) memory.Classifier
		// dropsChitChat: the policy refuses small talk from inferred adds.
		dropsChitChat bool
	}
	testPol := policyCase{"test-policy", func(*testing.T) memory.Classifier { return memory.ClassifierFunc(testPolicy) }, true}
	defaultPol := policyCase{"default-policy", func(t *testing.T) memory.Classifier { return defaultPolicy(t) }, true}
	type run struct {
		on  backing
		pol policyCase
		pkg string
	}
	var runs []run
	for _, pol := range []policyCase{testPol, defaultPol} {
		for _, pkg := range []string{"mem0ai", "mem0ai-openclaw"} {
			runs = append(runs, run{onBadger, pol, pkg})
		}
	}
	runs = append(runs, run{onPostgres, defaultPol, "mem0ai"})
	for _, r := range runs {
		t.Run(r.on.name+"/"+r.pol.name+"/"+r.pkg, func(t *testing.T) {
			testSDK(t, node, r.pkg, r.pol.cls(t), r.pol.dropsChitChat, r.on.db(t))
		})
	}
}

// testSDK runs compat.mjs with one SDK package against a fresh memgate, on
// Badger or, if pg is not empty, on that PostgreSQL database.
func testSDK(t *testing.T, node, pkg string, cls memory.Classifier, dropsChitChat bool, pg string) {
	e := startEnv(t, cls, pg, func(o *Options) { o.APIKeys = []string{"test-key"} })
	// The handler as the agent listener serves it, plus a test-only
	// route standing in for the reviewer (never part of the product).
	mux := http.NewServeMux()
	e.h.Register(mux)
	mux.HandleFunc("POST /__test__/approve", func(w http.ResponseWriter, r *http.Request) {
		items, err := e.gov.Reviews(r.Context())
		if err == nil {
			for _, it := range items {
				if _, err = e.gov.Approve(r.Context(), it.Record.ID, memory.Review{By: "reviewer", Route: "admin"}); err != nil {
					break
				}
			}
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"approved": len(items)})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "compat.mjs")
	cmd.Dir = sdkDir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "MEMGATE_URL="+srv.URL, "MEMGATE_KEY=test-key", "MEM0_PACKAGE="+pkg,
		"MEMGATE_APPROVE="+srv.URL+"/__test__/approve", "MEM0_TELEMETRY=false", "MEM0_DIR="+home, "HOME="+home)
	if dropsChitChat {
		cmd.Env = append(cmd.Env, "MEMGATE_DROPS_CHITCHAT=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("compat.mjs with %s failed: %v\n%s", pkg, err, out)
	}
	if !strings.Contains(string(out), "all steps passed") {
		t.Fatalf("compat.mjs did not finish:\n%s", out)
	}
	t.Logf("compat.mjs with %s:\n%s", pkg, out)

	// What the SDK wrote went through the governor as the mem0 dialect,
	// read back from the store it ran on.
	var recs []*memory.Record
	err = e.records.View(context.Background(), func(tx memory.ReadTx) error {
		return tx.ScanByActor("actor", "alice", func(r *memory.Record) bool { recs = append(recs, r); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 5 {
		t.Fatalf("want the SDK's writes recorded for alice, got %d", len(recs))
	}
	for _, r := range recs {
		if r.Actor.Dialect != Dialect || r.Actor.RemoteAddr != "127.0.0.1" || strings.Contains(r.Summary, "intruder") {
			t.Fatalf("record %+v", r)
		}
	}
	if q := e.pending(); len(q) != 1 || q[0].Record.Op != memory.OpDelete {
		t.Fatalf("the deletion of the policy waits for review, queue: %d", len(q))
	}
}
