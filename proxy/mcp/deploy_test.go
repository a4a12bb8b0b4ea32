package mcp

import (
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"testing"
)

// The OpenClaw example must match what this package serves: the endpoint,
// the attribution headers and the bridge's environment.
func TestOpenClawExampleMatchesTheServer(t *testing.T) {
	b, err := os.ReadFile("../../deploy/openclaw/mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCP struct {
			Servers map[string]struct {
				URL       string            `json:"url"`
				Transport string            `json:"transport"`
				Headers   map[string]string `json:"headers"`
				Command   string            `json:"command"`
				Args      []string          `json:"args"`
				Env       map[string]string `json:"env"`
			} `json:"servers"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	httpEntry, stdio := cfg.MCP.Servers["memory"], cfg.MCP.Servers["memory-stdio"]
	u, err := url.Parse(httpEntry.URL)
	if err != nil || u.Path != "/mcp" || httpEntry.Transport != "streamable-http" {
		t.Errorf("HTTP entry %+v: want a streamable-http URL ending in /mcp", httpEntry)
	}
	for h := range httpEntry.Headers {
		if h != HeaderAgentID && h != HeaderRunID && h != HeaderUserID {
			t.Errorf("HTTP entry sends header %s, which memgate does not read", h)
		}
	}
	if stdio.Command != "sidecar" || !slices.Equal(stdio.Args, []string{"mcp"}) {
		t.Errorf("stdio entry %+v: want `sidecar mcp`", stdio)
	}
	o := BridgeOptionsFromEnv(func(k string) string { return stdio.Env[k] })
	if ep, err := endpoint(o.URL); err != nil || ep != httpEntry.URL || o.AgentID == "" {
		t.Errorf("stdio entry env %v gives endpoint %q (%v), agent %q", stdio.Env, ep, err, o.AgentID)
	}
}
