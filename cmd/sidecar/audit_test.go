package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
)

// TestCLIAuditVerifyAndSignedExport: verify through the admin API, a
// signed export checked offline, and the same file edited.
func TestCLIAuditVerifyAndSignedExport(t *testing.T) {
	gov, url := cliFixture(t)
	ctx := context.Background()
	for _, s := range []string{"alpha ships on friday", "the build is green", "deploys need a human"} {
		if _, err := gov.Submit(ctx, memory.Candidate{Layer: memory.LayerKnowledge, SubjectID: "project-alpha", Summary: s}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCLI(t, url, "audit", "verify")
	if err != nil || !strings.Contains(out, "audit chain intact: 3 events") {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}
	dir := t.TempDir()
	key, file := filepath.Join(dir, "audit.key"), filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(key, []byte(strings.Repeat("s3cr3t-", 6)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runCLI(t, url, "audit", "export", "--from", "2000-01-01", "--audit-key", key, "--out", file); err != nil {
		t.Fatalf("audit export: %v\n%s", err, out)
	}
	cases := []struct {
		name    string
		edit    func(string) string
		args    []string
		ok      bool
		message string
	}{
		{"signed and checked", nil, []string{"--audit-key", key}, true, "intact: 3 events from position 1 to 3"},
		{"signed, no key given", nil, nil, true, "but not checked"},
		{"an event edited", func(s string) string { return strings.Replace(s, "the build is green", "the build is red!", 1) },
			[]string{"--audit-key", key}, false, "NOT VALID"},
		{"an event edited, no key", func(s string) string { return strings.Replace(s, "the build is green", "the build is red!", 1) },
			nil, false, "changed event"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := file
			if tc.edit != nil {
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				path = filepath.Join(t.TempDir(), "edited.jsonl")
				if err := os.WriteFile(path, []byte(tc.edit(string(b))), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, err := runCLI(t, url, append([]string{"audit", "verify", "--file", path}, tc.args...)...)
			if (err == nil) != tc.ok || !strings.Contains(out, tc.message) {
				t.Fatalf("verify --file: err %v, want ok=%v and %q in:\n%s", err, tc.ok, tc.message, out)
			}
		})
	}
}

// TestCLIErase: sidecar erase through the admin API says what it erased
// and what still holds the data; without a scope it refuses.
func TestCLIErase(t *testing.T) {
	gov, url := cliFixture(t)
	ctx := context.Background()
	for _, c := range []memory.Candidate{
		{Layer: memory.LayerKnowledge, SubjectID: "alice", Summary: "alice likes tea", Scope: memory.Scope{UserID: "alice"}},
		{Layer: memory.LayerKnowledge, SubjectID: "bob", Summary: "bob likes coffee", Scope: memory.Scope{UserID: "bob"}},
	} {
		if _, err := gov.Submit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCLI(t, url, "erase", "--user", "alice", "--reason", "ticket 9")
	if err != nil || !strings.Contains(out, "1 memories erased (1 active, 0 pending withdrawn)") ||
		!strings.Contains(out, "compacted: true") || !strings.Contains(out, "still holding the data: every backup") {
		t.Fatalf("erase: %v\n%s", err, out)
	}
	active, err := gov.List(ctx, memory.ListFilter{})
	if err != nil || len(active) != 1 || active[0].Summary != "bob likes coffee" {
		t.Fatalf("after the erasure: %+v %v", active, err)
	}
	if out, err := runCLI(t, url, "erase", "--reason", "no one"); err == nil {
		t.Fatalf("an erasure without a scope ran:\n%s", out)
	}
}
