package memory

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
)

// Options configure a Governor. Store and Classifier are required.
type Options struct {
	Store      Store
	Classifier Classifier
	Observer   Observer
	Logger     *slog.Logger
	Now        func() time.Time
	// NewID names records, events and notices (default NewULIDSource). The
	// ids it returns must increase: the audit log is read in their order.
	NewID func() string
	// Outbox enables storing reviewer notifications with each transition;
	// Waker, if set, is told after commit that there is something to deliver.
	Outbox bool
	Waker  Notified
	// PolicyTimeout bounds one policy evaluation; past it the write is parked.
	PolicyTimeout time.Duration
	// BatchSlots is how many slots quarantine and restore change per transaction.
	BatchSlots int
	// Secrets scans every string a candidate carries (default: the
	// Classifier, if it is a SecretScanner). A candidate with a secret is
	// rejected and redacted whatever policy decides, so a secret is never
	// applied, parked or logged. If it is also a PIIScanner, personal data
	// is reported too, and policy decides (a rejected write is redacted
	// the same way). Policy sees the findings as input.secrets.
	Secrets SecretScanner
	// Judge, if set, gives a model's second opinion on a candidate's text,
	// as input.judge. It is asked before the slot is locked; an error or a
	// late answer leaves the rules' verdict alone.
	Judge Judge
	// Active, if set, answers List from an index of the active layer kept
	// beside the store (search.Index); without it List scans the store.
	Active ActiveLister
	// PolicyMode is the mode to start in ("": enforce); SetPolicyMode
	// changes it at run time.
	PolicyMode PolicyMode
	// Facts, if set, matches free-text writes with the active memories
	// that state the same fact (facts.go); without it each free-text
	// write that policy does not place opens a memory of its own.
	Facts FactMatcher
}

// Governor runs every memory write through policy and applies the resulting
// transition in one store transaction. It is safe for concurrent use.
//
// A write (submit.go) is placed, scanned for secrets and shown to the
// judge; policy then decides it from a snapshot of its slot, with no lock
// held (classify.go). The slot's stripe lock is taken (locks.go) and the
// transaction keeps that decision if the slot is still at the revision it
// was made at, else decides again; it applies the pure transition's
// effects (transitions.go), and the write is answered once durable.
// Reviews (review.go) and rollbacks (rollback.go) decide under the lock;
// quarantine and restore (bulk.go) undo many slots in batches
// (batchtx.go).
type Governor struct {
	store   Store
	policy  Classifier
	obs     Observer
	log     *slog.Logger
	now     func() time.Time
	newID   func() string
	outbox  bool
	waker   Notified
	timeout time.Duration
	batch   int
	secrets SecretScanner
	judge   Judge
	active  ActiveLister
	matcher FactMatcher
	facts   factLocks       // per-subject serialization of free text (facts.go)
	mode    atomic.Bool     // shadow mode (shadow.go)
	stripes [256]sync.Mutex // per-slot serialization; the store's conflict detection backs it up
	writes  writesUnderWay  // transactions yet to commit, for followers of the audit log (horizon.go)
}

// NewGovernor returns a Governor with defaults filled in.
func NewGovernor(o Options) *Governor {
	g := &Governor{store: o.Store, policy: o.Classifier, obs: o.Observer, log: o.Logger, now: o.Now,
		newID: o.NewID, outbox: o.Outbox, waker: o.Waker, timeout: o.PolicyTimeout, batch: o.BatchSlots,
		secrets: o.Secrets, judge: o.Judge, active: o.Active, matcher: o.Facts}
	if g.secrets == nil {
		g.secrets, _ = o.Classifier.(SecretScanner)
	}
	if g.obs == nil {
		g.obs = NopObserver{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = func() time.Time { return time.Now().UTC() }
	}
	if g.newID == nil {
		g.newID = NewULIDSource()
	}
	if g.timeout <= 0 {
		g.timeout = 250 * time.Millisecond
	}
	if g.batch <= 0 {
		g.batch = 32
	}
	mode, err := ParsePolicyMode(string(o.PolicyMode))
	if err != nil {
		g.log.Warn("unknown policy mode; enforcing policy", "mode", o.PolicyMode)
		mode = PolicyEnforce
	}
	g.mode.Store(mode == PolicyShadow)
	g.obs.PolicyMode(mode)
	return g
}

// NewULIDSource returns a concurrency-safe generator of monotonic ULIDs, so
// ids sort by creation time even within one millisecond.
func NewULIDSource() func() string {
	var mu sync.Mutex
	entropy := ulid.Monotonic(rand.Reader, 0)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return ulid.MustNew(ulid.Now(), entropy).String()
	}
}

// apply writes effects into tx, naming events and notices.
func (g *Governor) apply(tx Tx, eff *Effects) error {
	for _, s := range eff.Slots {
		if err := tx.PutSlot(s); err != nil {
			return err
		}
	}
	for _, r := range eff.Records {
		if err := tx.PutRecord(r); err != nil {
			return err
		}
	}
	for _, p := range eff.Points {
		if err := tx.PutRollbackPoint(p); err != nil {
			return err
		}
	}
	for _, ev := range eff.Events {
		ev.ID = g.newID()
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
	}
	if g.outbox {
		for _, n := range eff.Notices {
			n.ID = g.newID()
			if err := tx.PutNotice(n); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *Governor) wake(ok bool) {
	if ok && g.outbox && g.waker != nil {
		g.waker.Wake()
	}
}

func loadSlot(tx ReadTx, slotID string) (SlotState, error) {
	st, err := loadHead(tx, slotID)
	if err != nil || st.Slot == nil {
		return st, err
	}
	st.Pending, err = tx.SlotPending(slotID)
	return st, err
}

// loadRest is loadSlot for a slot already read (nil: there is none).
func loadRest(tx ReadTx, slot *Slot) (SlotState, error) {
	st := SlotState{Slot: slot}
	if slot == nil {
		return st, nil
	}
	var err error
	if slot.Head != "" {
		if st.Head, err = tx.Record(slot.Head); err != nil {
			return st, fmt.Errorf("slot %s head: %w", slot.ID, err)
		}
	}
	st.Pending, err = tx.SlotPending(slot.ID)
	return st, err
}

// loadHead is loadSlot without the pending writes, which undoing versions
// does not look at (Rollback, Retract and Reject decide on the slot and
// its head): quarantine and restore skip a prefix scan per slot. A
// concurrent park still conflicts on the slot key, which both write.
func loadHead(tx ReadTx, slotID string) (SlotState, error) {
	var st SlotState
	slot, err := tx.Slot(slotID)
	if ErrorCode(err) == ENOTFOUND {
		return st, nil
	} else if err != nil {
		return st, err
	}
	st.Slot = slot
	if slot.Head != "" {
		if st.Head, err = tx.Record(slot.Head); err != nil {
			return st, fmt.Errorf("slot %s head: %w", slotID, err)
		}
	}
	return st, nil
}
