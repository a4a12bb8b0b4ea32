package slack

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/slack-go/slack"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/notify"
)

// errorClass is what a Slack error means for the notice that met it.
type errorClass int

const (
	// unknownError: an error this table does not name. It may concern this
	// message only, or be a new way of saying the settings are wrong, so the
	// notice is kept and retried on its own (notify.DeliveryError's
	// ThisNoticeOnly): it neither is lost nor holds the others up.
	unknownError errorClass = iota
	// passing: Slack's side, for a while. Retried, pausing every delivery
	// (an outage or a rate limit hits every notice alike).
	passing
	// settings: memgate's token, scopes or channel. Every notice fails alike
	// until an operator fixes it, so none is dropped: all wait, retried with
	// the capped backoff, counted as reason "config", and the Slack check
	// (check.go) says what to fix and re-checks until it is fixed.
	settings
	// thisMessage: Slack can never take this message (too long, malformed,
	// the message to update was deleted). The notice is dropped; the parked
	// write stays in the review queue and is re-announced by the Reminder.
	thisMessage
)

// slackError is one row of the table: the class of an ok:false error and,
// for a settings error, which setting is wrong (a checkReason: the metric
// label and the fix the startup check names).
type slackError struct {
	class   errorClass
	problem checkReason
}

// slackErrors classifies every ok:false error of the methods memgate calls
// (auth.test, conversations.info, chat.postMessage, chat.update) by whether
// it is per notice or per configuration. One table: the outbox's retry and
// drop decisions and the startup check's warnings both read it.
var slackErrors = map[string]slackError{
	// Slack's side, passing.
	"ratelimited":            {class: passing},
	"rate_limited":           {class: passing},
	"message_limit_exceeded": {class: passing}, // too many messages from the team for now
	"internal_error":         {class: passing},
	"fatal_error":            {class: passing},
	"service_unavailable":    {class: passing},
	"request_timeout":        {class: passing},
	"team_added_to_org":      {class: passing}, // a workspace migration in progress

	// The token: wrong, revoked, expired, not a bot's, or its workspace or
	// user gone. A new token needs a restart (it is configuration).
	"invalid_auth":              {settings, problemToken},
	"not_authed":                {settings, problemToken},
	"token_revoked":             {settings, problemToken},
	"token_expired":             {settings, problemToken},
	"account_inactive":          {settings, problemToken},
	"not_allowed_token_type":    {settings, problemToken},
	"org_login_required":        {settings, problemToken},
	"two_factor_setup_required": {settings, problemToken},
	"enterprise_is_restricted":  {settings, problemToken},
	"team_access_not_granted":   {settings, problemToken},
	"access_denied":             {settings, problemRestricted}, // posting denied by a workspace or Enterprise setting
	"accesslimited":             {settings, problemToken},
	"ekm_access_denied":         {settings, problemRestricted}, // posting denied by a workspace or Enterprise setting
	"method_deprecated":         {settings, problemToken},      // a memgate too old for the workspace: upgrade
	"deprecated_endpoint":       {settings, problemToken},

	// The app's scopes: add them and reinstall the app (the bot token stays
	// the same, so no restart is needed).
	"missing_scope": {settings, problemScope},
	"no_permission": {settings, problemScope},

	// The channel: wrong id, the bot not invited, archived, or posting
	// restricted by a workspace setting. An invite needs no restart.
	"channel_not_found":                        {settings, problemChannelNotFound},
	"not_in_channel":                           {settings, problemNotInChannel},
	"is_archived":                              {settings, problemArchived},
	"restricted_action":                        {settings, problemRestricted},
	"restricted_action_read_only_channel":      {settings, problemRestricted},
	"restricted_action_thread_only_channel":    {settings, problemRestricted},
	"restricted_action_non_threadable_channel": {settings, problemRestricted},

	// This message only.
	"msg_too_long":                    {class: thisMessage}, // after our own bounds: nothing shorter will be sent
	"msg_blocks_too_long":             {class: thisMessage},
	"no_text":                         {class: thisMessage},
	"invalid_blocks":                  {class: thisMessage},
	"invalid_blocks_format":           {class: thisMessage},
	"too_many_attachments":            {class: thisMessage},
	"invalid_attachments":             {class: thisMessage},
	"markdown_text_conflict":          {class: thisMessage},
	"invalid_metadata_format":         {class: thisMessage},
	"invalid_metadata_schema":         {class: thisMessage},
	"metadata_too_large":              {class: thisMessage},
	"invalid_arguments":               {class: thisMessage},
	"invalid_arg_name":                {class: thisMessage},
	"invalid_array_arg":               {class: thisMessage},
	"invalid_charset":                 {class: thisMessage},
	"invalid_form_data":               {class: thisMessage},
	"invalid_post_type":               {class: thisMessage},
	"missing_post_type":               {class: thisMessage},
	"message_not_found":               {class: thisMessage}, // chat.update: the message was deleted
	"cant_update_message":             {class: thisMessage},
	"edit_window_closed":              {class: thisMessage},
	"thread_not_found":                {class: thisMessage}, // a reply to a deleted message
	"cannot_reply_to_message":         {class: thisMessage},
	"restricted_action_thread_locked": {class: thisMessage},
	"duplicate_message_not_found":     {class: thisMessage},
}

