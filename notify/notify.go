// Package notify delivers reviewer notifications from the durable outbox.
//
// The governor stores a memory.Notice in the same transaction as the
// transition that caused it (a parked write, a decision, a stale approval, a
// rollback, a quarantine). The Outbox worker here reads those notices,
// hands them to one integration (a Notifier, e.g. notify/slack), deletes each
// only after it was delivered, and reschedules failures with exponential
// backoff that honours the server's Retry-After. Nothing is kept in memory
// that is not also on disk, so a restart resumes where delivery stopped.
//
// Several instances may share one store (a Claimer, the PostgreSQL store):
// their outboxes lease notices, so each is delivered by one of them, and
// their Reminders announce each round once (Outbox, Reminder).
//
// Integrations format and classify; the outbox, retry, ordering and
// reminders live here once.
package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memgate/memgate/memory"
)

// Notifier delivers notices to one integration. A batch is either one
// notice or several rollback notices written by one transaction (a cascade
// or a quarantine), which an integration may announce together.
//
// retry says whether a failure is worth trying again later (the server was
// unreachable, answered 5xx or rate-limited, or refuses our settings). A
// failure that is not retried is permanent for this batch (a message the
// service can never take) and the batch is dropped from the outbox, except
// that a DeliveryError with ReasonConfig is never dropped (see Outbox).
type Notifier interface {
	Notify(ctx context.Context, batch []*memory.Notice) (retry bool, err error)
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, batch []*memory.Notice) (bool, error)

// Notify calls f.
func (f NotifierFunc) Notify(ctx context.Context, batch []*memory.Notice) (bool, error) {
	return f(ctx, batch)
}

// Waker is what the governor calls after committing new notices
// (memory.Notified).
type Waker = memory.Notified

// Failure reasons, used as metric labels; a fixed set.
const (
	ReasonRateLimited = "rate_limited" // 429
	ReasonServerError = "server_error" // 5xx
	ReasonNetwork     = "network"      // unreachable, timeout, reset
	ReasonClientError = "client_error" // a 4xx that concerns this message only (e.g. 413): permanent
	ReasonRejected    = "rejected"     // the service answered with an error of its own (e.g. Slack's ok:false)
	ReasonInternal    = "internal"     // our side: store, governor, encoding
	// ReasonConfig: the service refuses our settings (a wrong or revoked
	// token, a missing scope, a channel the bot is not in). Every notice
	// would fail alike until an operator fixes it, so notices wait: they are
	// retried with backoff and never dropped.
	ReasonConfig = "config"
)

// DeliveryError tells the outbox why a delivery failed and when the server
// asked to be tried again.
type DeliveryError struct {
	Reason     string        // one of the Reason constants
	RetryAfter time.Duration // the server's Retry-After; 0 if none
	// ThisNoticeOnly says a retried failure may concern this batch alone
	// (an error the integration does not know): it is rescheduled without
	// pausing the other notices, so it cannot hold them up.
	ThisNoticeOnly bool
	Err            error
}

func (e *DeliveryError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%s (retry after %s): %v", e.Reason, e.RetryAfter, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Reason, e.Err)
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// reasonOf returns the metric label of a delivery failure.
func reasonOf(err error) string {
	var de *DeliveryError
	if errors.As(err, &de) && de.Reason != "" {
		return de.Reason
	}
	return ReasonInternal
}

// thisNoticeOnly reports whether a failure concerns its batch alone.
func thisNoticeOnly(err error) bool {
	var de *DeliveryError
	return errors.As(err, &de) && de.ThisNoticeOnly
}

// retryAfterOf returns the Retry-After a failure carries, or 0.
func retryAfterOf(err error) time.Duration {
	var de *DeliveryError
	if errors.As(err, &de) {
		return de.RetryAfter
	}
	return 0
}
