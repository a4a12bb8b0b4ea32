// Package proxy serves memgate's HTTP surfaces: the agent listener (native
// REST, and the Mem0 and MCP dialects mounted from their own packages) and
// the admin listener (review, explain, rollback, quarantine, health).
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/memgate/memgate/memory"
)

// MaxBodyBytes bounds every request body on both listeners, but for the
// admin listener's policy replay (MaxPolicyBodyBytes).
const MaxBodyBytes = 1 << 20

// MaxPolicyBodyBytes bounds a policy sent to the admin API (replay): a
// policy may hold 8 MiB of files (policy.MaxPolicyTotalBytes, its
// classifier model among them), with room for JSON's escaping.
const MaxPolicyBodyBytes = 10 << 20

// statusOf is the one table from domain error codes to HTTP statuses, for
// every HTTP dialect (StatusOf).
var statusOf = map[string]int{
	memory.EINVALID:             http.StatusBadRequest,
	memory.ENOTFOUND:            http.StatusNotFound,
	memory.ESTALE:               http.StatusConflict,
	memory.EDECIDED:             http.StatusConflict,
	memory.ECONFLICT:            http.StatusConflict,
	memory.EREJECTED:            http.StatusUnprocessableEntity,
	memory.EUNAUTHORIZED:        http.StatusUnauthorized,
	memory.EFORBIDDEN:           http.StatusForbidden,
	memory.ETOOLARGE:            http.StatusRequestEntityTooLarge,
	memory.EUNAVAILABLE:         http.StatusServiceUnavailable,
	memory.EINSUFFICIENTSTORAGE: http.StatusInsufficientStorage,
	memory.EINTERNAL:            http.StatusInternalServerError,
}

// StatusOf is the HTTP status of a domain error code (500 for one it does
// not know).
func StatusOf(code string) int {
	if status, ok := statusOf[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// ErrorBody is the JSON error shape of the native and admin APIs.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Record *memory.Record `json:"record,omitempty"`
}

// WriteError answers with the JSON error shape; only internal errors are
// logged, since the others are the caller's to fix.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := memory.ErrorCode(err)
	status := StatusOf(code)
	switch {
	case ClientLeft(r, err):
		log.Debug("request stopped: the client left", "method", r.Method, "path", r.URL.Path, "err", err)
	case code == memory.EINTERNAL:
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	var body ErrorBody
	body.Error.Code, body.Error.Message = code, memory.ErrorMessage(err)
	WriteJSON(w, status, body)
}

// ClientLeft reports whether err ended a request because its client went
// away (its context is done): reads stop then, which is not a failure of
// memgate's, and nobody reads the answer.
func ClientLeft(r *http.Request, err error) bool {
	return r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// WriteJSON answers with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to do
}

// DecodeJSON reads one JSON object from a bounded body into v by the
// strict rules (see UnmarshalStrict), refusing unknown fields and trailing
// data. Errors are EINVALID or ETOOLARGE.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSONUpTo(w, r, v, MaxBodyBytes)
}

func decodeJSONUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	body, err := readBodyUpTo(w, r, limit)
	if err != nil {
		return err
	}
	return DecodeStrict(body, v)
}

// ReadBody reads the request body up to MaxBodyBytes.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readBodyUpTo(w, r, MaxBodyBytes)
}

func readBodyUpTo(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, memory.Errorf(memory.ETOOLARGE, "request body is larger than %d bytes", limit)
	} else if err != nil {
		return nil, memory.Errorf(memory.EINVALID, "reading request body: %v", err)
	}
	return body, nil
}

// DecodeStrict decodes one JSON value into v by the strict rules: valid
// UTF-8, no duplicate member names, nesting bounded by MaxJSONDepth, member
// names matching v's fields exactly, nothing unknown, nothing after it.
func DecodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return memory.Errorf(memory.EINVALID, "request body is empty; a JSON object is required")
	}
	if err := UnmarshalStrict(body, v); err != nil {
		return memory.Errorf(memory.EINVALID, "malformed JSON: %v", err)
	}
	return nil
}
