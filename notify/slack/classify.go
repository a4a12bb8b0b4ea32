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

// transientSlackErrors are ok:false answers Slack documents as passing.
var transientSlackErrors = map[string]bool{
	"ratelimited": true, "rate_limited": true, "internal_error": true, "fatal_error": true,
	"service_unavailable": true, "request_timeout": true, "team_added_to_org": true,
}

// classify turns a Web API failure into the outbox's terms: retry an
// unreachable Slack, a 5xx, a 408 or a 429 (with its Retry-After); never
// retry another 4xx or an ok:false error such as channel_not_found,
// not_in_channel, invalid_auth or invalid_blocks, which no retry fixes.
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
		switch {
		case sc.Code == http.StatusTooManyRequests:
			return true, &notify.DeliveryError{Reason: notify.ReasonRateLimited, Err: err}
		case sc.Code >= 500 || sc.Code == http.StatusRequestTimeout:
			return true, &notify.DeliveryError{Reason: notify.ReasonServerError, Err: err}
		}
		return false, &notify.DeliveryError{Reason: notify.ReasonClientError, Err: err}
	case errors.As(err, &se):
		if transientSlackErrors[se.Err] {
			return true, &notify.DeliveryError{Reason: notify.ReasonServerError, Err: err}
		}
		return false, &notify.DeliveryError{Reason: notify.ReasonRejected, Err: err}
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
