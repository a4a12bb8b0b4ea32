package mem0

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openClawConfig is the part of openclaw.json deploy/openclaw/mem0.json sets.
type openClawConfig struct {
	Plugins struct {
		Slots   map[string]string `json:"slots"`
		Entries map[string]struct {
			Enabled bool           `json:"enabled"`
			Config  map[string]any `json:"config"`
		} `json:"entries"`
	} `json:"plugins"`
}

// TestOpenClawConfig checks the shipped OpenClaw config: the memory slot
// names the plugin, the plugin runs in platform mode against memgate's
// agent listener, and (with the plugin installed) every setting is one its
// manifest declares, with the right type.
func TestOpenClawConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "openclaw", "mem0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg openClawConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("deploy/openclaw/mem0.json: %v", err)
	}
	const pluginID = "openclaw-mem0"
	entry, ok := cfg.Plugins.Entries[pluginID]
	if cfg.Plugins.Slots["memory"] != pluginID || !ok || !entry.Enabled {
		t.Fatalf("the memory slot must name the enabled %s plugin: %s", pluginID, raw)
	}
	c := entry.Config
	base, _ := c["baseUrl"].(string)
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host != "127.0.0.1:7600" || strings.HasSuffix(base, "/") {
		t.Fatalf("baseUrl %q: want memgate's agent listener, http://127.0.0.1:7600, without a trailing slash", base)
	}
	if c["mode"] != "platform" || !strings.HasPrefix(c["apiKey"].(string), "${") {
		t.Fatalf("platform mode with the key from the environment: %v", c)
	}

	pluginDir := filepath.Join(sdkDir, "node_modules", "@mem0", "openclaw-mem0")
	if _, err := os.Stat(pluginDir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the OpenClaw plugin is not installed: run npm ci --prefix proxy/mem0/testdata/sdk")
		}
		t.Skip("the OpenClaw plugin is not installed: run npm ci --prefix proxy/mem0/testdata/sdk")
	}
	var manifest struct {
		ID           string `json:"id"`
		Kind         string `json:"kind"`
		ConfigSchema struct {
			Properties map[string]struct {
				Type string   `json:"type"`
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"configSchema"`
	}
	readJSON(t, filepath.Join(pluginDir, "openclaw.plugin.json"), &manifest)
	if manifest.ID != pluginID || manifest.Kind != "memory" {
		t.Fatalf("the plugin is %q (%s), want the memory plugin %q", manifest.ID, manifest.Kind, pluginID)
	}
	jsonType := map[string]string{"string": "string", "bool": "boolean", "float64": "number"}
	for k, v := range c {
		prop, ok := manifest.ConfigSchema.Properties[k]
		if !ok {
			t.Errorf("setting %q is not in the plugin's config schema", k)
			continue
		}
		var got string
		switch v.(type) {
		case string:
			got = "string"
		case bool:
			got = "bool"
		case float64:
			got = "float64"
		}
		if jsonType[got] != prop.Type {
			t.Errorf("setting %q is a %s, the schema wants a %s", k, jsonType[got], prop.Type)
		}
		if len(prop.Enum) > 0 && !strings.Contains(strings.Join(prop.Enum, "\x00")+"\x00", v.(string)+"\x00") {
			t.Errorf("setting %q = %v is not one of %q", k, v, prop.Enum)
		}
	}
	// The compatibility test drives the SDK version the plugin pins.
	var pluginPkg, harness struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(pluginDir, "package.json"), &pluginPkg)
	readJSON(t, filepath.Join(sdkDir, "package.json"), &harness)
	if want := "npm:mem0ai@" + pluginPkg.Dependencies["mem0ai"]; harness.Dependencies["mem0ai-openclaw"] != want {
		t.Fatalf("the plugin pins mem0ai %s; the harness's mem0ai-openclaw is %s", pluginPkg.Dependencies["mem0ai"], harness.Dependencies["mem0ai-openclaw"])
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
