package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
)

// Tenant is the scope a caller on the agent listener is confined to: the
// entity ids its key is bound to. Each non-empty field binds; an empty
// Tenant binds nothing (a key without a binding, or no keys at all).
//
// Rule 11 lives here, in the domain, so that no dialect can forget it: a
// governor call made with a bound tenant in its context (WithTenant) sees
// only records whose scope carries the tenant's ids, writes only such
// records, and answers ENOTFOUND for ids outside them, as if they did not
// exist. A bound tenant's keyed slots are its own (TenantSlotID): a fact
// another tenant states about the same subject is a different slot.
type Tenant struct {
	UserID  string `json:"userId,omitempty"`
	AgentID string `json:"agentId,omitempty"`
	AppID   string `json:"appId,omitempty"`
}

// Bound reports whether the tenant confines its caller.
func (t Tenant) Bound() bool { return t != Tenant{} }

// Covers reports whether a record of scope s is the tenant's.
func (t Tenant) Covers(s Scope) bool {
	return (t.UserID == "" || t.UserID == s.UserID) &&
		(t.AgentID == "" || t.AgentID == s.AgentID) &&
		(t.AppID == "" || t.AppID == s.AppID)
}

// Sees reports whether a caller of tenant t sees what a caller of tenant
// o made: what is within t's ids (an unbound caller sees everything, a
// bound one nothing an unbound caller made).
func (t Tenant) Sees(o Tenant) bool {
	return t.Covers(Scope{UserID: o.UserID, AgentID: o.AgentID, AppID: o.AppID})
}

// Confine returns s with the tenant's ids filled in where s names none. A
// scope naming another id than the tenant's is EFORBIDDEN: a key bound to
// alice writes for alice only.
func (t Tenant) Confine(s Scope) (Scope, error) {
	filled := t.Fill(s)
	for _, f := range t.bindings(&filled) {
		if f.bound != "" && *f.id != f.bound {
			return s, Errorf(EFORBIDDEN, "this key is bound to %s id %q and may not act for %s id %q", f.name, f.bound, f.name, *f.id)
		}
	}
	return filled, nil
}

// Fill returns s with the tenant's ids where s names none; ids s names
// stay, even another tenant's (Confine refuses those).
func (t Tenant) Fill(s Scope) Scope {
	for _, f := range t.bindings(&s) {
		if *f.id == "" {
			*f.id = f.bound
		}
	}
	return s
}

// binding pairs an id the tenant binds with the scope's id of that kind.
type binding struct {
	name  string
	bound string
	id    *string
}

func (t Tenant) bindings(s *Scope) [3]binding {
	return [3]binding{{"user", t.UserID, &s.UserID}, {"agent", t.AgentID, &s.AgentID}, {"app", t.AppID, &s.AppID}}
}

// narrow confines a read filter to the tenant. ok is false when the filter
// names another tenant's ids: nothing can match.
func (t Tenant) narrow(f *ListFilter) (ok bool) {
	s, err := t.Confine(f.Scope)
	if err != nil {
		return false
	}
	f.Scope = s
	return true
}

// TenantSlotID names the slot of (subjectID, factType) for a tenant: the
// shared KeyedSlotID when the tenant binds nothing, else a slot only that
// tenant's writes reach.
func TenantSlotID(t Tenant, subjectID, factType string) string {
	if !t.Bound() {
		return KeyedSlotID(subjectID, factType)
	}
	sum := sha256.Sum256([]byte(subjectID + "\x00" + factType + "\x00tenant\x00" +
		t.UserID + "\x00" + t.AgentID + "\x00" + t.AppID))
	return "slot_" + hex.EncodeToString(sum[:12])
}

type tenantKey struct{}

// WithTenant returns ctx carrying the tenant the agent listener
// authenticated; governor calls made with it are confined to it.
func WithTenant(ctx context.Context, t Tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// TenantOf returns the tenant ctx carries (the zero Tenant if none).
func TenantOf(ctx context.Context) Tenant {
	t, _ := ctx.Value(tenantKey{}).(Tenant)
	return t
}

// SlotID names the slot of (subjectID, factType) as the caller in ctx
// reaches it (see TenantSlotID). The ids are folded as writes fold them.
func (g *Governor) SlotID(ctx context.Context, subjectID, factType string) string {
	if id, err := FoldID(subjectID); err == nil {
		subjectID = id
	}
	if id, err := FoldID(factType); err == nil {
		factType = id
	}
	return TenantSlotID(TenantOf(ctx), subjectID, factType)
}

// notFound is the answer for an id outside the caller's tenant: the same
// as for an id that does not exist, so ids of other tenants leak nothing.
func notFound(id string) error { return Errorf(ENOTFOUND, "memory %s not found", id) }
