// Package mcp serves memgate's MCP surface: the knowledge-graph tools of
// @modelcontextprotocol/server-memory (same names, input schemas,
// annotations and result shapes) and Mem0-style memory tools, over
// Streamable HTTP at /mcp on the agent listener, and over stdio through a
// bridge to a running sidecar (Bridge). Every write and every deletion goes
// through the governor; reads see only the active layer.
//
// It uses the official MCP Go SDK for the protocol; this package only
// translates tool calls into candidates and outcomes into tool results.
// The Mem0-style tools go further: they call the Mem0 dialect's Go API
// (proxy/mem0), so they answer what Mem0's REST API answers.
package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
	"github.com/memgate/memgate/proxy/mem0"
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// Version is reported to MCP clients as the server's version.
	Version string
	// DefaultUserID scopes the Mem0-style tools when a call names no user,
	// agent or run, as Mem0's MCP server does (default "mem0-mcp").
	DefaultUserID string
	// SessionTimeout closes Streamable HTTP sessions no request has used
	// this long (default DefaultSessionTimeout, 5 minutes), so abandoned
	// clients do not pile up. An open event stream alone does not keep a
	// session alive.
	SessionTimeout time.Duration
	// MaxSessions bounds the open Streamable HTTP sessions (default
	// DefaultMaxSessions). Past it a new session (a POST without
	// Mcp-Session-Id) is refused with 503, Retry-After and a JSON-RPC
	// error; existing sessions keep working.
	MaxSessions int
	// MaxStreams bounds the responses open at once, GET event streams and
	// POSTs in flight together (default DefaultMaxStreams); event streams
	// may hold at most half of it. Past it a request is refused with 429,
	// Retry-After and a JSON-RPC error.
	MaxStreams int
	// Keys, when it holds any, are required on every request as
	// "Authorization: Bearer <key>"; each session is bound to the key that
	// opened it, and every tool call is confined to the key's tenant.
	Keys *proxy.AgentKeys
	// HostChecked says the listener already refuses foreign Host names
	// (proxy.RefuseBrowsers, with the operator's --allowed-hosts), so the
	// SDK's own localhost-only check is turned off. Without it the SDK
	// refuses a non-localhost Host on a loopback connection.
	HostChecked bool
	// Mem0 serves the Mem0-style tools: the same Handler that serves the
	// Mem0 REST routes (governing through the same Governor), so a memory
	// and its events read alike in both dialects. Without one the tools
	// keep no Mem0 event log: an event is one version, its id the record id.
	Mem0 *mem0.Handler
}

// Server is the MCP memory server. It is safe for concurrent use.
type Server struct {
	gov         *memory.Governor
	mem0        *mem0.Handler
	log         *slog.Logger
	defaultUser string
	srv         *mcp.Server
	http        http.Handler
	limits      *limits
	closing     context.Context
	close       context.CancelFunc
}

// NewServer returns a Server whose tools write through gov.
func NewServer(gov *memory.Governor, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.DefaultUserID == "" {
		o.DefaultUserID = "mem0-mcp"
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.Mem0 == nil {
		o.Mem0 = mem0.New(mem0.Options{Gov: gov, Logger: o.Logger})
	}
	s := &Server{gov: gov, mem0: o.Mem0, log: o.Logger, defaultUser: o.DefaultUserID}
	s.closing, s.close = context.WithCancel(context.Background())
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "memgate", Title: "memgate governed memory", Version: o.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: sdkLogger(o.Logger), Capabilities: &mcp.ServerCapabilities{}})
	s.srv.AddReceivingMiddleware(confine)
	s.addGraphTools()
	s.addMem0Tools()
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{Logger: sdkLogger(o.Logger), SessionTimeout: o.SessionTimeout,
			MaxRequestBodyBytes: proxy.MaxBodyBytes, DisableLocalhostProtection: o.HostChecked})
	s.limits = newLimits(s.srv, o.Logger, o.MaxSessions, o.MaxStreams)
	s.http = s.guard(requireKey(withRemoteAddr(stream), o.Keys))
	return s
}

const instructions = "memgate governs this memory: every write and deletion is checked by policy. " +
	"A write may apply at once, wait for human review (the result says so and gives a record id; " +
	"nothing you read changes until a reviewer approves), or be rejected with a reason. " +
	"Reads show only approved, active memory."

// Handler serves MCP over Streamable HTTP; mount it at /mcp on the agent
// listener (Register does). Every error it answers, including the SDK's
// transport errors and the refusals past a cap, is a JSON-RPC error object.
func (s *Server) Handler() http.Handler { return s.http }

// Register mounts the MCP endpoint at /mcp.
func (s *Server) Register(mux *http.ServeMux) { mux.Handle("/mcp", s.Handler()) }

// MCPServer is the underlying SDK server, for other transports (an
// in-process client in tests, stdio).
func (s *Server) MCPServer() *mcp.Server { return s.srv }

// Close ends every open MCP request, including the long-lived event streams
// clients keep open, so an http.Server's Shutdown does not wait for them
// (register it with http.Server.RegisterOnShutdown).
func (s *Server) Close() { s.close() }

// sdkLogger passes on only the SDK's warnings and errors: it logs every
// session's start at info level, which is noise on an agent's listener.
func sdkLogger(l *slog.Logger) *slog.Logger { return slog.New(warnAndUp{l.Handler()}) }

type warnAndUp struct{ slog.Handler }

func (h warnAndUp) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= slog.LevelWarn && h.Handler.Enabled(ctx, lv)
}

func (h warnAndUp) WithAttrs(a []slog.Attr) slog.Handler { return warnAndUp{h.Handler.WithAttrs(a)} }
func (h warnAndUp) WithGroup(n string) slog.Handler      { return warnAndUp{h.Handler.WithGroup(n)} }
