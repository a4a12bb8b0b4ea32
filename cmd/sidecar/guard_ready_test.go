package main

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/peterbourgon/ff/v3"
)

// A guarded file memgate refuses (here: over --guard-max-file-bytes, set
// through its environment variable) makes /readyz answer 503 naming it and
// shows in the metrics; fixed, memgate is ready again (issue 30, point 5).
func TestGuardRefusalShowsInReadyzAndMetrics(t *testing.T) {
	for _, k := range []string{"MEMGATE_AGENT_KEYS", "MEMGATE_MEM0_API_KEYS"} {
		t.Setenv(k, "")
	}
	t.Setenv("MEMGATE_ADMIN_TOKEN", "tok")
	t.Setenv("MEMGATE_GUARD_MAX_FILE_BYTES", "4096")
	ws := filepath.Join(t.TempDir(), "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte("# MEMORY.md\n\n- Alice prefers short answers.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.register(fs)
	err := ff.Parse(fs, []string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--guard-dir", ws, "--guard-max-entries", "100"}, envOptions...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.guardMaxFileBytes != 4096 || cfg.guardMaxEntries != 100 {
		t.Fatalf("caps %d bytes, %d entries; want the environment's and the flag's", cfg.guardMaxFileBytes, cfg.guardMaxEntries)
	}
	_, admin, logs := serveInProcess(t, cfg)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitReadyz := func(want int, contains ...string) string {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			code, body := get("/readyz")
			ok := code == want
			for _, c := range contains {
				ok = ok && strings.Contains(body, c)
			}
			if ok {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz: %d %s; want %d with %q\nlogs:\n%s", code, body, want, contains, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitReadyz(http.StatusOK)

	big := "# USER.md\n\n- " + strings.Repeat("Alice likes tea. ", 300) + "\n" // 5 KB
	if err := os.WriteFile(filepath.Join(ws, "USER.md"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	waitReadyz(http.StatusServiceUnavailable, "markdown guard degraded", "USER.md", "too_large")
	_, metrics := get("/metrics")
	for _, want := range []string{`memgate_guard_errors_total{reason="too_large"} 1`, "memgate_guard_refused_files 1"} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(logs.String(), "refusing a guarded path") {
		t.Fatalf("the refusal was not logged:\n%s", logs.String())
	}
	if err := os.WriteFile(filepath.Join(ws, "USER.md"), []byte("# USER.md\n\n- Alice likes tea.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitReadyz(http.StatusOK)
}