// classifyStatus sorts an HTTP status other than 200. Slack itself answers
// 200 with ok:false; other statuses come from its edge or a proxy.
func classifyStatus(code int) errorClass {
	switch {
	case code == http.StatusTooManyRequests, code == http.StatusRequestTimeout, code >= 500:
		return passing
	case code == http.StatusRequestEntityTooLarge, code == http.StatusRequestURITooLong:
		return thisMessage
	}
	// 401/403 from an egress proxy, 404 from a wrong MEMGATE_SLACK_API_URL,
	// 410 from a retired method: the same for every notice.
	return settings
}

// classify turns a Web API failure into the outbox's terms (see slackErrors):
// retry an unreachable Slack, a 5xx, a 408 or a 429 (with its Retry-After);
// keep and retry a settings error (reason config, never dropped); drop only
// a message Slack can never take; keep and retry alone an unknown error.
func classify(err error) (retry bool, _ error) {
	if err == nil {
		return false, nil
	}
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se slack.SlackErrorResponse
	var ne net.Error
	switch {
	case errors.As(err, &rl):
		return true, &notify.DeliveryError{Reason: notify.ReasonRateLimited, RetryAfter: rl.RetryAfter, Err: err}
	case errors.As(err, &sc):
		switch classifyStatus(sc.Code) {
		case passing:
			if sc.Code == http.StatusTooManyRequests {
				return true, &notify.DeliveryError{Reason: notify.ReasonRateLimited, Err: err}
			}
			return true, &notify.DeliveryError{Reason: notify.ReasonServerError, Err: err}
		case thisMessage:
			return false, &notify.DeliveryError{Reason: notify.ReasonClientError, Err: err}
		}
		return true, &notify.DeliveryError{Reason: notify.ReasonConfig, Err: err}
	case errors.As(err, &se):
		switch slackErrors[se.Err].class {
		case passing:
			return true, &notify.DeliveryError{Reason: notify.ReasonServerError, Err: err}
		case settings:
			return true, &notify.DeliveryError{Reason: notify.ReasonConfig, Err: err}
		case thisMessage:
			return false, &notify.DeliveryError{Reason: notify.ReasonRejected, Err: err}
		}
		return true, &notify.DeliveryError{Reason: notify.ReasonRejected, ThisNoticeOnly: true, Err: err}
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
		return true, &notify.DeliveryError{Reason: notify.ReasonNetwork, Err: err}
	}
	var me *memory.Error
	if errors.As(err, &me) && me.Code != memory.EINTERNAL && me.Code != memory.EUNAVAILABLE && me.Code != memory.EINSUFFICIENTSTORAGE {
		// The governor's answer about the record (e.g. not found): no retry changes it.
		return false, &notify.DeliveryError{Reason: notify.ReasonInternal, Err: err}
	}
	// Anything else (a truncated body, a proxy's HTML page, our store): keep
	// the notice and try again rather than lose it.
	return true, &notify.DeliveryError{Reason: notify.ReasonNetwork, Err: err}
}
