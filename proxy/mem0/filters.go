package mem0

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
)

// filter is a compiled Mem0 "filters" document: AND / OR / NOT over field
// conditions on the entity ids (user_id, agent_id, app_id, run_id),
// created_at / updated_at, categories, keywords and metadata, with the
// operators in, nin, eq, ne, gt, gte, lt, lte, contains, icontains and the
// "*" wildcard. Keys may be snake_case or camelCase (the JS SDK sends
// filters as written).
type filter struct {
	kind  filterKind
	kids  []*filter
	test  func(*memory.Record) bool
	field string // a leaf's canonical field
	pins  bool   // a leaf that requires the entity field to have a value
	eq    string // a leaf's value when it is an equality on an entity id
}

type filterKind int

const (
	kindAnd filterKind = iota
	kindOr
	kindNot
	kindLeaf
)

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

var entityOf = map[string]func(*memory.Record) string{
	"user_id":  func(r *memory.Record) string { return r.Scope.UserID },
	"agent_id": func(r *memory.Record) string { return r.Scope.AgentID },
	"app_id":   func(r *memory.Record) string { return r.Scope.AppID },
	"run_id":   func(r *memory.Record) string { return r.Scope.RunID },
}

var operators = map[string]bool{"in": true, "nin": true, "eq": true, "ne": true, "gt": true, "gte": true,
	"lt": true, "lte": true, "contains": true, "icontains": true, "*": true}

func all(kids ...*filter) *filter { return &filter{kind: kindAnd, kids: kids} }

// match reports whether a record passes the filter.
func (f *filter) match(r *memory.Record) bool {
	switch f.kind {
	case kindAnd:
		for _, k := range f.kids {
			if !k.match(r) {
				return false
			}
		}
		return true
	case kindOr:
		for _, k := range f.kids {
			if k.match(r) {
				return true
			}
		}
		return len(f.kids) == 0
	case kindNot:
		return !all(f.kids...).match(r)
	}
	return f.test(r)
}

// scoped reports whether every record the filter lets through has an
// entity id pinned by it: Mem0 refuses unscoped reads and so does memgate.
func (f *filter) scoped() bool {
	switch f.kind {
	case kindAnd:
		for _, k := range f.kids {
			if k.scoped() {
				return true
			}
		}
		return false
	case kindOr:
		for _, k := range f.kids {
			if !k.scoped() {
				return false
			}
		}
		return len(f.kids) > 0
	case kindNot:
		return false
	}
	return f.pins
}

// indexFields are the fields a leaf tests that the index of active records
// holds (memory.ActiveEntry: scope, layer, summary).
var indexFields = map[string]bool{"user_id": true, "agent_id": true, "app_id": true, "run_id": true,
	"categories": true, "keywords": true}

// indexable reports whether the filter tests only fields the index of
// active records holds, so it can be tested without loading records.
func (f *filter) indexable() bool {
	if f.kind == kindLeaf {
		return indexFields[f.field]
	}
	for _, k := range f.kids {
		if !k.indexable() {
			return false
		}
	}
	return true
}

// scope returns the entity ids every match must have (from equalities in
// the top-level conjunction), for the governor's list to filter on first.
func (f *filter) scope() memory.Scope {
	var s memory.Scope
	var walk func(*filter)
	walk = func(n *filter) {
		switch n.kind {
		case kindAnd:
			for _, k := range n.kids {
				walk(k)
			}
		case kindLeaf:
			if n.eq == "" {
				return
			}
			switch n.field {
			case "user_id":
				s.UserID = n.eq
			case "agent_id":
				s.AgentID = n.eq
			case "app_id":
				s.AppID = n.eq
			case "run_id":
				s.RunID = n.eq
			}
		}
	}
	walk(f)
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
		return nil, fmt.Errorf("expected an object, not %s", describe(v))
	}
	out := all()
	for _, k := range sortedKeys(obj) {
		if err := p.count(); err != nil {
			return nil, err
		}
		val := obj[k]
		switch strings.ToUpper(k) {
		case "AND", "OR", "NOT":
			kids, err := p.list(k, val, depth)
			if err != nil {
				return nil, err
			}
			kind := map[string]filterKind{"AND": kindAnd, "OR": kindOr, "NOT": kindNot}[strings.ToUpper(k)]
			out.kids = append(out.kids, &filter{kind: kind, kids: kids})
			continue
		}
		leaves, err := p.field(k, val, depth)
		if err != nil {
			return nil, err
		}
		out.kids = append(out.kids, leaves...)
	}
	return out, nil
}

