package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memgate/memgate/memory"
)

// AgentKey is one key the agent listener accepts, and the tenant it binds
// its caller to (zero: the key sees every record, as a caller on a
// listener without keys does).
type AgentKey struct {
	// Name identifies the key in logs and binds MCP sessions to it; it is
	// never the key itself.
	Name   string
	Tenant memory.Tenant
	digest [sha256.Size]byte
}

// AgentKeys is the agent listener's one authentication story: every route
// of every dialect (native, Mem0, MCP) accepts the same keys and confines
// the caller to the key's tenant. Keys are kept as SHA-256 digests, so a
// presented key is compared in constant time whatever its length, and a
// keys file may hold digests instead of keys.
type AgentKeys struct{ keys []AgentKey }

// Caller is who a request on the agent listener authenticated as.
type Caller struct {
	Key    string // the key's name, for logs
	ID     string // derived from the key's digest: unique per key, never the key
	Tenant memory.Tenant
}

// NewAgentKey returns the entry for key, binding its callers to t.
func NewAgentKey(key string, t memory.Tenant) AgentKey {
	k := AgentKey{Tenant: t, digest: sha256.Sum256([]byte(key))}
	k.Name = "key-" + hex.EncodeToString(k.digest[:4])
	return k
}

// NewAgentKeys returns the key set; with no keys it accepts every caller,
// unconfined.
func NewAgentKeys(keys []AgentKey) *AgentKeys { return &AgentKeys{keys: keys} }

// CheckAgentKeys refuses a key listed twice (with one binding or two: which
// would win is not the operator's choice to guess) and two keys of one
// name (logs would not tell them apart).
func CheckAgentKeys(keys []AgentKey) error {
	digests, names := map[[sha256.Size]byte]bool{}, map[string]bool{}
	for _, k := range keys {
		if digests[k.digest] {
			return fmt.Errorf("agent keys: key %s is configured twice", k.Name)
		}
		if names[k.Name] {
			return fmt.Errorf("agent keys: two keys are named %q", k.Name)
		}
		digests[k.digest], names[k.Name] = true, true
	}
	return nil
}

// Enabled reports whether keys are required.
func (k *AgentKeys) Enabled() bool { return k != nil && len(k.keys) > 0 }

// Len is the number of keys.
func (k *AgentKeys) Len() int {
	if k == nil {
		return 0
	}
	return len(k.keys)
}

// Verify returns the caller a presented key authenticates, in constant time
// over the key set.
func (k *AgentKeys) Verify(key string) (Caller, bool) {
	if key == "" || k == nil {
		return Caller{}, false
	}
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i := range k.keys {
		if subtle.ConstantTimeCompare(sum[:], k.keys[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Caller{}, false
	}
	return Caller{Key: k.keys[found].Name, ID: hex.EncodeToString(k.keys[found].digest[:16]), Tenant: k.keys[found].Tenant}, true
}

// PresentedKey reads a key the way agent clients send one: the Mem0
// platform SDKs "Authorization: Token <key>", MCP clients and the Mem0
// open-source server "Authorization: Bearer <key>", or "X-API-Key: <key>".
func PresentedKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-API-Key")); k != "" {
		return k
	}
	scheme, key, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "token", "bearer":
		return strings.TrimSpace(key)
	}
	return ""
}

// Require wraps an agent route: with keys configured, a request without an
// accepted key is answered by fail with EUNAUTHORIZED (each dialect its own
// error shape); an accepted one runs with its tenant in the context
// (memory.WithTenant), where the governor confines every call to it.
func (k *AgentKeys) Require(next http.Handler, fail func(http.ResponseWriter, *http.Request, error)) http.Handler {
	if !k.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := k.Verify(PresentedKey(r))
		if !ok {
			fail(w, r, memory.Errorf(memory.EUNAUTHORIZED,
				"Invalid API key: send one of the agent keys (MEMGATE_AGENT_KEYS) as \"Authorization: Token <key>\", \"Authorization: Bearer <key>\" or \"X-API-Key: <key>\""))
			return
		}
		next.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), c)))
	})
}

type callerKey struct{}

// WithCaller returns ctx carrying the authenticated caller and its tenant.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return memory.WithTenant(context.WithValue(ctx, callerKey{}, c), c.Tenant)
}

