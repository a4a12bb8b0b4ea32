package memory

import (
	"errors"
	"fmt"
)

// Error codes. Each surface maps them to its own error shape in one table
// (HTTP status, MCP error, Mem0 error body).
const (
	EINVALID             = "invalid"              // bad input; nothing was written
	ENOTFOUND            = "not_found"            // unknown id
	ESTALE               = "stale"                // the slot changed while a write waited for review
	EDECIDED             = "already_decided"      // a review decision was already taken
	ECONFLICT            = "conflict"             // the record is not in a state that allows the call
	EREJECTED            = "rejected"             // policy rejected the write
	EUNAUTHORIZED        = "unauthorized"         // missing or wrong credentials
	EFORBIDDEN           = "forbidden"            // the caller's key does not allow it (another tenant's scope)
	ETOOLARGE            = "too_large"            // a request body over its bound
	EUNAVAILABLE         = "unavailable"          // shutting down or not ready
	EINSUFFICIENTSTORAGE = "insufficient_storage" // the disk is (nearly) full: writes are refused, reads work
	EINTERNAL            = "internal"             // anything unexpected
	internalErrMsg       = "Internal error."
)

// Error is a domain error with a machine-readable code and a message that is
// safe to show to the caller. Err, when set, is the cause: errors.Is and
// errors.As see it (a context deadline behind an EUNAVAILABLE, say).
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return fmt.Sprintf("memgate %s: %s", e.Code, e.Message) }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message; a
// %w verb wraps its operand as the cause, as fmt.Errorf does.
func Errorf(code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// ErrorCode returns the code of err, or EINTERNAL for errors that are not
// *Error (or wrap one).
func ErrorCode(err error) string {
	return errorPart(err, func(e *Error) string { return e.Code }, EINTERNAL)
}

// ErrorMessage returns the caller-safe message of err; internal errors are
// never shown verbatim.
func ErrorMessage(err error) string {
	return errorPart(err, func(e *Error) string { return e.Message }, internalErrMsg)
}

// errorPart is part of the *Error err is or wraps, other for any other
// error, and "" for none.
func errorPart(err error, part func(*Error) string, other string) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return part(e)
	}
	return other
}
