package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/clip"
	"github.com/memgate/memgate/memory"
)

// Both listeners serve agents, operators and Slack, never web pages. A page
// in the operator's browser can still reach them: it can POST text/plain,
// form and multipart bodies to 127.0.0.1 without a CORS preflight, and
// through DNS rebinding (a name of the attacker's that first resolves to
// the attacker and then to 127.0.0.1) it can even read the answers.
// RefuseBrowsers closes both doors in front of every route.

// Error codes of the refusals.
const (
	CodeForbiddenHost    = "forbidden_host"
	CodeForbiddenOrigin  = "forbidden_origin"
	CodeUnsupportedMedia = "unsupported_media_type"
)

// BrowserPolicy configures RefuseBrowsers.
type BrowserPolicy struct {
	// AllowedHosts are Host header values accepted besides the defaults
	// (see RefuseBrowsers): a name ("memgate.internal", any port) or a
	// name and port ("memgate.internal:8443"). "*" accepts any Host. Set it
	// when a reverse proxy or tunnel forwards to a loopback listener under
	// another name.
	AllowedHosts []string
	// AllowedOrigins are the browser origins ("https://app.example.com",
	// scheme://host[:port] exactly as a browser sends it) that may call.
	// Their requests also get CORS answers, preflights included. The
	// opaque origin "null" is never allowed.
	AllowedOrigins []string
	// SignedPaths are exact paths whose handler authenticates each body by
	// its signature and whose caller is a server (Slack's POST
	// /slack/interactions is form-encoded and reaches memgate through a
	// tunnel under a public name): the content-type and Host rules do not
	// apply to them; the Origin rules do.
	SignedPaths []string
	// RPCPaths are exact paths that speak JSON-RPC (MCP's "/mcp"): their
	// refusals are JSON-RPC errors, and their JSON bodies are held to the
	// strict JSON rules (CheckJSON) before the handler sees them, since the
	// MCP SDK decodes them with encoding/json v1 (which keeps the last of
	// two duplicate names and matches names case-insensitively); member
	// names of one object that differ only in case are refused there too.
	RPCPaths []string
}

// RefuseBrowsers serves next to agents, operators and servers, and refuses
// what a browser sends on a web page's behalf:
//
//   - Host (DNS rebinding): on a connection that arrived at a loopback
//     address, Host must be a loopback name or address (localhost,
//     127.0.0.1, [::1]) with any port, or one of AllowedHosts; else 403
//     forbidden_host. Any port, because the port in Host is the one the
//     client dialled, which is not the listener's behind a port-forward
//     (ssh -L, kubectl port-forward, docker -p), while a rebinding page
//     always sends its own name, never a loopback one. On a connection to
//     a non-loopback address every Host is accepted unless AllowedHosts is
//     set: DNS rebinding is a way into services that only loopback can
//     reach, and a listener on a routable address is reachable by any name
//     without it (agent keys guard it); with AllowedHosts set, Host must be
//     one of them or the address the connection arrived at.
//   - Origin: a request carrying an Origin header not in AllowedOrigins
//     (browsers send it on every cross-origin request and every POST) is
//     403 forbidden_origin, as is one whose fetch metadata says a page of
//     another site sent it (Sec-Fetch-Site: cross-site or same-site)
//     without an allowed Origin. Agents, SDKs, curl and Slack send neither.
//   - Content type: a request with a method other than GET, HEAD and
//     OPTIONS whose Content-Type is not application/json (parameters
//     allowed, but a charset only if it is utf-8), or which has a body and
//     no Content-Type, is 415 unsupported_media_type: the forms and
//     text/plain bodies a page can send without a preflight never reach a
//     handler. application/*+json is not JSON here: no client sends it. A
//     write without a body or a type (DELETE) passes.
//
// Refusals are the JSON error shape ({"error": {"code", "message"}}), or a
// JSON-RPC error on RPCPaths.
func RefuseBrowsers(next http.Handler, p BrowserPolicy) http.Handler {
	g := &browserGuard{next: next, p: p}
	for _, h := range p.AllowedHosts {
		if h = strings.TrimSpace(h); h == "*" {
			g.anyHost = true
		} else if h != "" {
			name, port := splitHost(h)
			g.hosts = append(g.hosts, [2]string{name, port})
		}
	}
	for _, o := range p.AllowedOrigins {
		if o = normalOrigin(o); o != "" && o != "null" {
			g.origins = append(g.origins, o)
		}
	}
	return g
}

type browserGuard struct {
	next    http.Handler
	p       BrowserPolicy
	anyHost bool
	hosts   [][2]string // allowed names and ports ("" any port)
	origins []string
}

