package mem0

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// Mem0 bodies carry many optional fields and clients add new ones, so the
// decoders below ignore fields they do not know; the fields they do know
// must have the right JSON type.

// addRequest is the body of every add route.
type addRequest struct {
	Messages json.RawMessage `json:"messages"`
	// Text is a single memory some clients send instead of messages.
	Text            *string        `json:"text"`
	UserID          string         `json:"user_id"`
	AgentID         string         `json:"agent_id"`
	AppID           string         `json:"app_id"`
	RunID           string         `json:"run_id"`
	Metadata        map[string]any `json:"metadata"`
	Infer           *bool          `json:"infer"`
	DeducedMemories []string       `json:"deduced_memories"`
	// Extraction hints, passed to the extractor when there is one.
	CustomInstructions string `json:"custom_instructions"`
	Includes           string `json:"includes"`
	Excludes           string `json:"excludes"`
	// OutputFormat "v1.1" wraps the v1 answer in {"results": [...]}.
	OutputFormat string `json:"output_format"`
	// ExpirationDate (YYYY-MM-DD, or an RFC 3339 time) is when the
	// memories leave the active layer: from the start of that day, UTC.
	ExpirationDate *string `json:"expiration_date"`
}

// expiresAt reads expiration_date; zero when there is none.
func (a *addRequest) expiresAt() (time.Time, error) {
	if a.ExpirationDate == nil || *a.ExpirationDate == "" {
		return time.Time{}, nil
	}
	v := *a.ExpirationDate
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, memory.Errorf(memory.EINVALID, "expiration_date: want YYYY-MM-DD, got %q", v)
	}
	return t.UTC(), nil
}

func (a *addRequest) scope() memory.Scope {
	return memory.Scope{UserID: a.UserID, AgentID: a.AgentID, AppID: a.AppID, RunID: a.RunID}
}

// searchRequest is the body of every search route.
type searchRequest struct {
	Query     *string         `json:"query"`
	Filters   json.RawMessage `json:"filters"`
	TopK      *float64        `json:"top_k"`
	Limit     *float64        `json:"limit"` // the open-source server's name for top_k
	Threshold *float64        `json:"threshold"`
	// Entity ids at the top level (v1 and the open-source server).
	UserID     string         `json:"user_id"`
	AgentID    string         `json:"agent_id"`
	AppID      string         `json:"app_id"`
	RunID      string         `json:"run_id"`
	Categories []string       `json:"categories"`
	Metadata   map[string]any `json:"metadata"`
	Fields     []string       `json:"fields"`
}

// listRequest is the body of the v2 and v3 list routes.
type listRequest struct {
	Filters    json.RawMessage `json:"filters"`
	Page       *float64        `json:"page"`
	PageSize   *float64        `json:"page_size"`
	StartDate  string          `json:"start_date"`
	EndDate    string          `json:"end_date"`
	Categories []string        `json:"categories"`
	Keywords   string          `json:"keywords"`
	Fields     []string        `json:"fields"`
	UserID     string          `json:"user_id"`
	AgentID    string          `json:"agent_id"`
	AppID      string          `json:"app_id"`
	RunID      string          `json:"run_id"`
}

// updateRequest is the body of PUT: the platform sends text and metadata,
// the open-source server a dict whose text may be named data or memory.
type updateRequest struct {
	Text     *string        `json:"text"`
	Data     *string        `json:"data"`
	Memory   *string        `json:"memory"`
	Metadata map[string]any `json:"metadata"`
}

func (u *updateRequest) newText() (string, bool) {
	for _, s := range []*string{u.Text, u.Data, u.Memory} {
		if s != nil {
			return *s, true
		}
	}
	return "", false
}

// readBody reads a bounded request body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return proxy.ReadBody(w, r)
}

// decodeObject decodes one JSON object into v by memgate's strict JSON
// rules (see proxy.UnmarshalLenient): leniently about unknown fields,
// strictly about the types of known ones, about names that differ from a
// known one only in case, duplicate names, invalid UTF-8 and nesting.
// Errors are EINVALID.
func decodeObject(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return memory.Errorf(memory.EINVALID, "request body is empty; a JSON object is required")
	}
	if trimmed[0] != '{' {
		return memory.Errorf(memory.EINVALID, "request body must be a JSON object")
	}
	if err := proxy.UnmarshalLenient(trimmed, v); err != nil {
		return memory.Errorf(memory.EINVALID, "malformed JSON: %v", err)
	}
	return nil
}

// unmarshalPart decodes a part of a body that decodeObject kept raw
// (messages, their content) by the same rules.
func unmarshalPart(raw []byte, v any) error {
	return proxy.UnmarshalLenient(raw, v)
}

// jsonProblem words an encoding/json (v1) error; only filters, already
// checked as part of their body, are still decoded with it.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonTypeName(typ.Type.Kind().String()), typ.Value)
		}
		return fmt.Sprintf("expected %s, not %s", jsonTypeName(typ.Type.Kind().String()), typ.Value)
	}
	return err.Error()
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "float64", "int":
		return "a number"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return kind
}

// intParam validates an optional whole number within [lo, hi].
func intParam(name string, v *float64, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	f := *v
	if math.IsNaN(f) || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, memory.Errorf(memory.EINVALID, "%s must be a whole number from %d to %d", name, lo, hi)
	}
	return int(f), nil
}

// queryInt reads an optional whole-number query parameter.
func queryInt(r *http.Request, name string) (*float64, error) {
	s := strings.TrimSpace(r.URL.Query().Get(name))
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, memory.Errorf(memory.EINVALID, "query parameter %s must be a whole number, not %q", name, s)
	}
	f := float64(n)
	return &f, nil
}
