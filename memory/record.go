// Package memory is memgate's domain: the record model, the rules every
// memory write obeys, and the governor that turns a candidate plus a policy
// decision into a state transition. It does no I/O of its own: storage,
// policy evaluation, notifications and metrics are interfaces implemented by
// other packages (store, policy, notify, metrics).
//
// The rules are pure functions of a slot's state (transitions.go):
// PlanSubmit, PlanApprove, PlanReject and PlanRollback return the effects
// a transition would have, and the Governor's methods of the same verbs
// (Submit, Approve, Reject, Rollback) load the state, ask policy, apply
// those effects in one transaction and tell the rest of the system.
package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
)

// Layer is the kind of memory a record belongs to.
type Layer string

const (
	LayerState      Layer = "state"      // current facts and task states
	LayerPolicy     Layer = "policy"     // strategy constraints, permission boundaries
	LayerKnowledge  Layer = "knowledge"  // summaries, facts about the world
	LayerPreference Layer = "preference" // user or agent preferences
	LayerCheckpoint Layer = "checkpoint" // task progress
)

// Layers lists every valid layer.
var Layers = []Layer{LayerState, LayerPolicy, LayerKnowledge, LayerPreference, LayerCheckpoint}

// Valid reports whether l is a known layer.
func (l Layer) Valid() bool {
	for _, v := range Layers {
		if l == v {
			return true
		}
	}
	return false
}

// Rank orders layers by what a wrong change to them costs: policy, then
// state, knowledge, preference and checkpoint. A write is judged at the
// highest of the layer its writer declared, the layer its text reads as and
// the layers its slot holds, so a declared layer can raise risk, never
// lower it. An unknown layer ranks below every known one.
func (l Layer) Rank() int {
	switch l {
	case LayerPolicy:
		return 4
	case LayerState:
		return 3
	case LayerKnowledge:
		return 2
	case LayerPreference:
		return 1
	case LayerCheckpoint:
		return 0
	}
	return -1
}

// HighestLayer returns the highest-ranked of the layers; "" if none is known.
func HighestLayer(layers ...Layer) Layer {
	var best Layer
	for _, l := range layers {
		if l.Valid() && (best == "" || l.Rank() > best.Rank()) {
			best = l
		}
	}
	return best
}

// AllowsAppend reports whether a parked write of this layer may be approved
// as an append (a slot of its own) instead of an override. Current facts and
// policies must stay single-valued, so only knowledge and preference can.
func (l Layer) AllowsAppend() bool { return l == LayerKnowledge || l == LayerPreference }

// Status is where a record is in its life.
type Status string

const (
	StatusPending    Status = "pending_review"
	StatusActive     Status = "active"
	StatusSuperseded Status = "superseded"
	StatusRejected   Status = "rejected"
	StatusRolledBack Status = "rolled_back"
	StatusDeleted    Status = "deleted" // an applied deletion: the slot's head, with nothing active
)

// Source is where a candidate came from.
type Source string

const (
	SourceUser      Source = "user-explicit"
	SourceInference Source = "model-inference"
	SourceTool      Source = "tool"
	SourceSystem    Source = "system"
	SourceImport    Source = "import"
)

// Sources lists every valid candidate source.
var Sources = []Source{SourceUser, SourceInference, SourceTool, SourceSystem, SourceImport}

// Valid reports whether s is a known source.
func (s Source) Valid() bool {
	for _, v := range Sources {
		if s == v {
			return true
		}
	}
	return false
}

// Op is what a candidate asks for.
type Op string

const (
	OpWrite  Op = "write"
	OpDelete Op = "delete" // soft delete of the slot's active version
)

// Risk is the risk level policy assigns.
type Risk string

const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Action is what policy says to do with a candidate.
type Action string

const (
	ActionApply  Action = "apply"
	ActionReview Action = "review"
	ActionReject Action = "reject"
)

// Risk categories policy may report.
const (
	CategoryStrategy      = "strategy"
	CategoryStateOverride = "state_override"
	CategoryInference     = "inference"
	// CategoryPoisoning is text that tries to instruct the agent or its
	// tools through memory (OWASP's agentic top 10: memory poisoning).
	CategoryPoisoning = "poisoning"
)

