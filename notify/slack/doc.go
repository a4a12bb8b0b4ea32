// Package slack is memgate's Slack integration (DESIGN §4): one Block Kit
// message per parked write that answers the reviewer's five questions, with
// Approve / Approve as append / Reject buttons; decisions go through the
// governor like the CLI's; the message is updated in place after a decision
// by any route; only allowed reviewers decide. Interactivity arrives over
// Socket Mode (outbound only) or a signed HTTP endpoint. Notices come from
// the durable outbox in package notify; this package formats, calls the Web
// API and classifies its answers.
package slack

// routeSlack is the memory.Review route of decisions taken in Slack.
const routeSlack = "slack"
