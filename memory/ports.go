package memory

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Store persists records, slots, rollback points, the audit log and the
// notification outbox. Implementations apply everything written in one
// Update atomically and durably, and detect conflicting concurrent updates
// (returning an error for which IsConflict is true, or retrying internally).
type Store interface {
	// Update runs fn in a read-write transaction. fn may run more than once
	// if the transaction conflicts with another; it must not keep state
	// across runs.
	Update(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only snapshot.
	View(ctx context.Context, fn func(ReadTx) error) error
}

// SyncDeferrer is a Store that can commit a transaction and wait for it to
// be durable as two steps. The governor releases a slot's lock in between,
// so the next write to the slot does not wait for this one's sync: it
// commits after this one, and the sync that makes it durable makes this
// one durable too. Every write is still acknowledged only once durable.
type SyncDeferrer interface {
	// UpdateThenSync runs fn as Update does and returns once the
	// transaction has committed, with sync, which returns once it is
	// durable.
	UpdateThenSync(ctx context.Context, fn func(Tx) error) (sync func() error, err error)
}

// ReadTx reads a consistent snapshot. Lookups of unknown ids return an error
// with code ENOTFOUND.
type ReadTx interface {
	Record(id string) (*Record, error)
	Slot(id string) (*Slot, error)
	RollbackPoint(id string) (*RollbackPoint, error)
	// SlotRecords returns every record of a slot, oldest first.
	SlotRecords(slotID string) ([]*Record, error)
	// SlotPending returns the slot's pending records, oldest first.
	SlotPending(slotID string) ([]*Record, error)
	// SubjectSlots returns the ids of the slots about a subject.
	SubjectSlots(subjectID string) ([]string, error)
	// ScanActive calls fn for each active record, of one subject when
	// subjectID is not empty, oldest first, until fn returns false.
	ScanActive(subjectID string, fn func(*Record) bool) error
	// ScanPending calls fn for each pending record, oldest first.
	ScanPending(fn func(*Record) bool) error
	// ScanByActor calls fn for each record written by a run/session id
	// (kind "run") or an agent/user id (kind "actor"), oldest first.
	ScanByActor(kind, id string, fn func(*Record) bool) error
	// ScanEvents calls fn for each audit event after the given event id
	// ("" = from the start), oldest first.
	ScanEvents(after string, fn func(*Event) bool) error
	// ScanShadowed calls fn for each audit event IsShadowed reports, after
	// the given event id ("" = from the start) in the order asked for:
	// oldest first, or newest first (then "after" means older than).
	ScanShadowed(after string, newest bool, fn func(*Event) bool) error
	// RecordEvents returns the audit events of one record, oldest first.
	RecordEvents(recordID string) ([]*Event, error)
	// ScanNotices calls fn for each undelivered notice, oldest first.
	ScanNotices(fn func(*Notice) bool) error
}

// Tx is a read-write transaction.
type Tx interface {
	ReadTx
	PutRecord(*Record) error
	PutSlot(*Slot) error
	PutRollbackPoint(*RollbackPoint) error
	AppendEvent(*Event) error
	PutNotice(*Notice) error
	DeleteNotice(id string) error
}

// PolicyInput is what policy decides on. Its shape may grow, never shrink.
type PolicyInput struct {
	Op        Op        `json:"op"`
	Candidate *Record   `json:"candidate"`
	Current   *Record   `json:"current"` // the slot's active record, or null
	Pending   []*Record `json:"pending"` // the slot's pending records
	Actor     Actor     `json:"actor"`
	Dialect   string    `json:"dialect"`
	// Secrets are the credentials and the personal data (Kind) the
	// governor's scanner found in the candidate, by field and rule; never
	// the value itself, so the input can be kept in the audit log and
	// replayed.
	Secrets []SecretFinding `json:"secrets"`
	// Judge is a model's second opinion on the candidate's text, when one
	// is configured and answered in time; null otherwise.
	Judge *Verdict `json:"judge"`
	// Unplaced marks the input of a WritePolicy's one query: the
	// candidate as the writer sent it (layer: the declared one and the
	// slot's), before placement.
	Unplaced bool `json:"unplaced,omitempty"`
}

// SecretFinding says which field of a candidate holds a credential or
// personal data, and which detection rule found it.
type SecretFinding struct {
	Field string `json:"field"` // e.g. summary, value, metadata.url, actor.agentId
	Rule  string `json:"rule"`  // e.g. aws-access-token, password-assignment, pii-payment-card
	// Kind is FindingSecret or FindingPII. Empty means a secret: audit
	// logs written before personal data was detected hold only secrets.
	Kind string `json:"kind,omitempty"`
}

// Kinds of findings. The governor rejects a write with a secret whatever
// policy says; personal data is policy's to decide (the default policy's
// pii_detected rejects it, an operator may park it for review instead).
const (
	FindingSecret = "secret"
	FindingPII    = "pii"
)

// IsPII reports whether f is personal data rather than a credential.
func (f SecretFinding) IsPII() bool { return f.Kind == FindingPII }

// SecretScanner finds credentials in text. It returns the ids of the
// rules that matched, or none; never the matched text.
type SecretScanner interface {
	FindSecrets(text string) []string
}

// PIIScanner finds personal data (payment card numbers, national ids,
// IBANs) in text, like SecretScanner finds credentials: the ids of the
// detectors that matched, never the matched text. A SecretScanner that is
// also a PIIScanner (memgate's are) has its findings reported with Kind
// FindingPII; it is a separate interface so that a scanner without it
// still scans for secrets.
type PIIScanner interface {
	FindPII(text string) []string
}

// Verdict is a model's classification of a candidate's text (the judge).
// Policy may let it raise risk, never lower it.
type Verdict struct {
	// Label is what the text is: strategy, permission, state_change,
	// inference, poisoning, secret, preference, checkpoint or knowledge.
	Label  string `json:"label"`
	Risk   Risk   `json:"risk"`
	Reason string `json:"reason,omitempty"`
	Model  string `json:"model,omitempty"`
}

// Judge classifies a candidate's text with a model. An error (down, slow,
// unparseable answer) means no second opinion: the rules' verdict stands.
type Judge interface {
	Judge(ctx context.Context, rec *Record) (*Verdict, error)
}

// Classifier decides the risk of a candidate. An error makes the governor
// fail closed: the write is parked with reason policy_error.
type Classifier interface {
	Classify(ctx context.Context, in *PolicyInput) (Decision, error)
}

// Placement is where policy puts a free-text memory: the slot fields its
// text implies. The governor uses a field only where the writer left it
// empty.
type Placement struct {
	Layer     Layer
	FactType  string
	SubjectID string
	Value     json.RawMessage
}

// WritePolicy is a Placer that can also place a write and decide it in
// one evaluation (DESIGN §7: one policy query per write).
// PlaceAndClassify gets the write before placement, with the state of the
// slot it will have if placement leaves its slot fields as they are, and
// in.Unplaced set; it answers what Place would answer about the write, and
// what Classify would answer about the placed write in that state. The
// governor uses the decision only when placement left the write's slot
// fields alone and the layer it is judged at is the one the decision saw
// (see Governor.placeAndDecide); otherwise it asks Classify again. An
// error means no answer: the governor asks Place and Classify.
type WritePolicy interface {
	Placer
	PlaceAndClassify(ctx context.Context, in *PolicyInput) (Placement, Decision, error)
}

// ErrNoWriteQuery is PlaceAndClassify's answer when the policy in force
// has no query that does both (a policy written before it existed): not
// an evaluation, nor a failure.
var ErrNoWriteQuery = errors.New("policy: no write document (placement and decision in one query)")

// Placer is a Classifier that places free text with a query of its own,
// far cheaper than a decision. The governor asks it before deciding; a
// Classifier that is not a Placer places through the slot fields of a
// decision.
type Placer interface {
	Place(ctx context.Context, in *PolicyInput) (Placement, error)
}

// ClassifierFunc adapts a function to Classifier (tests inject decisions).
type ClassifierFunc func(ctx context.Context, in *PolicyInput) (Decision, error)

// Classify calls f.
func (f ClassifierFunc) Classify(ctx context.Context, in *PolicyInput) (Decision, error) {
	return f(ctx, in)
}

// Conflict kinds reported to the Observer.
const (
	ConflictOverrideParked  = "override_parked"
	ConflictOverrideApplied = "override_applied"
	ConflictPendingPending  = "pending_vs_pending"
)

// Rollback scopes reported to the Observer.
const (
	ScopeRecord     = "record"
	ScopeCascade    = "cascade"
	ScopeQuarantine = "quarantine"
	ScopeRestore    = "restore"
)

// Observer hears about transitions after they commit; metrics implement it.
type Observer interface {
	Write(dialect string, action Action, risk Risk)
	Conflict(kind string)
	RolledBack(scope, reason string, n int)
	Stale()
	ReviewDecided(outcome, route string, waited time.Duration)
	// Shadowed hears of a write whose park or rejection (would) was not
	// enforced, with the rules that asked for it.
	Shadowed(would Action, rules []string)
	// PolicyMode hears the mode the governor decides in, at start and on
	// every change.
	PolicyMode(mode PolicyMode)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) Write(string, Action, Risk)                  {}
func (NopObserver) Conflict(string)                             {}
func (NopObserver) RolledBack(string, string, int)              {}
func (NopObserver) Stale()                                      {}
func (NopObserver) ReviewDecided(string, string, time.Duration) {}
func (NopObserver) Shadowed(Action, []string)                   {}
func (NopObserver) PolicyMode(PolicyMode)                       {}

// Notified is told after commit that new notices are in the outbox, so a
// worker can deliver them without polling.
type Notified interface{ Wake() }

// Candidate is a write as a dialect hands it to the governor.
type Candidate struct {
	Op              Op              `json:"op,omitempty"`
	SlotID          string          `json:"slotId,omitempty"` // edit or delete an existing memory
	Layer           Layer           `json:"layer,omitempty"`
	SubjectID       string          `json:"subjectId,omitempty"`
	FactType        string          `json:"factType,omitempty"`
	Summary         string          `json:"summary"`
	Value           json.RawMessage `json:"value,omitempty"`
	CandidateSource Source          `json:"candidateSource,omitempty"`
	Evidence        Evidence        `json:"evidence,omitzero"`
	Actor           Actor           `json:"actor,omitempty"`
	Scope           Scope           `json:"scope,omitzero"`
	Metadata        map[string]any  `json:"metadata,omitempty"`
	// KeepApart asks that the write not be matched with other memories
	// (facts.go): the Markdown guard's entries are each a line of a file,
	// and the guard pairs an edited entry with its slot itself. Not
	// something a client can send.
	KeepApart bool `json:"-"`
	// Related names the memory of the same subject that the writer's own
	// comparison found this write repeats (MatchRepeat) or states a new
	// value of (MatchUpdate): the MCP knowledge graph's observations, each
	// in a slot of its own text, are compared with their entity's others
	// (facts.Compare) before they are written. The governor treats it as
	// its matcher's answer (facts.go): checked against the memory's
	// active version, never trusted to cross a subject or a tenant. Not
	// something a client can send.
	Related *FactMatch `json:"-"`
	// ExpiresAt, when set, is when the memory leaves the active layer
	// (Mem0's expiration_date; see RetentionPass).
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// ActiveLister lists the active layer from an index kept in step with the
// store's commits (package search implements it). It answers as List
// would: active records passing f, of the caller's tenant, oldest first
// within a subject, at most f.Limit.
type ActiveLister interface {
	ListActive(ctx context.Context, f ListFilter) ([]*Record, error)
}
