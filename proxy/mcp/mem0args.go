package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy/mem0"
)

// Arguments of the Mem0-style tools, named as Mem0's own MCP server names
// them. Their schemas are inferred by the SDK from these types.

type mem0Message struct {
	Role    string `json:"role" jsonschema:"who said it: user, assistant or system"`
	Content string `json:"content" jsonschema:"what was said"`
}

type scopeArgs struct {
	UserID  string `json:"user_id,omitempty" jsonschema:"the user the memory belongs to"`
	AgentID string `json:"agent_id,omitempty" jsonschema:"the agent the memory belongs to"`
	AppID   string `json:"app_id,omitempty" jsonschema:"the app the memory belongs to"`
	RunID   string `json:"run_id,omitempty" jsonschema:"the run or session the memory belongs to"`
}

func (a scopeArgs) scope() memory.Scope {
	return memory.Scope{UserID: a.UserID, AgentID: a.AgentID, AppID: a.AppID, RunID: a.RunID}
}

type addMemoryArgs struct {
	Text     string        `json:"text" jsonschema:"plain sentence stating what to remember"`
	Messages []mem0Message `json:"messages,omitempty" jsonschema:"the conversation the memory comes from, kept as its evidence"`
	scopeArgs
	Metadata    map[string]any `json:"metadata,omitempty" jsonschema:"arbitrary JSON metadata kept with the memory"`
	EnableGraph bool           `json:"enable_graph,omitempty" jsonschema:"accepted for compatibility with Mem0; memgate keeps no separate graph store"`
}

type searchMemoriesArgs struct {
	Query     string      `json:"query" jsonschema:"words to look for in memories"`
	Filters   filtersJSON `json:"filters,omitempty" jsonschema:"Mem0 filters, e.g. {\"user_id\": \"alice\"} or {\"AND\": [{\"user_id\": \"alice\"}, {\"categories\": {\"in\": [\"preference\"]}}]}"`
	Limit     int         `json:"limit,omitempty" jsonschema:"maximum number of results (default 10, at most 1000)"`
	Threshold *float64    `json:"threshold,omitempty" jsonschema:"minimum relevance from 0 to 1 (default 0.1, Mem0's v3 search's)"`
	scopeArgs
	EnableGraph bool `json:"enable_graph,omitempty" jsonschema:"accepted for compatibility with Mem0"`
}

type getMemoriesArgs struct {
	Filters  filtersJSON `json:"filters,omitempty" jsonschema:"Mem0 filters, as search_memories takes them"`
	Page     int         `json:"page,omitempty" jsonschema:"the page, from 1 (default 1)"`
	PageSize int         `json:"page_size,omitempty" jsonschema:"memories per page (default 100, at most 200)"`
	scopeArgs
}

// memoryIDArgs name a memory by its id or the record id of one of its
// versions.
type memoryIDArgs struct {
	MemoryID string `json:"memory_id" jsonschema:"the memory's id"`
}

type updateMemoryArgs struct {
	MemoryID string `json:"memory_id" jsonschema:"the id of the memory to change"`
	Text     string `json:"text" jsonschema:"the memory's new text"`
}

type eventIDArgs struct {
	EventID string `json:"event_id" jsonschema:"the event id a write returned"`
}

// maxMessages bounds the conversation an add keeps as its evidence.
const maxMessages = 100

// filtersJSON is the Mem0 filters document as the Mem0 API reads it.
type filtersJSON map[string]any

func (f filtersJSON) raw() (json.RawMessage, error) {
	if f == nil {
		return nil, nil
	}
	b, err := json.Marshal(map[string]any(f))
	if err != nil {
		return nil, argError("filters: %v", err)
	}
	return b, nil
}

func (a addMemoryArgs) check() error {
	if len(a.Messages) > maxMessages {
		return argError("at most %d messages", maxMessages)
	}
	if strings.TrimSpace(a.Text) == "" && strings.TrimSpace(a.conversation()) == "" {
		return argError("text is required: the sentence to remember")
	}
	return a.scopeArgs.check()
}

func (a scopeArgs) check() error {
	for _, f := range []struct{ name, v string }{{"user_id", a.UserID}, {"agent_id", a.AgentID}, {"app_id", a.AppID}, {"run_id", a.RunID}} {
		if f.v == "" {
			continue
		}
		if err := checkName(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// conversation renders the messages as the write's evidence.
func (a addMemoryArgs) conversation() string {
	var b strings.Builder
	for _, m := range a.Messages {
		if strings.TrimSpace(m.Content) == "" {
			continue
		}
		role := m.Role
		if role == "" {
			role = "user"
		}
		fmt.Fprintf(&b, "%s: %s\n", role, m.Content)
	}
	return strings.TrimSpace(b.String())
}

// text is what to remember: the text, else what the user said.
// ConversationSource is the evidence source of an add_memory that came
// with messages: the default policy lists it among its context sources.
const ConversationSource = "mcp:conversation"

func (a addMemoryArgs) text() string {
	if t := strings.TrimSpace(a.Text); t != "" {
		return t
	}
	var parts []string
	for _, m := range a.Messages {
		if (m.Role == "" || m.Role == "user") && strings.TrimSpace(m.Content) != "" {
			parts = append(parts, strings.TrimSpace(m.Content))
		}
	}
	return strings.Join(parts, " ")
}

// limit is the number of results asked for (0: Mem0's default), at most
// mem0.MaxTopK.
func (a searchMemoriesArgs) limit() (int, error) {
	if a.Limit < 0 {
		return 0, argError("limit must not be negative")
	}
	return min(a.Limit, mem0.MaxTopK), nil
}
