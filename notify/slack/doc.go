// Package slack is memgate's Slack integration (DESIGN §4): one Block Kit
// message per parked write that answers the reviewer's five questions, with
// Approve / Approve as append / Reject buttons; decisions go through the
// governor like the CLI's; the message is updated in place after a decision
// by any route; only allowed reviewers decide. Interactivity arrives over
// Socket Mode (outbound only) or a signed HTTP endpoint. Notices come from
// the durable outbox in package notify; this package formats, calls the Web
// API and classifies its answers (classify.go: one table, per notice or per
// configuration). At start and periodically it checks the bot token and the
// channel (check.go): a failure is a warning naming the fix and a metric,
// and notices wait in the outbox until it is fixed.
package slack

// routeSlack is the memory.Review route of decisions taken in Slack.
const routeSlack = "slack"
