package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
)

// Help that was asked for is a success on stdout; usage shown for a
// mistake is an error on stderr.
func TestCLIHelp(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		asked    bool
		contains string
	}{
		{[]string{"--help"}, true, "MEMGATE_ADMIN_TOKEN"},
		{[]string{"-h"}, true, "sidecar [serve flags]"},
		{[]string{"help"}, true, "MEMGATE_AGENT_KEYS"},
		{[]string{"help", "review", "list"}, true, "sidecar review list"},
		{[]string{"review", "list", "--help"}, true, "-admin-url"},
		{[]string{"review", "--help"}, true, "work the review queue"},
		{[]string{"events", "-h"}, true, "-after"},
		{[]string{"rollback", "--help"}, true, "[--reason text]"},
		{[]string{"review"}, false, "work the review queue"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			shown, other := &stdout, &stderr
			if !tc.asked {
				shown, other = &stderr, &stdout
				if !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("want flag.ErrHelp (exit 2), got %v", err)
				}
			} else if err != nil {
				t.Fatalf("asked-for help failed: %v", err)
			}
			if !strings.Contains(shown.String(), tc.contains) || other.Len() != 0 {
				t.Fatalf("want %q in the usage, nothing elsewhere\nshown:\n%s\nother:\n%s", tc.contains, shown, other)
			}
		})
	}
}

// A refused token names where it came from.
func TestCLINamesTheRefusedTokenSource(t *testing.T) {
	_, url := cliFixture(t) // the server's token is "tok"
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, tokenFile), []byte("stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMGATE_ADMIN_TOKEN", "")
	var out bytes.Buffer
	err := run(context.Background(), []string{"review", "list", "--admin-url", url, "--data-dir", dataDir}, strings.NewReader(""), &out, &out)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dataDir, tokenFile)) || !strings.Contains(err.Error(), "export the same MEMGATE_ADMIN_TOKEN") {
		t.Fatalf("a refused token file: %v", err)
	}
	err = run(context.Background(), []string{"review", "list", "--admin-url", url, "--admin-token", "wrong"}, strings.NewReader(""), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "from --admin-token was refused") {
		t.Fatalf("a refused flag: %v", err)
	}
	t.Setenv("MEMGATE_ADMIN_TOKEN", "wrong-too")
	err = run(context.Background(), []string{"review", "list", "--admin-url", url}, strings.NewReader(""), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "from MEMGATE_ADMIN_TOKEN was refused") {
		t.Fatalf("a refused environment token: %v", err)
	}
}

// The audit log pages with no gaps and no repeats, following "more:".
func TestCLIEventsPages(t *testing.T) {
	gov, url := cliFixture(t)
	ctx := context.Background()
	for _, s := range []string{"one", "two", "three"} {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "s-" + s, Summary: "fact " + s}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := gov.Events(ctx, "", 0)
	if err != nil || len(all) < 3 {
		t.Fatalf("%d events, %v", len(all), err)
	}
	var seen []string
	args := []string{"events", "--limit", "2"}
	for range len(all) {
		out, err := runCLI(t, url, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && f[0] != "EVENT" && f[0] != "more:" {
				seen = append(seen, f[0])
			}
		}
		_, next, ok := strings.Cut(out, "more: sidecar events --after ")
		if !ok {
			break
		}
		args = []string{"events", "--limit", "2", "--after", strings.TrimSpace(next)}
	}
	if len(seen) != len(all) {
		t.Fatalf("paged %d events, the log holds %d: %v", len(seen), len(all), seen)
	}
	for i, e := range all {
		if seen[i] != e.ID {
			t.Fatalf("event %d: paged %s, want %s", i, seen[i], e.ID)
		}
	}
}
