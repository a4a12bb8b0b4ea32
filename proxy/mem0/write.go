package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// Mem0 event statuses.
const (
	statusPending   = "PENDING"
	statusSucceeded = "SUCCEEDED"
	statusFailed    = "FAILED"
)

// writeResult is what one Mem0 write did, for its answer.
type writeResult struct {
	event     *Event
	results   []resultJSON     // changes applied now
	waiting   []resultJSON     // one entry per write that did not apply: parked or refused
	applied   []*memory.Record // the versions applied now
	parked    []*memory.Record // writes waiting for review
	refused   []*memory.Record // writes policy refused outright
	unchanged []*memory.Record // repeats of the active version
}

func (w *writeResult) status() string {
	if len(w.parked) > 0 {
		return statusPending
	}
	return statusSucceeded
}

// message says in words what happened, so a human reading an agent's log
// sees that memgate governed the write.
func (w *writeResult) message() string {
	var parts []string
	if n := len(w.results); n > 0 || len(w.parked)+len(w.refused)+len(w.unchanged) == 0 {
		parts = append(parts, fmt.Sprintf("%d applied", n))
	}
	if n := len(w.parked); n > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for human review (poll /v1/event/%s/)", n, w.event.ID))
	}
	if n := len(w.unchanged); n > 0 {
		parts = append(parts, fmt.Sprintf("%d unchanged", n))
	}
	if n := len(w.refused); n > 0 {
		p := fmt.Sprintf("%d refused by policy", n)
		if d := w.refused[0].Decision; d != nil && len(d.Reasons) > 0 {
			p += " (" + d.Reasons[0].Message + ")"
		}
		parts = append(parts, p)
	}
	return "memgate: " + strings.Join(parts, ", ")
}

// refusals lists why policy refused writes.
func (w *writeResult) refusals() []refusalJSON {
	out := []refusalJSON{}
	for _, r := range w.refused {
		rf := refusalJSON{RecordID: r.ID, Reasons: []memory.Reason{}}
		if r.Decision != nil && r.Decision.Reasons != nil {
			rf.Reasons = r.Decision.Reasons
		}
		out = append(out, rf)
	}
	return out
}

type refusalJSON struct {
	RecordID string          `json:"record_id"`
	Reasons  []memory.Reason `json:"reasons"`
}

// maxPayloadBytes bounds the request an event keeps.
const maxPayloadBytes = 8 << 10

// write submits candidates to the governor, one after the other, and keeps
// the event. It runs to the end even if the client goes away, so that what
// was started is recorded. typ is the Mem0 event type.
func (h *Handler) write(ctx context.Context, typ string, cands []memory.Candidate, payload []byte) (*writeResult, error) {
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	ev := &Event{ID: h.newID(), Type: typ, CreatedAt: h.now(), Writes: []EventWrite{}, Payload: boundedPayload(payload),
		Tenant: memory.TenantOf(ctx)}
	res := &writeResult{event: ev, results: []resultJSON{}, waiting: []resultJSON{}}
	var err error
	for _, c := range cands {
		var sr *memory.SubmitResult
		if sr, err = h.gov.Submit(ctx, c); err != nil {
			break
		}
		ev.Writes = append(ev.Writes, EventWrite{RecordID: sr.Record.ID, Outcome: sr.Outcome})
		switch sr.Outcome {
		case memory.OutcomeApplied:
			text := sr.Record.Summary
			if sr.Record.Op == memory.OpDelete && sr.Replaced != nil {
				text = sr.Replaced.Summary
			}
			res.results = append(res.results, toResult(sr.Record, text))
			res.applied = append(res.applied, sr.Record)
		case memory.OutcomeParked:
			res.parked = append(res.parked, sr.Record)
			res.waiting = append(res.waiting, pendingResult(sr.Record, typ, c.Summary, ev.ID))
		case memory.OutcomeRefused:
			res.refused = append(res.refused, sr.Record)
			if !dropped(sr.Record) {
				res.waiting = append(res.waiting, refusedResult(sr.Record))
			}
		case memory.OutcomeUnchanged:
			res.unchanged = append(res.unchanged, sr.Record)
		}
	}
	if err != nil && len(ev.Writes) == 0 {
		return nil, err
	}
	if len(res.refused) > 0 {
		// What policy refuses (a secret, say) is not kept in the event.
		ev.Payload = json.RawMessage(`{"redacted":true,"reason":"policy refused part of this write"}`)
	}
	ev.LatencyMs = float64(time.Since(start).Microseconds()) / 1000
	// Keep the event even when a later candidate failed: the earlier ones
	// are committed and must stay traceable.
	if perr := h.events.Put(ctx, ev); perr != nil {
		h.log.Error("mem0 event not recorded", "event", ev.ID, "err", perr)
		if err == nil {
			err = perr
		}
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func boundedPayload(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	if len(b) > maxPayloadBytes {
		return json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(b)))
	}
	return json.RawMessage(b)
}

// all is what an add answers as its results: the changes applied, then one
// entry per write that did not apply, which a client that keeps only ADD
// and UPDATE entries skips and a model reading every entry understands.
func (w *writeResult) all() []resultJSON {
	return append(append([]resultJSON{}, w.results...), w.waiting...)
}

// pendingResult is the entry of a parked write: event PENDING_REVIEW, the
// memory it is about, and words a model reads correctly (proxy.PendingNotice).
func pendingResult(rec *memory.Record, typ, summary, eventID string) resultJSON {
	change := proxy.ChangeWrite
	switch {
	case typ == eventDelete:
		change = proxy.ChangeDelete
	case typ == eventUpdate:
		change = proxy.ChangeUpdate
	}
	status := fmt.Sprintf("event_id %s (memory_event_status, or GET /v1/event/%s/)", eventID, eventID)
	text := proxy.PendingNotice(change, rec.SlotID, summary, status)
	out := resultJSON{ID: rec.SlotID, Memory: text, Event: proxy.EventPendingReview, UserID: optional(rec.Scope.UserID), RecordID: rec.ID}
	out.Data.Memory = text
	return out
}

// refusedResult is the entry of a refused write: event REFUSED and the
// reason, never its text.
func refusedResult(rec *memory.Record) resultJSON {
	text := proxy.RefusedNotice(rec)
	out := resultJSON{ID: rec.ID, Memory: text, Event: proxy.EventRefused, UserID: optional(rec.Scope.UserID), RecordID: rec.ID}
	out.Data.Memory = text
	return out
}

// dropped reports whether a refused write was one this dialect inferred
// from a conversation (an add with infer, an extracted fact) and policy
// refused without a secret: chit-chat or a question, for which Mem0
// answers nothing, so neither does memgate. A secret is always reported.
func dropped(rec *memory.Record) bool {
	if rec.Decision == nil || len(rec.Decision.Redact) > 0 {
		return false
	}
	for _, mode := range []string{modeInfer, modeExtract} {
		if strings.HasPrefix(rec.Evidence.SourceRef, "mem0:"+mode+":") {
			return true
		}
	}
	return false
}
