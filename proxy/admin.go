package proxy

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
)

// Admin serves the operator API on the admin listener. Every /admin/ route
// needs the bearer token; health endpoints do not.
type Admin struct {
	Gov   *memory.Governor
	Log   *slog.Logger
	Token string
	// Ready reports whether the sidecar serves traffic (nil: always).
	Ready func(context.Context) error
	// Replay evaluates a policy given as files over the audit log (nil: 503).
	Replay func(ctx context.Context, files map[string]string) (any, error)
	// Snapshot writes a full backup of the store (nil: 503).
	Snapshot func(ctx context.Context, w io.Writer) error
	// Erase runs an erasure and answers what it did (nil: 503).
	Erase func(ctx context.Context, req memory.ErasureRequest) (any, error)
	// Audit is the store's audit chain, for verify and export (nil: 503).
	Audit memory.AuditChain
	// EventPageBytes bounds a page of GET /admin/v1/events and of GET
	// /admin/v1/reviews in bytes of JSON (0: memory.EventPageBytes, 1 MiB).
	EventPageBytes int
}

// Register adds the admin routes to mux.
func (a *Admin) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", a.ready)
	route := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, a.auth(h)) }
	route("GET /admin/v1/reviews", a.reviews)
	route("GET /admin/v1/reviews/{id}", a.review)
	route("POST /admin/v1/reviews/{id}/approve", a.approve)
	route("POST /admin/v1/reviews/{id}/reject", a.reject)
	route("GET /admin/v1/memories/{id}", a.get)
	route("GET /admin/v1/memories/{id}/explain", a.explain)
	route("GET /admin/v1/memories/{id}/history", a.history)
	route("POST /admin/v1/memories/{id}/rollback", a.rollback)
	route("POST /admin/v1/quarantine", a.quarantine)
	route("POST /admin/v1/restore", a.restore)
	route("GET /admin/v1/events", a.events)
	route("POST /admin/v1/policy/replay", a.replay)
	route("GET /admin/v1/policy/mode", a.policyMode)
	route("PUT /admin/v1/policy/mode", a.setPolicyMode)
	route("GET /admin/v1/shadow", a.shadowed)
	route("GET /admin/v1/snapshot", a.snapshot)
	route("POST /admin/v1/erase", a.erase)
	route("GET /admin/v1/audit/verify", a.auditVerify)
	route("GET /admin/v1/audit/export", a.auditExport)
	route("/admin/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, a.Log, memory.Errorf(memory.ENOTFOUND, "no admin route %s %s", r.Method, r.URL.Path))
	})
}

