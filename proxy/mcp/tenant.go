package mcp

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// tenantExtra names the tenant in the SDK's TokenInfo.Extra.
const tenantExtra = "memgate.tenant"

// requireKey wraps the Streamable HTTP handler so that, with agent keys
// configured, every request needs "Authorization: Bearer <key>" (MCP's
// scheme). It uses the SDK's bearer middleware so that the SDK binds each
// session to the key that opened it: another key cannot use that session
// id. The key's tenant rides in the token info to every tool call.
func requireKey(h http.Handler, keys *proxy.AgentKeys) http.Handler {
	if !keys.Enabled() {
		return h
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		c, ok := keys.Verify(token)
		if !ok {
			return nil, fmt.Errorf("%w: missing or unknown agent key (send one of MEMGATE_AGENT_KEYS as \"Authorization: Bearer <key>\")", auth.ErrInvalidToken)
		}
		// UserID binds the session: the key's own id, not its (operator-
		// chosen) name.
		return &auth.TokenInfo{UserID: c.ID, Extra: map[string]any{tenantExtra: c.Tenant}}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// confine is a receiving middleware: every request runs with the tenant its
// key binds in its context, where the governor confines every call to it.
func confine(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			if t, ok := ex.TokenInfo.Extra[tenantExtra].(memory.Tenant); ok {
				ctx = memory.WithTenant(ctx, t)
			}
		}
		return next(ctx, method, req)
	}
}
