package mem0

import (
	"encoding/json"
	"net/http"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// errorBody is Mem0's error shape. The platform answers {"error": "..."},
// its auth layer and the open-source server (FastAPI) {"detail": "..."};
// both carry the message, so every Mem0 client finds it. code is memgate's.
type errorBody struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	// Reasons are the policy rules that refused a write.
	Reasons []memory.Reason `json:"reasons,omitempty"`
}

// fail answers err in Mem0's error shape; only internal errors are logged,
// the others are the caller's to fix.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := memory.ErrorCode(err)
	status := proxy.StatusOf(code) // the same statuses as the native API's; Mem0's body shape
	switch {
	case proxy.ClientLeft(r, err):
		h.log.Debug("mem0 request stopped: the client left", "method", r.Method, "path", r.URL.Path, "err", err)
	case code == memory.EINTERNAL:
		h.log.Error("mem0 request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if code == memory.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", `Token realm="memgate-mem0"`)
	}
	msg := memory.ErrorMessage(err)
	writeJSON(w, status, errorBody{Error: msg, Detail: msg, Code: code})
}

// refused answers a write policy rejected outright (e.g. a secret).
func (h *Handler) refused(w http.ResponseWriter, rec *memory.Record) {
	msg := "policy rejected this memory"
	var reasons []memory.Reason
	if rec != nil && rec.Decision != nil {
		reasons = rec.Decision.Reasons
		if len(reasons) > 0 {
			msg += ": " + reasons[0].Message
		}
	}
	writeJSON(w, http.StatusUnprocessableEntity, errorBody{Error: msg, Detail: msg, Code: memory.EREJECTED, Reasons: reasons})
}

// writeJSON answers with v as JSON. Every Mem0 answer has a body: the SDKs
// parse every response, so there is never a 204.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to do
}
