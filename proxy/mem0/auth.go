package mem0

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/memgate/memgate/memory"
)

// keySet holds the accepted API keys as digests, so that comparing a
// presented key costs the same whatever its length.
type keySet [][sha256.Size]byte

func newKeySet(keys []string) keySet {
	var ks keySet
	for _, k := range keys {
		if k = strings.TrimSpace(k); k != "" {
			ks = append(ks, sha256.Sum256([]byte(k)))
		}
	}
	return ks
}

// ParseAPIKeys splits MEMGATE_MEM0_API_KEYS (comma-separated) into keys.
func ParseAPIKeys(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func (ks keySet) accepts(key string) bool {
	if key == "" {
		return false
	}
	sum := sha256.Sum256([]byte(key))
	ok := 0
	for _, k := range ks {
		ok |= subtle.ConstantTimeCompare(sum[:], k[:])
	}
	return ok == 1
}

// presentedKey reads the key the way each Mem0 client sends it: the
// platform SDKs "Authorization: Token <key>", the open-source server
// "X-API-Key: <key>" or "Authorization: Bearer <key>".
func presentedKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-API-Key")); k != "" {
		return k
	}
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, key, ok := strings.Cut(auth, " ")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "token", "bearer":
		return strings.TrimSpace(key)
	}
	return ""
}

// auth refuses requests without an accepted key when keys are configured.
func (h *Handler) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(h.keys) > 0 && !h.keys.accepts(presentedKey(r)) {
			h.fail(w, r, memory.Errorf(memory.EUNAUTHORIZED,
				"Invalid API key: send one of the keys in MEMGATE_MEM0_API_KEYS as \"Authorization: Token <key>\" (or X-API-Key)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