// CallerOf returns the caller ctx carries, if a key authenticated it.
func CallerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// ParseAgentKeys reads keys from an environment value: comma-separated
// entries KEY or KEY@BINDING[;BINDING...], where a binding is user=ID,
// agent=ID or app=ID. "k1,k2@user=alice,k3@user=bob;agent=helper" accepts
// k1 unconfined, k2 for alice's records only, k3 for bob's helper only.
func ParseAgentKeys(s string) ([]AgentKey, error) {
	var out []AgentKey
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, binding, bound := strings.Cut(entry, "@")
		key = strings.TrimSpace(key)
		if key == "" {
			return nil, fmt.Errorf("agent keys: entry %d has a binding but no key", i+1)
		}
		k := NewAgentKey(key, memory.Tenant{})
		if bound {
			for _, b := range strings.Split(binding, ";") {
				name, id, ok := strings.Cut(strings.TrimSpace(b), "=")
				if !ok {
					return nil, fmt.Errorf("agent keys: entry %d: binding %q is not user=ID, agent=ID or app=ID", i+1, b)
				}
				if err := k.bind(strings.TrimSpace(name), strings.TrimSpace(id)); err != nil {
					return nil, fmt.Errorf("agent keys: entry %d: %w", i+1, err)
				}
			}
		}
		out = append(out, k)
	}
	return out, nil
}

func (k *AgentKey) bind(name, id string) error {
	if id != strings.TrimSpace(id) || id == "" || len(id) > memory.MaxIDLen || !utf8.ValidString(id) ||
		strings.ContainsAny(id, ",;@") || strings.ContainsFunc(id, unicode.IsControl) {
		return fmt.Errorf("%s binding needs an id of 1 to %d bytes of UTF-8 text without spaces around it, control characters, , ; or @", name, memory.MaxIDLen)
	}
	var dst *string
	switch name {
	case "user":
		dst = &k.Tenant.UserID
	case "agent":
		dst = &k.Tenant.AgentID
	case "app":
		dst = &k.Tenant.AppID
	default:
		return fmt.Errorf("unknown binding %q (want user, agent or app)", name)
	}
	if *dst != "" {
		return fmt.Errorf("%s is bound twice", name)
	}
	*dst = id
	return nil
}

// agentKeysFile is the keys file: a key may be given as itself or as the
// hex SHA-256 of it, so the file need not hold secrets.
type agentKeysFile struct {
	Keys []struct {
		Name    string `json:"name"`
		Key     string `json:"key"`
		SHA256  string `json:"sha256"`
		UserID  string `json:"userId"`
		AgentID string `json:"agentId"`
		AppID   string `json:"appId"`
	} `json:"keys"`
}

// LoadAgentKeysFile reads a JSON keys file:
//
//	{"keys": [{"name": "alice-laptop", "sha256": "<hex of the key>", "userId": "alice"},
//	          {"name": "ops-agent", "key": "<the key>"}]}
func LoadAgentKeysFile(path string) ([]AgentKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent keys file: %w", err)
	}
	var f agentKeysFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("agent keys file %s: %w", path, err)
	}
	out := make([]AgentKey, 0, len(f.Keys))
	for i, e := range f.Keys {
		var k AgentKey
		switch {
		case (e.Key == "") == (e.SHA256 == ""):
			return nil, fmt.Errorf("agent keys file %s: entry %d needs exactly one of key and sha256", path, i+1)
		case e.Key != "":
			k.digest = sha256.Sum256([]byte(e.Key))
		default:
			d, err := hex.DecodeString(strings.TrimSpace(e.SHA256))
			if err != nil || len(d) != sha256.Size {
				return nil, fmt.Errorf("agent keys file %s: entry %d: sha256 must be 64 hex digits", path, i+1)
			}
			copy(k.digest[:], d)
		}
		for _, b := range []struct{ name, id string }{{"user", e.UserID}, {"agent", e.AgentID}, {"app", e.AppID}} {
			if b.id == "" {
				continue
			}
			if err := k.bind(b.name, b.id); err != nil {
				return nil, fmt.Errorf("agent keys file %s: entry %d: %w", path, i+1, err)
			}
		}
		k.Name = e.Name
		if k.Name == "" {
			k.Name = "key-" + hex.EncodeToString(k.digest[:4])
		}
		out = append(out, k)
	}
	return out, nil
}