func (a *Admin) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || a.Token == "" || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(a.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="memgate-admin"`)
			WriteError(w, r, a.Log, memory.Errorf(memory.EUNAUTHORIZED, "a valid admin token is required (Authorization: Bearer <token>)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *Admin) ready(w http.ResponseWriter, r *http.Request) {
	if a.Ready != nil {
		if err := a.Ready(r.Context()); err != nil {
			WriteError(w, r, a.Log, memory.Errorf(memory.EUNAVAILABLE, "not ready: %v", err))
			return
		}
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// reviews answers a page of the review queue, oldest first: at most limit
// items (default 100, at most 10,000) and EventPageBytes of JSON (at least
// one item); next, when set, is the after of the following page.
func (a *Admin) reviews(w http.ResponseWriter, r *http.Request) {
	answerPage(a, w, r, a.Gov.ReviewsPage)
}

// answerPage answers the page read gives for the request's after and
// limit, bounded by EventPageBytes.
func answerPage[P any](a *Admin, w http.ResponseWriter, r *http.Request, read func(ctx context.Context, after string, limit, maxBytes int) (P, error)) {
	limit, err := pageLimit(r.URL.Query().Get("limit"))
	if a.failed(w, r, err) {
		return
	}
	page, err := read(r.Context(), r.URL.Query().Get("after"), limit, a.EventPageBytes)
	a.answer(w, r, page, err)
}

func (a *Admin) review(w http.ResponseWriter, r *http.Request) {
	item, err := a.Gov.Review(r.Context(), r.PathValue("id"))
	a.answer(w, r, item, err)
}

// DecisionRequest is the body of approve and reject.
type DecisionRequest struct {
	Mode   memory.ReviewMode `json:"mode,omitempty"`
	Note   string            `json:"note,omitempty"`
	Reason string            `json:"reason,omitempty"`
	By     string            `json:"by,omitempty"`
}

func (a *Admin) decision(w http.ResponseWriter, r *http.Request) (memory.Review, bool) {
	var req DecisionRequest
	if a.failed(w, r, a.decodeOptional(w, r, &req)) {
		return memory.Review{}, false
	}
	rv := memory.Review{By: req.By, Mode: req.Mode, Note: req.Note, Route: "admin"}
	if rv.By == "" {
		rv.By = "admin"
	}
	if req.Reason != "" {
		rv.Note = req.Reason
	}
	if route := r.Header.Get("X-Memgate-Route"); route == "cli" {
		rv.Route = route
	}
	return rv, true
}

func (a *Admin) approve(w http.ResponseWriter, r *http.Request) { a.decide(w, r, a.Gov.Approve) }
func (a *Admin) reject(w http.ResponseWriter, r *http.Request)  { a.decide(w, r, a.Gov.Reject) }

// decide reads a decision's request and makes it with fn, Approve or
// Reject.
func (a *Admin) decide(w http.ResponseWriter, r *http.Request, fn func(context.Context, string, memory.Review) (*memory.Record, error)) {
	rv, ok := a.decision(w, r)
	if !ok {
		return
	}
	rec, err := fn(r.Context(), r.PathValue("id"), rv)
	a.answer(w, r, rec, err)
}

func (a *Admin) get(w http.ResponseWriter, r *http.Request) {
	rec, err := a.Gov.Get(r.Context(), r.PathValue("id"))
	a.answer(w, r, rec, err)
}

func (a *Admin) explain(w http.ResponseWriter, r *http.Request) {
	ex, err := a.Gov.Explain(r.Context(), r.PathValue("id"))
	a.answer(w, r, ex, err)
}

func (a *Admin) history(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	slot := id
	if rec, err := a.Gov.Get(r.Context(), id); err == nil {
		slot = rec.SlotID
	}
	recs, err := a.Gov.History(r.Context(), slot)
	a.answer(w, r, map[string]any{"slotId": slot, "versions": recs}, err)
}

// RollbackRequest is the body of a rollback.
type RollbackRequest struct {
	Cascade bool   `json:"cascade"`
	Reason  string `json:"reason"`
	By      string `json:"by,omitempty"`
}

func (a *Admin) rollback(w http.ResponseWriter, r *http.Request) {
	var req RollbackRequest
	if a.failed(w, r, a.decodeOptional(w, r, &req)) {
		return
	}
	res, err := a.Gov.Rollback(r.Context(), r.PathValue("id"), req.Cascade, req.Reason, by(req.By))
	a.answer(w, r, res, err)
}

// QuarantineRequest is the body of a quarantine.
type QuarantineRequest struct {
	RunID   string `json:"runId,omitempty"`
	ActorID string `json:"actorId,omitempty"`
	Reason  string `json:"reason"`
	By      string `json:"by,omitempty"`
}

func (a *Admin) quarantine(w http.ResponseWriter, r *http.Request) {
	var req QuarantineRequest
	if a.failed(w, r, DecodeJSON(w, r, &req)) {
		return
	}
	kind, id := "run", req.RunID
	switch {
	case req.RunID != "" && req.ActorID != "":
		WriteError(w, r, a.Log, memory.Errorf(memory.EINVALID, "give runId or actorId, not both"))
		return
	case req.ActorID != "":
		kind, id = "actor", req.ActorID
	}
	res, err := a.Gov.Quarantine(r.Context(), kind, id, req.Reason, by(req.By))
	a.answer(w, r, res, err)
}

// RestoreRequest is the body of a restore.
type RestoreRequest struct {
	SubjectID string    `json:"subjectId"`
	At        time.Time `json:"at"`
	Reason    string    `json:"reason"`
	By        string    `json:"by,omitempty"`
}

func (a *Admin) restore(w http.ResponseWriter, r *http.Request) {
	var req RestoreRequest
	if a.failed(w, r, DecodeJSON(w, r, &req)) {
		return
	}
	if req.At.IsZero() {
		WriteError(w, r, a.Log, memory.Errorf(memory.EINVALID, "at (an RFC 3339 time) is required"))
		return
	}
	res, err := a.Gov.Restore(r.Context(), req.SubjectID, req.At, req.Reason, by(req.By))
	a.answer(w, r, res, err)
}

// events answers a page of the audit log: at most limit events and
// EventPageBytes of JSON (at least one event); next, when set, is the
// after of the following page.
func (a *Admin) events(w http.ResponseWriter, r *http.Request) {
	answerPage(a, w, r, a.Gov.EventsPage)
}

// PolicyModeRequest is the body of PUT /admin/v1/policy/mode, and its answer.
type PolicyModeRequest struct {
	Mode memory.PolicyMode `json:"mode"`
}

func (a *Admin) policyMode(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, PolicyModeRequest{Mode: a.Gov.PolicyMode()})
}

// setPolicyMode switches enforce/shadow at once; no restart. The mode is
// not persisted: a restart starts in --policy-mode.
func (a *Admin) setPolicyMode(w http.ResponseWriter, r *http.Request) {
	var req PolicyModeRequest
	if a.failed(w, r, DecodeJSON(w, r, &req)) {
		return
	}
	if req.Mode == "" {
		WriteError(w, r, a.Log, memory.Errorf(memory.EINVALID, "mode is required: %q or %q", memory.PolicyEnforce, memory.PolicyShadow))
		return
	}
	if err := a.Gov.SetPolicyMode(req.Mode); err != nil {
		WriteError(w, r, a.Log, err)
		return
	}
	a.Log.Info("policy mode set through the admin API", "mode", req.Mode)
	WriteJSON(w, http.StatusOK, PolicyModeRequest{Mode: a.Gov.PolicyMode()})
}

// shadowed lists the writes applied although policy would have parked or
// rejected them: ?after=<event id>&limit=N&order=newest|oldest (newest
// by default: what would it have stopped lately).
func (a *Admin) shadowed(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		WriteError(w, r, a.Log, err)
		return
	}
	var newest bool
	switch q.Get("order") {
	case "", "newest":
		newest = true
	case "oldest":
	default:
		WriteError(w, r, a.Log, memory.Errorf(memory.EINVALID, "order must be newest or oldest"))
		return
	}
	page, err := a.Gov.Shadowed(r.Context(), q.Get("after"), limit, newest)
	a.answer(w, r, page, err)
}

// pageLimit reads a page's limit: 100 by default, 1 to 10000.
func pageLimit(s string) (int, error) {
	if s == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 10000 {
		return 0, memory.Errorf(memory.EINVALID, "limit must be between 1 and 10000")
	}
	return n, nil
}

// ReplayRequest carries a policy directory's files (path → content).
type ReplayRequest struct {
	Files map[string]string `json:"files"`
}

func (a *Admin) replay(w http.ResponseWriter, r *http.Request) {
	if a.Replay == nil {
		WriteError(w, r, a.Log, memory.Errorf(memory.EUNAVAILABLE, "policy replay is not available"))
		return
	}
	var req ReplayRequest
	if err := decodeJSONUpTo(w, r, &req, MaxPolicyBodyBytes); err != nil {
		WriteError(w, r, a.Log, err)
		return
	}
	if len(req.Files) == 0 {
		WriteError(w, r, a.Log, memory.Errorf(memory.EINVALID, "files is required: the policy's .rego and data files"))
		return
	}
	rep, err := a.Replay(r.Context(), req.Files)
	a.answer(w, r, rep, err)
}

func (a *Admin) snapshot(w http.ResponseWriter, r *http.Request) {
	if a.Snapshot == nil {
		WriteError(w, r, a.Log, memory.Errorf(memory.EUNAVAILABLE, "snapshots are not available"))
		return
	}
	// Spool first so a failure is an error answer, not a truncated backup.
	f, err := os.CreateTemp("", "memgate-snapshot-*")
	if err != nil {
		WriteError(w, r, a.Log, fmt.Errorf("snapshot: %w", err))
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := a.Snapshot(r.Context(), f); err != nil {
		WriteError(w, r, a.Log, fmt.Errorf("snapshot: %w", err))
		return
	}
	w.Header().Set("Content-Disposition", `attachment; filename="memgate.backup"`)
	http.ServeContent(w, r, "memgate.backup", time.Now(), f)
}

// decodeOptional accepts an empty body as the zero request.
func (a *Admin) decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := ReadBody(w, r)
	if err != nil || len(strings.TrimSpace(string(body))) == 0 {
		return err
	}
	return DecodeStrict(body, v)
}

// failed answers err, when there is one, and reports whether there was.
func (a *Admin) failed(w http.ResponseWriter, r *http.Request, err error) bool {
	if err != nil {
		WriteError(w, r, a.Log, err)
		return true
	}
	return false
}

func (a *Admin) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		WriteError(w, r, a.Log, err)
		return
	}
	WriteJSON(w, http.StatusOK, v)
}

func by(s string) string {
	if s == "" {
		return "admin"
	}
	return s
}
