package proxy

import (
	"net/http"
	"time"

	"github.com/memgate/memgate/audit"
	"github.com/memgate/memgate/memory"
)

// auditVerify walks the audit chain and answers the report: 200 whether
// or not the chain is intact (ok says which).
func (a *Admin) auditVerify(w http.ResponseWriter, r *http.Request) {
	if a.Audit == nil {
		WriteError(w, r, a.Log, memory.Errorf(memory.EUNAVAILABLE, "this store keeps no audit chain"))
		return
	}
	rep, err := memory.VerifyChain(r.Context(), a.Audit)
	if err == nil && !rep.OK {
		a.Log.Error("audit: the audit chain does not verify", "kind", rep.Problem.Kind, "event", rep.Problem.EventID,
			"seq", rep.Problem.Seq, "detail", rep.Problem.Detail)
	}
	a.answer(w, r, rep, err)
}

// auditExport streams the events between from and to (RFC 3339, either
// may be left out) as an unsigned export (package audit); the CLI signs it.
func (a *Admin) auditExport(w http.ResponseWriter, r *http.Request) {
	if a.Audit == nil {
		WriteError(w, r, a.Log, memory.Errorf(memory.EUNAVAILABLE, "this store keeps no audit chain"))
		return
	}
	var bounds [2]time.Time
	for i, name := range []string{"from", "to"} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			WriteError(w, r, a.Log, memory.Errorf(memory.EINVALID, "%s: want an RFC 3339 time, got %q", name, v))
			return
		}
		bounds[i] = t
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if _, err := audit.Export(r.Context(), a.Audit, bounds[0], bounds[1], time.Now(), w); err != nil {
		// The status is sent: a cut stream has no end line, which the
		// checker reports.
		a.Log.Error("audit: export failed", "err", err)
	}
}

// erase runs an erasure: {"scope": {"userId"|"agentId"|"appId"|"runId"}, "reason", "by"}.
func (a *Admin) erase(w http.ResponseWriter, r *http.Request) {
	if a.Erase == nil {
		WriteError(w, r, a.Log, memory.Errorf(memory.EUNAVAILABLE, "erasure is not available"))
		return
	}
	var req memory.ErasureRequest
	if a.failed(w, r, a.decodeOptional(w, r, &req)) {
		return
	}
	req.By = by(req.By)
	res, err := a.Erase(r.Context(), req)
	a.answer(w, r, res, err)
}