// Actor is who triggered a write.
type Actor struct {
	AgentID    string `json:"agentId,omitempty"`
	UserID     string `json:"userId,omitempty"`
	RunID      string `json:"runId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	Dialect    string `json:"dialect,omitempty"`
	RemoteAddr string `json:"remoteAddr,omitempty"`
	Client     string `json:"client,omitempty"` // e.g. an MCP client's name/version
}

// Scope holds the Mem0-style entity ids a memory belongs to; reads filter on it.
type Scope struct {
	UserID  string `json:"userId,omitempty"`
	AgentID string `json:"agentId,omitempty"`
	AppID   string `json:"appId,omitempty"`
	RunID   string `json:"runId,omitempty"`
}

// Entity returns the first entity id set, used as the default subject.
func (s Scope) Entity() string {
	for _, v := range []string{s.UserID, s.AgentID, s.AppID, s.RunID} {
		if v != "" {
			return v
		}
	}
	return ""
}

// Evidence is the basis of a memory.
type Evidence struct {
	Excerpt   string `json:"excerpt,omitempty"`   // e.g. the message the memory came from
	SourceRef string `json:"sourceRef,omitempty"` // e.g. a conversation or document reference
}

// Reason is one policy rule that fired.
type Reason struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Decision is the policy result for one candidate.
type Decision struct {
	Risk       Risk     `json:"risk"`
	Categories []string `json:"categories"`
	Action     Action   `json:"action"`
	Reasons    []Reason `json:"reasons"`
	Affects    []string `json:"affects"`
	// Slot fields policy derived for free-text memories; used only where the
	// writer left them empty.
	Layer     Layer  `json:"layer,omitempty"`
	FactType  string `json:"factType,omitempty"`
	SubjectID string `json:"subjectId,omitempty"`
	// Value is a structured value policy read from the text (e.g.
	// {"enabled": false}), used where the writer gave none, so overrides are
	// compared on facts.
	Value json.RawMessage `json:"value,omitempty"`
	// Revision is the content hash of the policy that decided.
	Revision string `json:"revision,omitempty"`
	// PolicyError is set when the decision was made by failing closed.
	PolicyError string `json:"policyError,omitempty"`
	// Redact names the fields of a rejected candidate that held a secret
	// (see SecretFinding); the governor sets it, and they are not kept.
	Redact []string `json:"redact,omitempty"`
	// Shadow, when set, says Action was not enforced: the write was
	// treated as Shadow.Action (applied, as a low-risk write is) because
	// the governor runs in shadow mode or the rules that stopped it are
	// shadowed in the policy's data. Action, Risk and Reasons stay what
	// policy said, so replay and explain tell the truth (see shadow.go).
	Shadow *Shadow `json:"shadow,omitempty"`
}

// Effective is the action the governor takes: Action, or what a shadow
// put in its place.
func (d *Decision) Effective() Action {
	if d.Shadow != nil {
		return d.Shadow.Action
	}
	return d.Action
}

// ReviewMode is how a parked write is approved.
type ReviewMode string

const (
	ModeOverride ReviewMode = "override" // replace the slot's active version
	ModeAppend   ReviewMode = "append"   // activate in a slot of its own
)

// Review is a human decision on a parked write.
type Review struct {
	Outcome string     `json:"outcome"` // approved | rejected
	By      string     `json:"by"`
	Route   string     `json:"route,omitempty"` // slack | admin | cli
	Mode    ReviewMode `json:"mode,omitempty"`
	Note    string     `json:"note,omitempty"`
	At      time.Time  `json:"at"`
	// Version, when set, binds the decision to the parked version of the
	// write the reviewer saw (Record.ParkVersion): if the write was
	// re-parked since, the decision is refused with ESTALE (wrapping
	// ErrVersionChanged) and nothing changes. Empty decides on whatever
	// version is parked now: the CLI and the admin API show the current
	// item, so they need none; Slack buttons always carry one.
	Version string `json:"version,omitempty"`
}

// Review outcomes.
const (
	OutcomeApproved = "approved"
	OutcomeRejected = "rejected"
)

// Record is one version of a memory.
type Record struct {
	ID     string `json:"id"`
	SlotID string `json:"slotId"`
	Op     Op     `json:"op,omitempty"`
	Layer  Layer  `json:"layer"`
	// DeclaredLayer is the layer the writer declared ("" if none) and
	// InferredLayer the one policy read from the text ("" if none); Layer
	// is the highest of them and of the layers the slot held.
	DeclaredLayer   Layer           `json:"declaredLayer,omitempty"`
	InferredLayer   Layer           `json:"inferredLayer,omitempty"`
	SubjectID       string          `json:"subjectId"`
	FactType        string          `json:"factType,omitempty"`
	Summary         string          `json:"summary"`
	Value           json.RawMessage `json:"value,omitempty"`
	RiskLevel       Risk            `json:"riskLevel,omitempty"`
	Categories      []string        `json:"categories,omitempty"`
	Status          Status          `json:"status"`
	CandidateSource Source          `json:"candidateSource"`
	Actor           Actor           `json:"actor"`
	Scope           Scope           `json:"scope,omitzero"`
	Metadata        map[string]any  `json:"metadata,omitempty"`
	Evidence        Evidence        `json:"evidence,omitzero"`
	Affects         []string        `json:"affects,omitempty"`
	Supersedes      string          `json:"supersedes,omitempty"`
	SupersededBy    string          `json:"supersededBy,omitempty"`
	RollbackPoint   string          `json:"rollbackPoint,omitempty"`
	// ExpectedHead is the slot head a parked write meant to replace ("" for an
	// empty slot); approval is a compare-and-swap against it.
	ExpectedHead string `json:"expectedHead,omitempty"`
	// Reparked counts the times an approval found the slot changed and the
	// write was parked again, re-evaluated against the new head (Restale).
	// It only grows; see ParkVersion.
	Reparked int `json:"reparked,omitempty"`
	// FactMatch names the active memory the fact matcher found this
	// free-text write to repeat, update or possibly conflict with
	// (facts.go); nil when it was not matched.
	FactMatch *FactMatch `json:"factMatch,omitempty"`
	Decision  *Decision  `json:"decision,omitempty"`
	Review    *Review    `json:"review,omitempty"`
	// RollbackReason says why a rolled-back record was undone.
	RollbackReason string    `json:"rollbackReason,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	ActivatedAt    time.Time `json:"activatedAt,omitzero"`
	SupersededAt   time.Time `json:"supersededAt,omitzero"`
	DecidedAt      time.Time `json:"decidedAt,omitzero"`
	RolledBackAt   time.Time `json:"rolledBackAt,omitzero"`
	// ExpiresAt, when set, is when the record leaves the active layer
	// (Mem0's expiration_date): the retention pass then makes it a
	// deletion, recorded as expired.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Erased is set once an erasure or retention removed the record's
	// text (erase.go): only ids, times, statuses, the decision and a
	// salted hash of the text remain.
	Erased *Erasure `json:"erased,omitempty"`
}

