package slack

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// Config is the Slack integration's configuration. RegisterFlags binds it
// to flags; with the sidecar's ff env prefix each flag is also the variable
// MEMGATE_<FLAG> (MEMGATE_SLACK_BOT_TOKEN, ...), as DESIGN §5 fixes.
type Config struct {
	BotToken      string        // xoxb-…: posts and updates messages; empty = Slack is off
	AppToken      string        // xapp-…: Socket Mode (connections:write); empty = no Socket Mode
	SigningSecret string        // verifies POST /slack/interactions; empty = the endpoint refuses everything
	Channel       string        // channel id (C…) the review messages go to
	Reviewers     []string      // Slack user ids allowed to decide
	ReviewerGroup string        // a user group id (S…) whose members may decide
	APIURL        string        // a Slack-compatible Web API base (tests, egress proxies); default Slack's
	RemindAfter   time.Duration // re-announce items waiting longer than this
	GroupCacheTTL time.Duration // how long user group members are cached
}

// RegisterFlags binds c to fs as --slack-… flags with their defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.BotToken, "slack-bot-token", "", "Slack bot token (xoxb-…); without it Slack is off and review works from the CLI and admin API")
	fs.StringVar(&c.AppToken, "slack-app-token", "", "Slack app-level token (xapp-…, connections:write) for Socket Mode interactivity (outbound only)")
	fs.StringVar(&c.SigningSecret, "slack-signing-secret", "", "Slack signing secret for the HTTP interactivity endpoint POST /slack/interactions on the admin listener")
	fs.StringVar(&c.Channel, "slack-channel", "", "Slack channel id the review messages are posted to (invite the bot there)")
	fs.Func("slack-reviewers", "comma-separated Slack user ids allowed to approve or reject", func(s string) error {
		c.Reviewers = splitIDs(s)
		return nil
	})
	fs.StringVar(&c.ReviewerGroup, "slack-reviewer-group", "", "Slack user group id whose members may approve or reject")
	fs.StringVar(&c.APIURL, "slack-api-url", "", "Slack-compatible Web API base URL (default https://slack.com/api/)")
	fs.DurationVar(&c.RemindAfter, "slack-remind-after", time.Hour, "re-announce parked writes waiting longer than this (they are never rejected by time)")
	fs.DurationVar(&c.GroupCacheTTL, "slack-reviewer-group-ttl", 5*time.Minute, "how long the reviewer group's members are cached")
}

// Enabled reports whether Slack is configured: a bot token is what turns it on.
func (c Config) Enabled() bool { return c.BotToken != "" }

// Validate checks an enabled configuration and fills defaults.
func (c *Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if c.Channel == "" {
		errs = append(errs, errors.New("MEMGATE_SLACK_CHANNEL (--slack-channel) is required with a bot token"))
	}
	if c.AppToken != "" && !strings.HasPrefix(c.AppToken, "xapp-") {
		errs = append(errs, errors.New("MEMGATE_SLACK_APP_TOKEN must be an app-level token (xapp-…)"))
	}
	if c.APIURL != "" && !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	if c.RemindAfter <= 0 {
		c.RemindAfter = time.Hour
	}
	if c.GroupCacheTTL <= 0 {
		c.GroupCacheTTL = 5 * time.Minute
	}
	c.Reviewers = splitIDs(strings.Join(c.Reviewers, ","))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("slack: %w", err)
	}
	return nil
}

func splitIDs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
