package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/memory"
)

func TestAgentKeysConfiguration(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"name": "carol", "sha256": "6ca13d52ca70c883e0f0bb101e425a89e8624de51db2d2392593af6a84118090", "userId": "carol"}}}) // sha256("abc123")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		listen   string
		file     string
		allow    bool
		wantErr  string
		wantKeys int
		wantLog  string
		accepts  map[string]memory.Tenant
	}{
		{name: "none on loopback", listen: "127.0.0.1:7600", wantLog: "no agent keys set"},
		{name: "none elsewhere refuses to start", listen: "0.0.0.0:7600", wantErr: "not on loopback and no agent keys"},
		{name: "none elsewhere when told", listen: "0.0.0.0:7600", allow: true, wantLog: "--allow-unauthenticated"},
		{name: "new name with bindings", listen: "0.0.0.0:7600", env: map[string]string{"MEMGATE_AGENT_KEYS": "k1, k2@user=alice;agent=bot"},
			wantKeys: 2, accepts: map[string]memory.Tenant{"k1": {}, "k2": {UserID: "alice", AgentID: "bot"}}},
		{name: "old name still works and merges", listen: "127.0.0.1:7600",
			env:      map[string]string{"MEMGATE_AGENT_KEYS": "k1", "MEMGATE_MEM0_API_KEYS": "m0-old"},
			wantKeys: 2, accepts: map[string]memory.Tenant{"m0-old": {}}},
		{name: "file with a digest", listen: "127.0.0.1:7600", file: file, wantKeys: 1,
			accepts: map[string]memory.Tenant{"abc123": {UserID: "carol"}}},
		{name: "bad binding", env: map[string]string{"MEMGATE_AGENT_KEYS": "k@team=x"}, wantErr: "unknown binding"},
		{name: "control character in a binding", env: map[string]string{"MEMGATE_AGENT_KEYS": "k@user=al\x1bice"}, wantErr: "control characters"},
		{name: "a key twice", env: map[string]string{"MEMGATE_AGENT_KEYS": "k@user=alice", "MEMGATE_MEM0_API_KEYS": "k"}, wantErr: "configured twice"},
		{name: "one key in the env and the file", env: map[string]string{"MEMGATE_AGENT_KEYS": "abc123"}, file: file, wantErr: "configured twice"},
		{name: "binding without key", env: map[string]string{"MEMGATE_AGENT_KEYS": "@user=x"}, wantErr: "no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			cfg := serveConfig{listen: tt.listen, agentKeysFile: tt.file, allowNoKeys: tt.allow}
			keys, err := agentKeys(cfg, func(k string) string { return tt.env[k] }, slog.New(slog.NewTextHandler(&logs, nil)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if keys.Len() != tt.wantKeys {
				t.Fatalf("%d keys, want %d", keys.Len(), tt.wantKeys)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Fatalf("log %q does not say %q", logs.String(), tt.wantLog)
			}
			for key, tenant := range tt.accepts {
				c, ok := keys.Verify(key)
				if !ok || c.Tenant != tenant {
					t.Fatalf("key %q: accepted %v as %+v, want %+v", key, ok, c.Tenant, tenant)
				}
			}
			if _, ok := keys.Verify("not-a-key"); ok {
				t.Fatal("an unknown key is accepted")
			}
		})
	}
}

// The container's agent listener is not on loopback: with
// --generate-agent-key it requires a key generated into the data
// directory, the same one after a restart, instead of refusing to start.
func TestGeneratedAgentKey(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := serveConfig{listen: "0.0.0.0:7600", dataDir: dir, generateAgentKey: true}
	keys, err := agentKeys(cfg, func(string) string { return "" }, log)
	if err != nil || keys.Len() != 1 {
		t.Fatalf("%v keys, %v", keys, err)
	}
	path := filepath.Join(dir, agentKeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	raw, _ := os.ReadFile(path)
	key := strings.TrimSpace(string(raw))
	if _, ok := keys.Verify(key); !ok || strings.Contains(logs.String(), key) || !strings.Contains(logs.String(), path) {
		t.Fatalf("the generated key is not required, or the log holds it or not its path:\n%s", logs.String())
	}
	again, err := agentKeys(cfg, func(string) string { return "" }, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Verify(key); !ok {
		t.Fatal("a restart generated another key")
	}
	// Keys that are set win; on loopback nothing is generated.
	set, err := agentKeys(cfg, func(k string) string { return map[string]string{"MEMGATE_AGENT_KEYS": "mine"}[k] }, log)
	if _, ok := set.Verify(key); err != nil || ok {
		t.Fatalf("with MEMGATE_AGENT_KEYS set the generated key is still accepted (%v)", err)
	}
	local := cfg
	local.listen, local.dataDir = "127.0.0.1:7600", t.TempDir()
	if k, err := agentKeys(local, func(string) string { return "" }, log); err != nil || k.Len() != 0 {
		t.Fatalf("on loopback: %d keys, %v", k.Len(), err)
	}
}
