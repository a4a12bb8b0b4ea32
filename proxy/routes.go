package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/memgate/memgate/memory"
)

// JSONRoutes serves mux, answering a request it has no route for (404) or
// no method for (405, with the mux's Allow header) with the JSON error
// shape every other answer uses, instead of the mux's plain text.
func JSONRoutes(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// No pattern: the mux would answer 404 or 405 itself. Learn which
		// (and the methods it allows) without sending its text.
		probe := &statusProbe{header: http.Header{}}
		h, _ := mux.Handler(r)
		h.ServeHTTP(probe, r)
		var body ErrorBody
		switch probe.status {
		case http.StatusMethodNotAllowed:
			allow := probe.header.Get("Allow")
			w.Header().Set("Allow", allow)
			body.Error.Code = "method_not_allowed"
			body.Error.Message = fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.ReplaceAll(allow, ",", ", "))
			WriteJSON(w, http.StatusMethodNotAllowed, body)
		default:
			body.Error.Code = memory.ENOTFOUND
			body.Error.Message = fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)
			WriteJSON(w, http.StatusNotFound, body)
		}
	})
}

// statusProbe keeps the status and headers a handler answers, and drops
// its body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }

func (p *statusProbe) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}
