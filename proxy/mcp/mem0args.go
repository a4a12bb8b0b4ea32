package mcp

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/memgate/memgate/memory"
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
	Query   string         `json:"query" jsonschema:"words to look for in memories"`
	Filters map[string]any `json:"filters,omitempty" jsonschema:"Mem0 filters on user_id, agent_id, app_id, run_id: {\"user_id\": \"alice\"} or {\"AND\": [{\"user_id\": \"alice\"}, {\"agent_id\": \"a1\"}]}"`
	Limit   int            `json:"limit,omitempty" jsonschema:"maximum number of results (default 10, at most 100)"`
	scopeArgs
	EnableGraph bool `json:"enable_graph,omitempty" jsonschema:"accepted for compatibility with Mem0"`
}

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

const (
	defaultSearchLimit = 10
	maxSearchLimit     = 100
	maxMessages        = 100
)

// scopeKeys are the filter keys memgate keeps on a record as its scope.
var scopeKeys = []string{"user_id", "agent_id", "app_id", "run_id"}

// parseFilters reads Mem0 filters into a scope. It understands equality on
// the entity ids, flat or under "AND", and "*" (any); anything else is
// refused rather than ignored, since ignoring a filter would widen a read.
func parseFilters(f map[string]any) (memory.Scope, error) {
	var sc memory.Scope
	set := map[string]string{}
	if err := collectFilters(f, set, 0); err != nil {
		return sc, err
	}
	sc.UserID, sc.AgentID, sc.AppID, sc.RunID = set["user_id"], set["agent_id"], set["app_id"], set["run_id"]
	return sc, nil
}

func collectFilters(f map[string]any, set map[string]string, depth int) error {
	if depth > 8 {
		return argError("filters nest too deeply")
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys) // stable error messages
	for _, k := range keys {
		v := f[k]
		switch {
		case k == "AND":
			list, ok := v.([]any)
			if !ok {
				return argError("filters.AND must be a list of filters")
			}
			for _, item := range list {
				sub, ok := item.(map[string]any)
				if !ok {
					return argError("filters.AND must be a list of filters")
				}
				if err := collectFilters(sub, set, depth+1); err != nil {
					return err
				}
			}
		case isScopeKey(k):
			s, ok := v.(string)
			if !ok {
				return argError("filter %s must be a string (memgate filters on equality only)", k)
			}
			if s == "*" {
				continue
			}
			if err := checkName("filters."+k, s); err != nil {
				return err
			}
			if old, dup := set[k]; dup && old != s {
				return argError("filters name two different %s values (%q, %q); no memory has both", k, old, s)
			}
			set[k] = s
		default:
			return argError("filter %q is not supported (memgate filters on user_id, agent_id, app_id and run_id, optionally under AND)", k)
		}
	}
	return nil
}

func isScopeKey(k string) bool {
	for _, s := range scopeKeys {
		if k == s {
			return true
		}
	}
	return false
}

// mergeScope combines the top-level entity ids with those from filters;
// naming the same id twice with different values is an error.
func mergeScope(a, b memory.Scope) (memory.Scope, error) {
	out := a
	for _, p := range []struct {
		name     string
		dst      *string
		from, to string
	}{{"user_id", &out.UserID, a.UserID, b.UserID}, {"agent_id", &out.AgentID, a.AgentID, b.AgentID},
		{"app_id", &out.AppID, a.AppID, b.AppID}, {"run_id", &out.RunID, a.RunID, b.RunID}} {
		if p.to == "" {
			continue
		}
		if p.from != "" && p.from != p.to {
			return out, argError("%s is given as %q and, in filters, as %q", p.name, p.from, p.to)
		}
		*p.dst = p.to
	}
	return out, nil
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

func (a searchMemoriesArgs) limit() (int, error) {
	switch {
	case a.Limit < 0:
		return 0, argError("limit must not be negative")
	case a.Limit == 0:
		return defaultSearchLimit, nil
	case a.Limit > maxSearchLimit:
		return maxSearchLimit, nil
	}
	return a.Limit, nil
}

// queryWords splits a search query into lowercase words, dropping
// punctuation, so "Alice's tea?" finds "alice likes tea".
func queryWords(q string) []string {
	fields := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '-' && r != '_'
	})
	seen := map[string]bool{}
	out := []string{}
	for _, f := range fields {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// score is the share of query words a memory's text contains (0 = none).
func score(text string, words []string) float64 {
	if len(words) == 0 {
		return 1
	}
	t := strings.ToLower(text)
	n := 0
	for _, w := range words {
		if strings.Contains(t, w) {
			n++
		}
	}
	return float64(n) / float64(len(words))
}
