package mcp

import (
	"net"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
)

// Headers an MCP client (or the stdio bridge) may send to say who writes.
// They attribute writes; they grant nothing.
const (
	HeaderAgentID = "X-Memgate-Agent-Id"
	HeaderRunID   = "X-Memgate-Run-Id"
	HeaderUserID  = "X-Memgate-User-Id"
	// HeaderClient carries the client behind a bridge (name/version), since
	// the bridge itself is the MCP client the sidecar sees.
	HeaderClient = "X-Memgate-Client"
	// headerRemoteAddr is set by Handler from the connection, never taken
	// from the caller (any value the caller sends is overwritten).
	headerRemoteAddr = "X-Memgate-Internal-Remote-Addr"
)

// actorOf says who triggers a tool call: the MCP client from the session's
// initialize (name/version), agent, user and run ids from headers, and the
// MCP session id, which is also the run id unless a header names one, so
// quarantining a run undoes one session's writes.
func actorOf(req *mcp.CallToolRequest) memory.Actor {
	a := memory.Actor{Dialect: "mcp"}
	var client string
	if req.Session != nil {
		a.SessionID = clampID(req.Session.ID())
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
			client = p.ClientInfo.Name
			if p.ClientInfo.Version != "" {
				client += "/" + p.ClientInfo.Version
			}
		}
	}
	if req.Extra != nil && req.Extra.Header != nil {
		h := req.Extra.Header
		a.AgentID = clampID(h.Get(HeaderAgentID))
		a.RunID = clampID(h.Get(HeaderRunID))
		a.UserID = clampID(h.Get(HeaderUserID))
		a.RemoteAddr = clampID(h.Get(headerRemoteAddr))
		if behind := h.Get(HeaderClient); behind != "" {
			client = behind + " via " + client
		}
	}
	a.Client = clampID(client)
	if a.RunID == "" {
		a.RunID = a.SessionID
	}
	return a
}

// clampID makes a header value a valid actor id: control characters are
// dropped and it is cut to memory.MaxIDLen bytes on a rune boundary, so a
// long or odd client name never makes a write invalid.
func clampID(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	for len(s) > memory.MaxIDLen {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// withRemoteAddr records the connection's address in a header only the
// server sets, so tool handlers (which see headers, not connections) can
// attribute writes to it.
func withRemoteAddr(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		r.Header.Set(headerRemoteAddr, host)
		next.ServeHTTP(w, r)
	})
}
