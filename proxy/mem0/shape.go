package mem0

import (
	"encoding/json"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

// memoryJSON is a memory as Mem0 answers it. Its id is the slot's stable
// id: an edit is a new version behind the same id. Absent entity ids are
// null, as Mem0 answers them. The run id appears as both run_id (search)
// and session_id (get and list), the two names Mem0 uses for it.
type memoryJSON struct {
	ID             string         `json:"id"`
	Memory         string         `json:"memory"`
	UserID         *string        `json:"user_id"`
	AgentID        *string        `json:"agent_id"`
	AppID          *string        `json:"app_id"`
	RunID          *string        `json:"run_id"`
	SessionID      *string        `json:"session_id"`
	Metadata       map[string]any `json:"metadata"`
	Categories     []string       `json:"categories"`
	CreatedAt      string         `json:"created_at"`
	UpdatedAt      string         `json:"updated_at"`
	ExpirationDate *string        `json:"expiration_date"`
	Immutable      bool           `json:"immutable"`
	LifecycleState string         `json:"lifecycle_state"`
	Score          *float64       `json:"score,omitempty"`
	Memgate        memgateJSON    `json:"memgate"`
}

// memgateJSON is what memgate adds to a memory: the version the answer
// shows and how it was governed.
type memgateJSON struct {
	RecordID  string       `json:"record_id"`
	Layer     memory.Layer `json:"layer"`
	Status    string       `json:"status"`
	RiskLevel memory.Risk  `json:"risk_level,omitempty"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// toMemory shapes a record. Mem0 categories are topical labels; memgate's
// topic is the record's layer (knowledge, preference, state, ...).
func toMemory(r *memory.Record) memoryJSON {
	var expires *string
	if !r.ExpiresAt.IsZero() {
		d := r.ExpiresAt.UTC().Format(time.DateOnly)
		expires = &d
	}
	return memoryJSON{ID: r.SlotID, Memory: r.Summary, ExpirationDate: expires,
		UserID: optional(r.Scope.UserID), AgentID: optional(r.Scope.AgentID), AppID: optional(r.Scope.AppID),
		RunID: optional(r.Scope.RunID), SessionID: optional(r.Scope.RunID),
		Metadata: r.Metadata, Categories: []string{string(r.Layer)},
		CreatedAt: timestamp(r.CreatedAt), UpdatedAt: timestamp(search.UpdatedAt(r)),
		LifecycleState: string(r.Status),
		Memgate:        memgateJSON{RecordID: r.ID, Layer: r.Layer, Status: string(r.Status), RiskLevel: r.RiskLevel}}
}

// resultJSON is one entry of an add's or an event's results.
type resultJSON struct {
	ID     string `json:"id"`
	Memory string `json:"memory"`
	Data   struct {
		Memory string `json:"memory"`
	} `json:"data"`
	Event    string  `json:"event"` // ADD, UPDATE or DELETE
	UserID   *string `json:"user_id"`
	RecordID string  `json:"record_id"`
}

// Mem0 event names of a change.
const (
	eventAdd    = "ADD"
	eventUpdate = "UPDATE"
	eventDelete = "DELETE"
	eventNone   = "NONE"
)

// changeOf names what an applied version did to its memory: a deletion, a
// new version over an old one, or a first version.
func changeOf(r *memory.Record) string {
	switch {
	case r.Op == memory.OpDelete:
		return eventDelete
	case r.Supersedes != "":
		return eventUpdate
	}
	return eventAdd
}

// toResult shapes an applied version; text is the memory it concerns (for
// a deletion, the text that was deleted).
func toResult(r *memory.Record, text string) resultJSON {
	out := resultJSON{ID: r.SlotID, Memory: text, Event: changeOf(r), UserID: optional(r.Scope.UserID), RecordID: r.ID}
	out.Data.Memory = text
	return out
}

// historyJSON is one entry of a memory's history.
type historyJSON struct {
	ID         string         `json:"id"`
	MemoryID   string         `json:"memory_id"`
	Input      []Message      `json:"input"`
	OldMemory  *string        `json:"old_memory"`
	NewMemory  *string        `json:"new_memory"`
	Event      string         `json:"event"`
	UserID     *string        `json:"user_id"`
	AgentID    *string        `json:"agent_id"`
	AppID      *string        `json:"app_id"`
	SessionID  *string        `json:"session_id"`
	Categories []string       `json:"categories"`
	Metadata   map[string]any `json:"metadata"`
	CreatedAt  string         `json:"created_at"`
	UpdatedAt  string         `json:"updated_at"`
	IsDeleted  bool           `json:"is_deleted"`
	Status     string         `json:"status"` // the version's memgate status (e.g. rolled_back)
}

// toHistory maps a slot's versions to Mem0 history: only versions that were
// applied are changes of the memory (pending and rejected writes are not),
// oldest first, each with the text it replaced.
func toHistory(slotID string, versions []*memory.Record) []historyJSON {
	out := []historyJSON{}
	texts := map[string]*string{} // applied version id -> its text (nil for a deletion)
	for _, r := range versions {
		if r.ActivatedAt.IsZero() {
			continue
		}
		h := historyJSON{ID: r.ID, MemoryID: slotID, Input: []Message{}, OldMemory: texts[r.Supersedes], Event: eventAdd,
			UserID: optional(r.Scope.UserID), AgentID: optional(r.Scope.AgentID), AppID: optional(r.Scope.AppID),
			SessionID: optional(r.Scope.RunID), Categories: []string{string(r.Layer)}, Metadata: r.Metadata,
			CreatedAt: timestamp(r.CreatedAt), UpdatedAt: timestamp(search.UpdatedAt(r)), Status: string(r.Status)}
		if r.Evidence.Excerpt != "" {
			h.Input = append(h.Input, Message{Role: "user", Content: r.Evidence.Excerpt})
		}
		switch {
		case r.Op == memory.OpDelete:
			h.Event, h.IsDeleted = eventDelete, true
		case h.OldMemory != nil:
			h.Event = eventUpdate
		}
		if r.Op != memory.OpDelete {
			text := r.Summary
			h.NewMemory = &text
		}
		texts[r.ID] = h.NewMemory
		out = append(out, h)
	}
	return out
}

// project keeps only the named fields of each item (Mem0's "fields"); id
// always stays.
func project[T any](items []T, fields []string) ([]any, error) {
	out := make([]any, 0, len(items))
	keep := map[string]bool{"id": true}
	for _, f := range fields {
		keep[f] = true
	}
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		for k := range m {
			if !keep[k] {
				delete(m, k)
			}
		}
		out = append(out, m)
	}
	return out, nil
}
