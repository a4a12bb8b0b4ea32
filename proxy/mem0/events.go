package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/memgate/memgate/memory"
)

// eventJSON is an event as Mem0 answers it.
type eventJSON struct {
	ID          string          `json:"id"`
	EventType   string          `json:"event_type"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
	Metadata    eventMetadata   `json:"metadata"`
	Results     []resultJSON    `json:"results"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	StartedAt   string          `json:"started_at"`
	CompletedAt *string         `json:"completed_at"`
	Latency     float64         `json:"latency"`
	GraphStatus *string         `json:"graph_status"`
	Error       *string         `json:"error"`
}

// eventMetadata tells how memgate governed the event's writes.
type eventMetadata struct {
	Applied   int           `json:"applied"`
	Pending   int           `json:"pending"`
	Failed    int           `json:"failed"` // rejected by a reviewer, or rolled back
	Unchanged int           `json:"unchanged"`
	Refused   int           `json:"refused"` // refused by policy on arrival
	Records   []eventRecord `json:"records"`
}

type eventRecord struct {
	RecordID string `json:"record_id"`
	MemoryID string `json:"memory_id"`
	Status   string `json:"status"`
}

// view computes an event's status from its records as they are now:
// PENDING while any waits for review; FAILED when every write that was
// applied or parked has since been rejected or rolled back; SUCCEEDED
// otherwise (writes policy refused on arrival, or that repeated the active
// version, change nothing and fail nothing).
func (h *Handler) view(ctx context.Context, ev *Event) (eventJSON, error) {
	out := eventJSON{ID: ev.ID, EventType: ev.Type, Payload: ev.Payload, Results: []resultJSON{},
		CreatedAt: timestamp(ev.CreatedAt), StartedAt: timestamp(ev.CreatedAt), Latency: ev.LatencyMs,
		Metadata: eventMetadata{Records: []eventRecord{}}}
	md := &out.Metadata
	completed := ev.CreatedAt
	var failure string
	for _, w := range ev.Writes {
		switch w.Outcome {
		case memory.OutcomeRefused:
			md.Refused++
			continue
		case memory.OutcomeUnchanged:
			md.Unchanged++
			continue
		}
		rec, err := h.gov.Get(ctx, w.RecordID)
		if err != nil {
			return out, fmt.Errorf("event %s: record %s: %w", ev.ID, w.RecordID, err)
		}
		md.Records = append(md.Records, eventRecord{RecordID: rec.ID, MemoryID: rec.SlotID, Status: string(rec.Status)})
		if rec.DecidedAt.After(completed) {
			completed = rec.DecidedAt
		}
		switch rec.Status {
		case memory.StatusPending:
			md.Pending++
			// What the agent was told when it wrote, again while it waits.
			out.Results = append(out.Results, pendingResult(rec, ev.Type, rec.Summary, ev.ID))
		case memory.StatusActive, memory.StatusSuperseded, memory.StatusDeleted:
			md.Applied++
			text, err := h.changedText(ctx, rec)
			if err != nil {
				return out, err
			}
			out.Results = append(out.Results, toResult(rec, text))
		default: // rejected by a reviewer, or rolled back since
			md.Failed++
			if failure == "" {
				failure = failureOf(rec)
			}
		}
	}
	switch {
	case md.Pending > 0:
		out.Status = statusPending
	case md.Failed > 0 && md.Applied == 0:
		out.Status = statusFailed
		out.Error = &failure
	default:
		out.Status = statusSucceeded
	}
	out.UpdatedAt = timestamp(completed)
	if out.Status != statusPending {
		c := timestamp(completed)
		out.CompletedAt = &c
	}
	return out, nil
}

// changedText is the text an applied version concerns: its own, or for a
// deletion the text it deleted.
func (h *Handler) changedText(ctx context.Context, rec *memory.Record) (string, error) {
	if rec.Op != memory.OpDelete || rec.Supersedes == "" {
		return rec.Summary, nil
	}
	old, err := h.gov.Get(ctx, rec.Supersedes)
	if err != nil {
		return "", fmt.Errorf("deleted version %s: %w", rec.Supersedes, err)
	}
	return old.Summary, nil
}

func failureOf(rec *memory.Record) string {
	if rec.Status == memory.StatusRolledBack {
		return "rolled back: " + rec.RollbackReason
	}
	if rv := rec.Review; rv != nil {
		msg := "rejected by " + rv.By
		if rv.Note != "" {
			msg += ": " + rv.Note
		}
		return msg
	}
	return "rejected"
}

func (h *Handler) getEvent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := memory.CheckLookupID("event id", id); err != nil {
		h.fail(w, r, err)
		return
	}
	if len(id) > memory.MaxIDLen {
		h.fail(w, r, memory.Errorf(memory.ENOTFOUND, "Event not found or you don't have permission to access it."))
		return
	}
	ev, err := h.events.Get(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := h.view(r.Context(), ev)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// listEvents answers the newest events first, paginated.
func (h *Handler) listEvents(w http.ResponseWriter, r *http.Request) {
	p, err := readPage(r, nil, nil, 200)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	evs, total, err := h.events.List(r.Context(), (p.number-1)*p.size, p.size)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]eventJSON, 0, len(evs))
	for _, ev := range evs {
		v, err := h.view(r.Context(), ev)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, newEnvelope(r, p, total, out))
}
