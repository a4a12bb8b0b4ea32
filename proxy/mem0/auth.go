package mem0

import (
	"context"
	"net/http"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// ParseAPIKeys splits a comma-separated key list (MEMGATE_MEM0_API_KEYS's
// plain form) into keys. Deprecated: the agent listener's keys, with
// tenant bindings, are parsed by proxy.ParseAgentKeys.
func ParseAPIKeys(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// auth refuses requests without an accepted key when keys are configured,
// in Mem0's error shape, and confines the others to their key's tenant.
func (h *Handler) auth(next http.Handler) http.Handler {
	return h.keys.Require(next, func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("WWW-Authenticate", `Token realm="memgate-mem0"`)
		h.fail(w, r, err)
	})
}

// keysOf is the key set of o: Keys, or the plain APIKeys (tests, and
// callers from before tenant bindings) as unconfined keys.
func keysOf(o Options) *proxy.AgentKeys {
	if o.Keys != nil {
		return o.Keys
	}
	keys := make([]proxy.AgentKey, 0, len(o.APIKeys))
	for _, k := range o.APIKeys {
		keys = append(keys, proxy.NewAgentKey(k, memory.Tenant{}))
	}
	return proxy.NewAgentKeys(keys)
}

// tenantScope fills the entity ids a request left out from the caller's
// key binding: a key bound to alice need not name alice. Ids the request
// names stay, so a write for another tenant is refused by the governor and
// a read of one finds nothing.
func tenantScope(ctx context.Context, s memory.Scope) memory.Scope {
	return memory.TenantOf(ctx).Fill(s)
}