// ParkVersion names the version of a parked write a reviewer decides on
// (Review.Version). It changes every time the write is re-parked, and never
// returns to an earlier value: Reparked only grows, so even when the slot's
// head goes back to one the write was parked against before (parked against
// A, re-parked against B, B rolled back, re-parked against A) the version
// differs. The expected head is part of it so a version also names what the
// approval would replace.
func (r *Record) ParkVersion() string {
	return strconv.Itoa(r.Reparked+1) + ":" + r.ExpectedHead
}

// Clone returns a deep enough copy for the governor to modify.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Categories = append([]string(nil), r.Categories...)
	c.Affects = append([]string(nil), r.Affects...)
	if r.Decision != nil {
		d := *r.Decision
		c.Decision = &d
	}
	if r.Review != nil {
		rv := *r.Review
		c.Review = &rv
	}
	if r.FactMatch != nil {
		m := *r.FactMatch
		c.FactMatch = &m
	}
	if r.Erased != nil {
		e := *r.Erased
		c.Erased = &e
	}
	return &c
}

// SameContent reports whether two records state the same thing, so that a
// repeated write does not create a new version.
func (r *Record) SameContent(o *Record) bool {
	if r == nil || o == nil {
		return false
	}
	return r.Op == o.Op && r.Summary == o.Summary && jsonEqual(r.Value, o.Value)
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return string(ca) == string(cb)
}

// Slot is the line of versions of one fact.
type Slot struct {
	ID        string    `json:"id"`
	SubjectID string    `json:"subjectId"`
	FactType  string    `json:"factType,omitempty"`
	Layer     Layer     `json:"layer"`
	Scope     Scope     `json:"scope,omitzero"`
	Head      string    `json:"head,omitempty"` // latest applied version: active record or deletion
	Versions  int       `json:"versions"`       // records ever submitted to the slot
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Rev counts the transitions that changed the slot. Every one that
	// changes its head or pending writes writes the slot too (touchSlot),
	// so an unchanged Rev means an unchanged head and pending set: the
	// governor decides a write from a snapshot and checks Rev in the
	// transaction instead of reading the slot's records again.
	Rev uint64 `json:"rev,omitempty"`
}

// KeyedSlotID names the slot shared by every writer of (subjectID, factType).
// It is derived, so two writers of the same fact always meet in one slot.
func KeyedSlotID(subjectID, factType string) string {
	sum := sha256.Sum256([]byte(subjectID + "\x00" + factType))
	return "slot_" + hex.EncodeToString(sum[:12])
}

// RollbackPoint is the state a slot had before a version was applied to it.
// It is written in the same transaction as the version it protects.
type RollbackPoint struct {
	ID        string    `json:"id"`
	SlotID    string    `json:"slotId"`
	SubjectID string    `json:"subjectId"`
	FactType  string    `json:"factType,omitempty"`
	RecordID  string    `json:"recordId"`           // the version applied after this point
	Replaced  string    `json:"replaced,omitempty"` // the head before it ("" = empty slot)
	CreatedAt time.Time `json:"createdAt"`
}

// RollbackPointID names the rollback point taken before rec was applied.
func RollbackPointID(recordID string) string { return "rp_" + recordID }
