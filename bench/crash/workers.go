package crash

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgate/memgate/bench/sidecar"
	"github.com/memgate/memgate/internal/clip"
)

// workload drives the sidecar processes during one cycle: writers and
// reviewers that log what is acknowledged. With several instances on one
// store each call goes to the next instance, so a write parked through one
// is approved or rolled back through another.
type workload struct {
	clients []*sidecar.Client
	next    atomic.Uint64
	ledger  *Ledger
	erased  *erasureLog
	cycle   int
	slots   int
	// gone is closed when a process has exited: the workers stop then, so
	// only the calls the kill caught in flight count as cut off.
	gone <-chan struct{}

	sent, cutOff, serverErrors, unexpected atomic.Int64

	mu      sync.Mutex
	doubles []string // slots seen with two active records while running
	// answers counts the server errors and unexpected answers by status
	// and error code, with one message each, to tell why they came.
	answers map[string]FailedAnswer
}

// Slot naming: checkpoints apply under the default policy (each supersedes
// the slot's head); policy-layer writes park for review; knowledge without a
// fact type goes to a slot of its own.
const (
	checkpointSubject = "crash-ck-%d"
	checkpointFact    = "progress"
	policySubject     = "crash-pol-%d"
	policyFact        = "rule"
)

func (w *workload) writer(ctx context.Context, id int, rng *rand.Rand) {
	actor := map[string]string{"agentId": fmt.Sprintf("crash-writer-%d", id), "runId": fmt.Sprintf("crash-cycle-%d", w.cycle)}
	for n := 0; w.running(ctx); n++ {
		cand := map[string]any{"actor": actor}
		switch x := rng.IntN(100); {
		case x < 60:
			cand["layer"], cand["factType"] = "checkpoint", checkpointFact
			cand["subjectId"] = fmt.Sprintf(checkpointSubject, rng.IntN(w.slots))
			cand["summary"] = fmt.Sprintf("cycle %d writer %d reached step %d", w.cycle, id, n)
		case x < 85:
			cand["layer"], cand["factType"] = "policy", policyFact
			cand["subjectId"] = fmt.Sprintf(policySubject, rng.IntN(w.slots))
			cand["summary"] = fmt.Sprintf("deploys of area %d need manual confirmation (cycle %d writer %d #%d)", n%7, w.cycle, id, n)
		default:
			cand["layer"], cand["subjectId"] = "knowledge", "crash-knowledge"
			cand["summary"] = fmt.Sprintf("observation %d of writer %d in cycle %d", n, id, w.cycle)
		}
		w.sent.Add(1)
		rec, status, err := w.client().Write(ctx, cand)
		switch {
		case err == nil && status == http.StatusCreated:
			w.ledger.Ack(Ack{Kind: AckApplied, RecordID: rec.ID, Slot: slotOf(rec), Summary: rec.Summary, Cycle: w.cycle, At: time.Now()})
		case err == nil && status == http.StatusAccepted:
			w.ledger.Ack(Ack{Kind: AckParked, RecordID: rec.ID, Slot: slotOf(rec), Summary: rec.Summary, Cycle: w.cycle, At: time.Now()})
		default:
			w.failed(status, err)
		}
	}
}

func (w *workload) reviewer(ctx context.Context, rng *rand.Rand) {
	for w.running(ctx) {
		acted := false
		switch x := rng.IntN(100); {
		case x < 50:
			acted = w.decide(ctx, rng, true)
		case x < 65:
			acted = w.decide(ctx, rng, false)
		case x < 85:
			acted = w.rollback(ctx, rng)
		default:
			acted = w.checkSlot(ctx, rng)
		}
		if !acted {
			select {
			case <-ctx.Done():
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// client returns the instance of the next call, round robin.
func (w *workload) client() *sidecar.Client {
	return w.clients[(w.next.Add(1)-1)%uint64(len(w.clients))]
}

func (w *workload) running(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-w.gone:
		return false
	default:
		return true
	}
}

func (w *workload) decide(ctx context.Context, rng *rand.Rand, approve bool) bool {
	id := w.ledger.PickParked(rng)
	if id == "" {
		return false
	}
	w.sent.Add(1)
	var rec sidecar.Record
	var err error
	kind := AckRejected
	if approve {
		kind = AckApproved
		w.ledger.Attempt(id, OpApprove)
		rec, err = w.client().Approve(ctx, id, "crash harness")
	} else {
		w.ledger.Attempt(id, OpReject)
		rec, err = w.client().Reject(ctx, id, "crash harness")
	}
	var ae *sidecar.APIError
	switch {
	case err == nil:
		w.ledger.Ack(Ack{Kind: kind, RecordID: id, Slot: slotOf(rec), Cycle: w.cycle, At: time.Now()})
	case errors.As(err, &ae) && ae.Code == "already_decided":
		w.ledger.Decided(id)
	case errors.As(err, &ae) && ae.Code == "stale":
		// Still pending, re-evaluated against the new head.
	default:
		w.failed(0, err)
	}
	return true
}

func (w *workload) rollback(ctx context.Context, rng *rand.Rand) bool {
	id := w.ledger.PickApplied(rng)
	if id == "" {
		return false
	}
	w.sent.Add(1)
	w.ledger.Attempt(id, OpRollback)
	res, err := w.client().Rollback(ctx, id, "crash harness")
	var ae *sidecar.APIError
	switch {
	case err == nil:
		for _, r := range res.RolledBack {
			w.ledger.Ack(Ack{Kind: AckRolledBack, RecordID: r.ID, Slot: slotOf(r), Cycle: w.cycle, At: time.Now()})
		}
	case errors.As(err, &ae) && ae.Code == "conflict":
		// No longer the head (or already rolled back): nothing changed.
	default:
		w.failed(0, err)
	}
	return true
}

// checkSlot checks invariant 1 while the writers run.
func (w *workload) checkSlot(ctx context.Context, rng *rand.Rand) bool {
	s, ok := w.ledger.PickSlot(rng)
	if !ok {
		return false
	}
	w.sent.Add(1)
	doubled, err := checkSlot(ctx, w.client(), s)
	if err != nil {
		w.failed(0, err)
	}
	if doubled != "" {
		w.mu.Lock()
		w.doubles = append(w.doubles, doubled)
		w.mu.Unlock()
	}
	return true
}

// failed counts a call without a usable answer: cut off by the kill (no
// answer at all), a server error, or an answer the harness never provokes.
func (w *workload) failed(status int, err error) {
	var ae *sidecar.APIError
	if errors.As(err, &ae) {
		status = ae.Status
	}
	switch {
	case status >= 500:
		w.serverErrors.Add(1)
	case status != 0:
		w.unexpected.Add(1)
	default:
		w.cutOff.Add(1)
		return
	}
	key, example := fmt.Sprintf("HTTP %d", status), ""
	if ae != nil {
		key, example = fmt.Sprintf("HTTP %d %s", ae.Status, ae.Code), ae.Message
	} else if err != nil {
		example = err.Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.answers == nil {
		w.answers = map[string]FailedAnswer{}
	}
	a := w.answers[key]
	a.Count++
	if a.Example == "" {
		a.Example = clip.BytesMarked(example, 200)
	}
	w.answers[key] = a
}

// FailedAnswer is a kind of server error or unexpected answer: how many
// came and the message of one.
type FailedAnswer struct {
	Count   int    `json:"count"`
	Example string `json:"example"`
}

func slotOf(r sidecar.Record) Slot {
	if r.FactType == "" {
		return Slot{}
	}
	return Slot{SubjectID: r.SubjectID, FactType: r.FactType}
}
