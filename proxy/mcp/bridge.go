package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultSidecarURL is where `sidecar mcp` looks for the running sidecar's
// agent listener when MEMGATE_MCP_URL is not set.
const DefaultSidecarURL = "http://127.0.0.1:7600"

// BridgeOptions configure the stdio bridge.
type BridgeOptions struct {
	// URL is the running sidecar's agent listener (its MCP endpoint is /mcp
	// there) or the MCP endpoint itself; default DefaultSidecarURL.
	URL string
	// AgentID, RunID and UserID attribute the bridged writes (sent as
	// X-Memgate-* headers); without RunID, the sidecar uses the MCP session.
	AgentID, RunID, UserID string
	// Key is the agent key sent to the sidecar ("Authorization: Bearer"),
	// when its agent listener requires keys.
	Key string
	// HTTPClient talks to the sidecar (default: one with no overall timeout,
	// since tool calls stream their answers).
	HTTPClient *http.Client
	Logger     *slog.Logger
	Version    string
}

// BridgeOptionsFromEnv reads the bridge's settings from the environment:
// MEMGATE_MCP_URL, MEMGATE_AGENT_ID, MEMGATE_RUN_ID, MEMGATE_USER_ID and
// MEMGATE_AGENT_KEY, so an MCP client's config can set them in the server
// entry's "env".
func BridgeOptionsFromEnv(getenv func(string) string) BridgeOptions {
	return BridgeOptions{URL: getenv("MEMGATE_MCP_URL"), AgentID: getenv("MEMGATE_AGENT_ID"),
		RunID: getenv("MEMGATE_RUN_ID"), UserID: getenv("MEMGATE_USER_ID"), Key: getenv("MEMGATE_AGENT_KEY")}
}

// endpoint returns the MCP endpoint for a sidecar URL: a bare address
// (host:port) or a URL without a path gets /mcp.
func endpoint(raw string) (string, error) {
	if raw == "" {
		raw = DefaultSidecarURL
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("MEMGATE_MCP_URL %q is not an http(s) URL of the sidecar's agent listener", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	return u.String(), nil
}

// Bridge serves MCP on stdin/stdout and forwards every request to the MCP
// endpoint of a running sidecar over Streamable HTTP, so `sidecar mcp` can
// stand where `npx -y @modelcontextprotocol/server-memory` stood in any MCP
// config while one sidecar owns the data directory. It returns when stdin
// closes or ctx ends, and at once, with an error that says what to do, when
// no sidecar answers.
func Bridge(ctx context.Context, o BridgeOptions, stdin io.Reader, stdout io.Writer) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	ep, err := endpoint(o.URL)
	if err != nil {
		return err
	}
	up := newUpstream(ep, o)
	defer up.close()
	cs, err := up.session(ctx)
	if err != nil {
		return err
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		return fmt.Errorf("listing the tools of the memgate sidecar at %s: %w", ep, err)
	}
	info := cs.InitializeResult()
	impl := &mcp.Implementation{Name: "memgate", Version: o.Version}
	instr := ""
	if info != nil {
		if info.ServerInfo != nil {
			impl = info.ServerInfo
		}
		instr = info.Instructions
	}
	srv := mcp.NewServer(impl, &mcp.ServerOptions{Instructions: instr, Logger: sdkLogger(o.Logger), Capabilities: &mcp.ServerCapabilities{}})
	for _, t := range tools {
		srv.AddTool(t, up.forward(t.Name))
	}
	o.Logger.Info("bridging stdio to the memgate sidecar", "endpoint", ep, "tools", len(tools))
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil // stdin closed or asked to stop: a normal end
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// upstream is the bridge's MCP session with the sidecar. A session the
// sidecar no longer knows (it restarted, or the session idled out) is
// replaced on the next call.
type upstream struct {
	endpoint string
	client   *mcp.Client
	http     *http.Client
	behind   atomic.Pointer[string] // the stdio client's name/version

	mu sync.Mutex
	cs *mcp.ClientSession
}

func newUpstream(ep string, o BridgeOptions) *upstream {
	u := &upstream{endpoint: ep,
		client: mcp.NewClient(&mcp.Implementation{Name: "memgate-bridge", Version: o.Version}, &mcp.ClientOptions{Logger: sdkLogger(o.Logger)})}
	base := http.DefaultTransport
	if o.HTTPClient != nil {
		if o.HTTPClient.Transport != nil {
			base = o.HTTPClient.Transport
		}
	}
	fixed := http.Header{}
	for k, v := range map[string]string{HeaderAgentID: o.AgentID, HeaderRunID: o.RunID, HeaderUserID: o.UserID} {
		if v != "" {
			fixed.Set(k, v)
		}
	}
	if o.Key != "" {
		fixed.Set("Authorization", "Bearer "+o.Key)
	}
	u.http = &http.Client{Transport: headerTransport{base: base, fixed: fixed, behind: &u.behind}}
	return u
}

// headerTransport adds the attribution headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	fixed  http.Header
	behind *atomic.Pointer[string]
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.fixed {
		r.Header[k] = v
	}
	if b := t.behind.Load(); b != nil && *b != "" {
		r.Header.Set(HeaderClient, *b)
	}
	return t.base.RoundTrip(r)
}

// session returns the live session, connecting if there is none.
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		return u.cs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cs, err := u.client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u.endpoint, HTTPClient: u.http,
		DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("no memgate sidecar answers at %s: %w; start one with `sidecar serve` "+
			"(or `go run ./cmd/sidecar`), or set MEMGATE_MCP_URL to its agent listener", u.endpoint, rootCause(err))
	}
	u.cs = cs
	return cs, nil
}

// drop forgets a session that failed, so the next call reconnects.
func (u *upstream) drop(cs *mcp.ClientSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs == cs {
		u.cs = nil
		go cs.Close() // best effort; the sidecar may be gone
	}
}

func (u *upstream) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		_ = u.cs.Close()
		u.cs = nil
	}
}

// forward relays one tool's calls to the sidecar. The sidecar's answers,
// tool errors included, pass through unchanged; a sidecar that cannot be
// reached gives a tool error saying so, and a session it forgot is replaced
// and the call sent again (it was refused, so nothing was applied).
func (u *upstream) forward(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
			b := p.ClientInfo.Name
			if p.ClientInfo.Version != "" {
				b += "/" + p.ClientInfo.Version
			}
			u.behind.Store(&b)
		}
		params := &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments}
		for attempt := 0; ; attempt++ {
			cs, err := u.session(ctx)
			if err != nil {
				return unreachable(err), nil
			}
			res, err := cs.CallTool(ctx, params)
			var wire *jsonrpc.Error
			switch {
			case err == nil:
				return res, nil
			case errors.Is(err, mcp.ErrSessionMissing) && attempt == 0:
				u.drop(cs)
				continue
			case errors.As(err, &wire) && wire.Code != codeRejectedByTransport:
				return nil, wire // the sidecar's own protocol error
			}
			u.drop(cs)
			return unreachable(fmt.Errorf("the memgate sidecar at %s did not answer (the call may not have been applied; retry): %w",
				u.endpoint, rootCause(err))), nil
		}
	}
}

// codeRejectedByTransport is the SDK client's own error for a request the
// transport could not deliver or get an answer to; any other JSON-RPC error
// came from the sidecar.
const codeRejectedByTransport = -32005

func unreachable(err error) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	res.SetError(err)
	return res
}

// rootCause strips the SDK's layers of context down to the network error,
// which is what a person needs to read ("connection refused").
func rootCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
