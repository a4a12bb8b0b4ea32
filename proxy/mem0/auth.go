package mem0

import (
	"net/http"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

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
