package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/memgate/memgate/memory"
)

// failure is what a database error means to a transaction's runner.
type failure int

const (
	// failOther: a bug, a constraint, bad data: returned as is.
	failOther failure = iota
	// failRetry: the transaction lost a serialization or deadlock race
	// and was rolled back; running it again may succeed.
	failRetry
	// failUnavailable: the database cannot be reached or is shutting
	// down; the transaction did not commit (unless failed in COMMIT).
	failUnavailable
)

// classify says what err, returned by pgx, means.
func classify(err error) failure {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001", pe.Code == "40P01": // serialization_failure, deadlock_detected
			return failRetry
		case strings.HasPrefix(pe.Code, "08"), // connection_exception and its kinds
			pe.Code == "57P01", // admin_shutdown
			pe.Code == "57P02", // crash_shutdown
			pe.Code == "57P03", // cannot_connect_now (starting up, shutting down, in recovery)
			pe.Code == "53300": // too_many_connections
			return failUnavailable
		}
		return failOther
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, pgconn.ErrConnClosed), // a connection found broken before use
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded):
		return failUnavailable
	}
	return failOther
}

// unavailable is the domain error of a database that does not answer,
// which the HTTP layers answer with 503. The cause stays in the chain for
// logs; the message is safe to show.
func unavailable(what string, cause error) error {
	return &domainError{memory.Errorf(memory.EUNAVAILABLE, "the database is unavailable: %s", what), cause}
}

// badInput is the domain error (EINVALID) of a value PostgreSQL refused as
// text: a NUL byte (22021 character_not_in_repertoire, which invalid UTF-8
// also is) or a character the database's encoding lacks (22P05). The
// domain checks ids before a store sees them (memory.CheckLookupID); this
// keeps one that slipped through a 400 rather than a 500. Nil for any
// other error.
func badInput(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || (pe.Code != "22021" && pe.Code != "22P05") {
		return nil
	}
	return &domainError{memory.Errorf(memory.EINVALID, "a value holds a byte the database cannot store as text (NUL or invalid UTF-8)"), err}
}

// domainError is a domain answer for a database error, which stays in the
// chain for logs.
type domainError struct {
	domain *memory.Error
	cause  error
}

func (e *domainError) Error() string {
	return "pgstore: " + e.domain.Message + ": " + e.cause.Error()
}
func (e *domainError) Unwrap() []error { return []error{e.domain, e.cause} }

// errCommitUnknown is the message of a commit whose outcome is unknown:
// the connection broke after COMMIT was sent, so the write may or may not
// be in the database. It is never reported as done.
const errCommitUnknown = "the connection was lost during commit; the write may or may not have been applied"