// list compiles the operand of AND / OR / NOT: an array of objects (an
// object is read as a one-element array).
func (p *filterParser) list(op string, v any, depth int) ([]*filter, error) {
	items, ok := v.([]any)
	if !ok {
		if _, isObj := v.(map[string]any); !isObj {
			return nil, fmt.Errorf("%s must be an array of filter objects, not %s", op, describe(v))
		}
		items = []any{v}
	}
	var out []*filter
	for _, it := range items {
		f, err := p.object(it, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// field compiles the conditions on one field.
func (p *filterParser) field(key string, v any, depth int) ([]*filter, error) {
	if ent, ok := entityFields[key]; ok {
		return p.conditions(ent, v, entityCond(ent))
	}
	switch key {
	case "created_at", "createdAt":
		return p.conditions("created_at", v, timeCond(func(r *memory.Record) time.Time { return r.CreatedAt }))
	case "updated_at", "updatedAt":
		return p.conditions("updated_at", v, timeCond(updatedAt))
	case "categories", "category":
		return p.conditions("categories", v, categoriesCond)
	case "keywords", "memory", "text":
		return p.conditions("keywords", v, textCond)
	case "metadata":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("metadata must be an object, not %s", describe(v))
		}
		var out []*filter
		for _, mk := range sortedKeys(obj) {
			leaves, err := p.conditions("metadata."+mk, obj[mk], metadataCond(mk))
			if err != nil {
				return nil, err
			}
			out = append(out, leaves...)
		}
		return out, nil
	}
	// Any other key filters on a metadata field of that name.
	return p.conditions("metadata."+key, v, metadataCond(key))
}

// condFunc compiles one operator and its operand on a field.
type condFunc func(op string, arg any) (func(*memory.Record) bool, error)

// conditions compiles a field's value: a bare value (equality, or "*" for
// "has a value"), or an object of operators, all of which must hold.
func (p *filterParser) conditions(field string, v any, cf condFunc) ([]*filter, error) {
	if v == nil {
		return nil, nil // a null condition constrains nothing
	}
	ops, isObj := v.(map[string]any)
	if !isObj || !allOperators(ops) {
		op := "eq"
		if s, ok := v.(string); ok && s == "*" {
			op = "*"
		}
		leaf, err := p.leaf(field, op, v, cf)
		if err != nil {
			return nil, err
		}
		return []*filter{leaf}, nil
	}
	var out []*filter
	for _, op := range sortedKeys(ops) {
		leaf, err := p.leaf(field, op, ops[op], cf)
		if err != nil {
			return nil, err
		}
		out = append(out, leaf)
	}
	return out, nil
}

func (p *filterParser) leaf(field, op string, arg any, cf condFunc) (*filter, error) {
	if err := p.count(); err != nil {
		return nil, err
	}
	test, err := cf(op, arg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	f := &filter{kind: kindLeaf, test: test, field: field}
	if _, isEntity := entityOf[field]; isEntity {
		switch op {
		case "eq":
			f.pins, f.eq = true, arg.(string)
		case "in", "*":
			f.pins = true
		}
	}
	return f, nil
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
	out := all()
	for field, v := range map[string]string{"user_id": s.UserID, "agent_id": s.AgentID, "app_id": s.AppID, "run_id": s.RunID} {
		if v == "" {
			continue
		}
		op := "eq"
		if v == "*" {
			op = "*"
		}
		test, _ := entityCond(field)(op, v)
		f := &filter{kind: kindLeaf, test: test, field: field, pins: true}
		if op == "eq" {
			f.eq = v
		}
		out.kids = append(out.kids, f)
	}
	return out
}
