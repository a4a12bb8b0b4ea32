package slack_test

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The manifests ask for exactly the scopes the code uses (chat:write for
// post/update/ephemeral, channels:read and groups:read for the channel
// check's conversations.info, usergroups:read for the reviewer group) and turn
// interactivity on, over Socket Mode or a request URL.
func TestSlackAppManifests(t *testing.T) {
	type manifest struct {
		OAuth struct {
			Scopes struct {
				Bot  []string `yaml:"bot"`
				User []string `yaml:"user"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Interactivity struct {
				Enabled    bool   `yaml:"is_enabled"`
				RequestURL string `yaml:"request_url"`
			} `yaml:"interactivity"`
			SocketMode bool `yaml:"socket_mode_enabled"`
		} `yaml:"settings"`
	}
	for file, socket := range map[string]bool{"manifest.yaml": true, "manifest-http.yaml": false} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile("../../deploy/slack/" + file)
			if err != nil {
				t.Fatal(err)
			}
			var m manifest
			if err := yaml.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if scopes := m.OAuth.Scopes.Bot; !slices.Equal(scopes, []string{"chat:write", "channels:read", "groups:read", "usergroups:read"}) || len(m.OAuth.Scopes.User) != 0 {
				t.Fatalf("scopes %v / user %v", scopes, m.OAuth.Scopes.User)
			}
			if !m.Settings.Interactivity.Enabled || m.Settings.SocketMode != socket || (m.Settings.Interactivity.RequestURL == "") != socket {
				t.Fatalf("settings %+v", m.Settings)
			}
		})
	}
}