func (g *browserGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rpc := slices.Contains(g.p.RPCPaths, r.URL.Path)
	signed := slices.Contains(g.p.SignedPaths, r.URL.Path)
	refuse := func(status int, code, msg string) {
		if rpc {
			writeRPCError(w, status, code, msg)
			return
		}
		var body ErrorBody
		body.Error.Code, body.Error.Message = code, msg
		WriteJSON(w, status, body)
	}
	if !signed && !g.hostAllowed(r) {
		refuse(http.StatusForbidden, CodeForbiddenHost, fmt.Sprintf("Host %q is not this listener's; a browser page (DNS rebinding) sends its own name (allow it with --allowed-hosts)", clip.BytesMarked(r.Host, 200)))
		return
	}
	origin, hasOrigin := r.Header["Origin"]
	allowed := hasOrigin && g.originAllowed(origin)
	if hasOrigin {
		w.Header().Add("Vary", "Origin")
		if !allowed {
			refuse(http.StatusForbidden, CodeForbiddenOrigin, fmt.Sprintf("requests from browser pages are refused (Origin %q; allow one with --allowed-origins)", clip.BytesMarked(strings.Join(origin, ", "), 200)))
			return
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); (site == "cross-site" || site == "same-site") && !allowed {
		refuse(http.StatusForbidden, CodeForbiddenOrigin, "requests from browser pages of other sites are refused (Sec-Fetch-Site: "+site+")")
		return
	}
	if allowed {
		if g.corsPreflight(w, r, origin[0]) {
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin[0])
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate")
	}
	if !signed && writeMethod(r.Method) {
		if msg := jsonContentProblem(r); msg != "" {
			refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, msg)
			return
		}
	}
	if rpc && r.Method == http.MethodPost && r.ContentLength != 0 {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeRPCError(w, http.StatusRequestEntityTooLarge, memory.ETOOLARGE, fmt.Sprintf("request body is larger than %d bytes", MaxBodyBytes))
			return
		case err != nil:
			writeRPCError(w, http.StatusBadRequest, memory.EINVALID, fmt.Sprintf("reading request body: %v", err))
			return
		}
		if err := checkRPCJSON(body); err != nil {
			writeRPCError(w, http.StatusBadRequest, memory.EINVALID, "malformed JSON: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	g.next.ServeHTTP(w, r)
}

// hostAllowed applies the Host rule.
func (g *browserGuard) hostAllowed(r *http.Request) bool {
	if r.Host == "" { // HTTP/1.0 without Host: no browser sends that
		return true
	}
	if g.anyHost {
		return true
	}
	name, port := splitHost(r.Host)
	for _, a := range g.hosts {
		if a[0] == name && (a[1] == "" || a[1] == port) {
			return true
		}
	}
	local, known := localAddr(r)
	if !known || local.IsLoopback() {
		return isLoopbackName(name)
	}
	if len(g.hosts) == 0 {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Unmap() == local
}

// localAddr is the address the request's connection arrived at.
func localAddr(r *http.Request) (netip.Addr, bool) {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || a == nil {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// splitHost splits a Host value into its lower-case name (brackets
// removed from IPv6 addresses) and port.
func splitHost(h string) (name, port string) {
	h = strings.ToLower(h)
	if n, p, err := net.SplitHostPort(h); err == nil {
		return n, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ""
}

func isLoopbackName(name string) bool {
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

func (g *browserGuard) originAllowed(values []string) bool {
	return len(values) == 1 && slices.Contains(g.origins, normalOrigin(values[0]))
}

// normalOrigin lower-cases an origin and drops a trailing slash; browsers
// send origins in this form already.
func normalOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

// corsPreflight answers a CORS preflight from an allowed origin.
func (g *browserGuard) corsPreflight(w http.ResponseWriter, r *http.Request, origin string) bool {
	method := r.Header.Get("Access-Control-Request-Method")
	if r.Method != http.MethodOptions || method == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

func writeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// jsonContentProblem applies the content-type rule to a write; "" is fine.
func jsonContentProblem(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if r.ContentLength == 0 {
			return ""
		}
		return "a request body must be JSON, sent with Content-Type: application/json"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return ""
		}
	}
	return fmt.Sprintf("Content-Type %q is not accepted: request bodies are JSON (Content-Type: application/json)", clip.BytesMarked(ct, 200))
}

// writeRPCError answers a JSON-RPC error: the request was refused before
// its id was read, so the id is null. A body that breaks the JSON rules is
// a parse error (-32700); the other refusals are -32000, the code MCP
// servers answer transport refusals with.
func writeRPCError(w http.ResponseWriter, status int, code, msg string) {
	rpcCode := -32000
	if code == memory.EINVALID {
		rpcCode = -32700
	}
	WriteJSON(w, status, map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": rpcCode, "message": msg},
	})
}
