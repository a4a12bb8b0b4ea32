package relate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/facts"
	"github.com/memgate/memgate/internal/clip"
	"github.com/memgate/memgate/llmapi"
)

// Chat asks an OpenAI-compatible chat-completions endpoint how a fact
// relates to memories. It is safe for concurrent use.
type Chat struct {
	url string
	// display is url without its query, for errors.
	display string
	model   string
	apiKey  string
	timeout time.Duration
	client  *http.Client
}

var _ facts.Relater = (*Chat)(nil)

// Options configure a Chat.
type Options struct {
	// URL is the endpoint: a base URL (".../v1") to which
	// "/chat/completions" is appended, or the full chat-completions URL.
	URL     string
	Model   string        // default "gpt-4o-mini"
	APIKey  string        // sent as a bearer token when set
	Timeout time.Duration // per question; default DefaultTimeout
	Client  *http.Client  // default: a client without its own timeout
	// KeyVar names the setting that carries the key, for the error of a
	// URL with credentials (default "the API key setting").
	KeyVar string
}

// DefaultTimeout bounds one question unless Options say otherwise. The
// governor asks while it holds the subject's fact lock, so the subject's
// other free-text writes wait as long.
const DefaultTimeout = 10 * time.Second

// Bounds of what is sent and read.
const (
	maxAnswerBytes = 256 << 10
	maxFactBytes   = 4 << 10
	maxMemoryBytes = 2 << 10
)

// New returns a Chat for an OpenAI-compatible endpoint.
func New(o Options) (*Chat, error) {
	keyVar := o.KeyVar
	if keyVar == "" {
		keyVar = "the API key setting"
	}
	ep, err := llmapi.ParseEndpoint(o.URL, "/chat/completions", keyVar)
	if err != nil {
		return nil, fmt.Errorf("relate: %w", err)
	}
	c := &Chat{url: ep.URL, display: ep.Display, model: o.Model, apiKey: o.APIKey, timeout: o.Timeout, client: o.Client}
	if c.model == "" {
		c.model = "gpt-4o-mini"
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.client == nil {
		c.client = &http.Client{}
	}
	return c, nil
}

// Endpoint is the endpoint's URL without its query, for logs.
func (c *Chat) Endpoint() string { return c.display }

// prompt is memgate's instruction to the model (Mem0's update step, in
// memgate's words).
const prompt = `You keep an assistant's long-term memory. You are shown the memories it holds that may be about the same thing as one new fact, each with an id and a relevance score, and the new fact.
Decide what the new fact is to them, and answer with one entry per memory it concerns:
- NONE: the memory already states the new fact (the same information in any words); use that memory's id.
- UPDATE: the new fact gives a new value of what the memory states (a changed preference, place, status, person, number, date...); use that memory's id and put the new fact in "text" and the memory in "old_memory".
- DELETE: the new fact says the memory is no longer true; use that memory's id.
- ADD: the new fact is about something none of the memories states (another attribute, person, object or context); use the id "new".
Two facts about different things are never one, however alike their words: "Alice's manager is Tom" and "Alice manages Tom", or a preference on trains and one on flights, are different facts.
Answer with JSON only: {"memory": [{"id": "...", "text": "...", "event": "ADD|UPDATE|DELETE|NONE", "old_memory": "..."}]}`

type shown struct {
	ID    string  `json:"id"`
	Text  string  `json:"text"`
	Score float64 `json:"score"`
}

type question struct {
	Memory  []shown `json:"memory"`
	NewFact string  `json:"new_fact"`
}

// Relate asks the model how fact relates to mems (best ranked first).
func (c *Chat) Relate(ctx context.Context, fact string, mems []facts.Memory) (facts.Verdict, error) {
	q := question{Memory: make([]shown, len(mems)), NewFact: clip.Bytes(fact, maxFactBytes)}
	for i, m := range mems {
		q.Memory[i] = shown{ID: strconv.Itoa(i), Text: clip.Bytes(m.Text, maxMemoryBytes),
			Score: float64(int(m.Score*100)) / 100}
	}
	user, err := json.Marshal(q)
	if err != nil {
		return facts.Verdict{}, fmt.Errorf("relate: encode the question: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ans, err := llmapi.Complete(ctx, c.client, llmapi.Request{URL: c.url, APIKey: c.apiKey, Model: c.model,
		System: prompt, User: string(user), MaxBytes: maxAnswerBytes})
	if err != nil {
		return facts.Verdict{}, fmt.Errorf("relate: %w", llmapi.Explain(err, c.display, maxAnswerBytes, c.timeout))
	}
	if ans.Refusal != "" {
		return facts.Verdict{}, fmt.Errorf("relate: the model of %s declined", c.display)
	}
	v, err := parseVerdict(ans.Content, len(mems))
	if err != nil {
		return facts.Verdict{}, fmt.Errorf("relate: the answer of %s: %w", c.display, err)
	}
	return v, nil
}

// id is an entry's id: a string, or a number some models write instead.
type id string

func (i *id) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*i = id(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New("an id is neither a string nor a number")
	}
	*i = id(n.String())
	return nil
}

type entry struct {
	ID    id     `json:"id"`
	Event string `json:"event"`
}

// parseVerdict reads the model's answer about n memories shown (see the
// package documentation). Errors never repeat the answer: it may repeat
// the memories.
func parseVerdict(content string, n int) (facts.Verdict, error) {
	var a struct {
		Memory []entry `json:"memory"`
	}
	if err := json.Unmarshal([]byte(unfence(content)), &a); err != nil {
		return facts.Verdict{}, fmt.Errorf("not {\"memory\": [...]} (%d bytes of something else)", len(content))
	}
	if len(a.Memory) == 0 {
		return facts.Verdict{}, errors.New("no entry")
	}
	// The best of each event: the lowest index named.
	best := map[facts.Event]int{}
	for _, e := range a.Memory {
		ev := facts.Event(strings.ToUpper(strings.TrimSpace(e.Event)))
		switch ev {
		case facts.EventAdd:
			best[ev] = -1
			continue
		case facts.EventUpdate, facts.EventDelete, facts.EventNone:
		default:
			return facts.Verdict{}, fmt.Errorf("the unknown event %.20q", e.Event)
		}
		i, err := strconv.Atoi(strings.TrimSpace(string(e.ID)))
		if err != nil || i < 0 || i >= n || strconv.Itoa(i) != strings.TrimSpace(string(e.ID)) {
			return facts.Verdict{}, fmt.Errorf("%s names the id %.20q, not one of the %d memories shown", ev, e.ID, n)
		}
		if b, ok := best[ev]; !ok || i < b {
			best[ev] = i
		}
	}
	for _, ev := range []facts.Event{facts.EventUpdate, facts.EventDelete, facts.EventAdd, facts.EventNone} {
		if i, ok := best[ev]; ok {
			return facts.Verdict{Event: ev, Memory: i}, nil
		}
	}
	return facts.Verdict{}, errors.New("no entry") // unreachable: every entry has an event
}

// unfence drops a Markdown code fence around s, if any.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	if nl := strings.IndexByte(s, '\n'); nl >= 0 {
		s = s[nl+1:] // drop the fence's language tag
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
}
