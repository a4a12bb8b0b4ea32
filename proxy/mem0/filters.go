package mem0

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/search"
)

// filter is a compiled Mem0 "filters" document: AND / OR / NOT over field
// conditions on the entity ids (user_id, agent_id, app_id, run_id),
// created_at / updated_at, categories, keywords and metadata, with the
// operators in, nin, eq, ne, gt, gte, lt, lte, contains, icontains and the
// "*" wildcard. Keys may be snake_case or camelCase (the JS SDK sends
// filters as written). It wraps search's filter AST, which the search
// runs; this file only parses Mem0's JSON into it.
type filter struct{ ast *search.Filter }

// Bounds on a filters document, so a request cannot make matching costly.
const (
	maxFilterDepth = 16
	maxFilterNodes = 256
)

// entityFields maps every accepted spelling to the canonical entity field.
var entityFields = map[string]string{
	"user_id": "user_id", "userId": "user_id",
	"agent_id": "agent_id", "agentId": "agent_id",
	"app_id": "app_id", "appId": "app_id",
	"run_id": "run_id", "runId": "run_id", "session_id": "run_id", "sessionId": "run_id",
}

var operators = map[string]bool{"in": true, "nin": true, "eq": true, "ne": true, "gt": true, "gte": true,
	"lt": true, "lte": true, "contains": true, "icontains": true, "*": true}

// all is the conjunction of filters.
func all(kids ...*filter) *filter {
	and := search.And()
	for _, k := range kids {
		and.Kids = append(and.Kids, k.ast)
	}
	return &filter{and}
}

// match reports whether a record passes the filter.
func (f *filter) match(r *memory.Record) bool { return f.ast.Match(r) }

// scoped reports whether every record the filter lets through has an
// entity id pinned by it: Mem0 refuses unscoped reads and so does memgate.
func (f *filter) scoped() bool { return f.ast.Scoped() }

// scope returns the entity ids every match must have (from equalities in
// the top-level conjunction).
func (f *filter) scope() memory.Scope {
	_, s, _ := f.ast.Pinned()
	return s
}

// parseFilters compiles a filters document (absent or null: no condition).
func parseFilters(raw json.RawMessage) (*filter, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return all(), nil
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, memory.Errorf(memory.EINVALID, "filters: %s", jsonProblem(err))
	}
	p := &filterParser{}
	f, err := p.object(doc, 0)
	if err != nil {
		return nil, memory.Errorf(memory.EINVALID, "filters: %s", err.Error())
	}
	return f, nil
}

type filterParser struct{ nodes int }

func (p *filterParser) count() error {
	if p.nodes++; p.nodes > maxFilterNodes {
		return fmt.Errorf("more than %d conditions", maxFilterNodes)
	}
	return nil
}

// object compiles one filters object: its entries are ANDed.
func (p *filterParser) object(v any, depth int) (*filter, error) {
	if depth > maxFilterDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxFilterDepth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object, not %s", search.Describe(v))
	}
	out := search.And()
	for _, k := range sortedKeys(obj) {
		if err := p.count(); err != nil {
			return nil, err
		}
		val := obj[k]
		switch op := strings.ToUpper(k); op {
		case "AND", "OR", "NOT":
			kids, err := p.list(k, val, depth)
			if err != nil {
				return nil, err
			}
			out.Kids = append(out.Kids, map[string]func(...*search.Filter) *search.Filter{
				"AND": search.And, "OR": search.Or, "NOT": search.Not}[op](kids...))
			continue
		}
		leaves, err := p.field(k, val, depth)
		if err != nil {
			return nil, err
		}
		out.Kids = append(out.Kids, leaves...)
	}
	return &filter{out}, nil
}

// list compiles the operand of AND / OR / NOT: an array of objects (an
// object is read as a one-element array).
func (p *filterParser) list(op string, v any, depth int) ([]*search.Filter, error) {
	items, ok := v.([]any)
	if !ok {
		if _, isObj := v.(map[string]any); !isObj {
			return nil, fmt.Errorf("%s must be an array of filter objects, not %s", op, search.Describe(v))
		}
		items = []any{v}
	}
	var out []*search.Filter
	for _, it := range items {
		f, err := p.object(it, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, f.ast)
	}
	return out, nil
}

// field compiles the conditions on one field.
func (p *filterParser) field(key string, v any, depth int) ([]*search.Filter, error) {
	if ent, ok := entityFields[key]; ok {
		return p.conditions(ent, v)
	}
	switch key {
	case "created_at", "createdAt":
		return p.conditions("created_at", v)
	case "updated_at", "updatedAt":
		return p.conditions("updated_at", v)
	case "categories", "category":
		return p.conditions("categories", v)
	case "keywords", "memory", "text":
		return p.conditions("keywords", v)
	case "metadata":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("metadata must be an object, not %s", search.Describe(v))
		}
		var out []*search.Filter
		for _, mk := range sortedKeys(obj) {
			leaves, err := p.conditions("metadata."+mk, obj[mk])
			if err != nil {
				return nil, err
			}
			out = append(out, leaves...)
		}
		return out, nil
	}
	// Any other key filters on a metadata field of that name.
	return p.conditions("metadata."+key, v)
}

// conditions compiles a field's value: a bare value (equality, or "*" for
// "has a value"), or an object of operators, all of which must hold.
func (p *filterParser) conditions(field string, v any) ([]*search.Filter, error) {
	if v == nil {
		return nil, nil // a null condition constrains nothing
	}
	ops, isObj := v.(map[string]any)
	if !isObj || !allOperators(ops) {
		op := "eq"
		if s, ok := v.(string); ok && s == "*" {
			op = "*"
		}
		leaf, err := p.leaf(field, op, v)
		if err != nil {
			return nil, err
		}
		return []*search.Filter{leaf}, nil
	}
	var out []*search.Filter
	for _, op := range sortedKeys(ops) {
		leaf, err := p.leaf(field, op, ops[op])
		if err != nil {
			return nil, err
		}
		out = append(out, leaf)
	}
	return out, nil
}

func (p *filterParser) leaf(field, op string, arg any) (*search.Filter, error) {
	if err := p.count(); err != nil {
		return nil, err
	}
	return search.Leaf(field, op, arg)
}

func allOperators(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k := range m {
		if !operators[k] {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// entityFilter is the condition of entity ids given outside "filters" (at
// the top level of a body, or as query parameters): each non-empty one must
// match, "*" meaning "has a value".
func entityFilter(s memory.Scope) *filter {
	out := search.And()
	for _, p := range [...][2]string{{"user_id", s.UserID}, {"agent_id", s.AgentID}, {"app_id", s.AppID}, {"run_id", s.RunID}} {
		switch field, v := p[0], p[1]; v {
		case "":
		case "*":
			leaf, _ := search.Leaf(field, "*", v)
			out.Kids = append(out.Kids, leaf)
		default:
			out.Kids = append(out.Kids, search.Eq(field, v))
		}
	}
	return &filter{out}
}
