package mem0

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
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

func entityCond(field string) condFunc {
	get := entityOf[field]
	return func(op string, arg any) (func(*memory.Record) bool, error) {
		if op == "*" {
			return func(r *memory.Record) bool { return get(r) != "" }, nil
		}
		switch op {
		case "in", "nin":
			set, err := stringSet(arg)
			if err != nil {
				return nil, err
			}
			want := op == "in"
			return func(r *memory.Record) bool { return set[get(r)] == want }, nil
		}
		s, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("%s needs a string, not %s", op, describe(arg))
		}
		switch op {
		case "eq":
			return func(r *memory.Record) bool { return get(r) == s }, nil
		case "ne":
			return func(r *memory.Record) bool { return get(r) != s }, nil
		case "contains":
			return func(r *memory.Record) bool { return strings.Contains(get(r), s) }, nil
		case "icontains":
			ls := strings.ToLower(s)
			return func(r *memory.Record) bool { return strings.Contains(strings.ToLower(get(r)), ls) }, nil
		}
		return nil, fmt.Errorf("operator %q does not apply to an id", op)
	}
}

// timeCond compares a record time with a date (YYYY-MM-DD, a whole day),
// an RFC 3339 time or Unix seconds.
func timeCond(get func(*memory.Record) time.Time) condFunc {
	return func(op string, arg any) (func(*memory.Record) bool, error) {
		if op == "*" {
			return func(*memory.Record) bool { return true }, nil
		}
		from, to, err := timeRange(arg)
		if err != nil {
			return nil, err
		}
		cmp := map[string]func(t time.Time) bool{
			"eq":  func(t time.Time) bool { return !t.Before(from) && t.Before(to) },
			"ne":  func(t time.Time) bool { return t.Before(from) || !t.Before(to) },
			"gte": func(t time.Time) bool { return !t.Before(from) },
			"gt":  func(t time.Time) bool { return !t.Before(to) },
			"lte": func(t time.Time) bool { return t.Before(to) },
			"lt":  func(t time.Time) bool { return t.Before(from) },
		}[op]
		if cmp == nil {
			return nil, fmt.Errorf("operator %q does not apply to a time", op)
		}
		return func(r *memory.Record) bool { return cmp(get(r)) }, nil
	}
}

// timeRange reads a time operand as the half-open interval it names.
func timeRange(arg any) (from, to time.Time, err error) {
	switch v := arg.(type) {
	case float64:
		t := time.Unix(int64(v), 0).UTC()
		return t, t.Add(time.Second), nil
	case string:
		s := strings.TrimSpace(v)
		if d, err := time.Parse(time.DateOnly, s); err == nil {
			return d, d.AddDate(0, 0, 1), nil
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t, t.Add(time.Nanosecond), nil
			}
		}
		return from, to, fmt.Errorf("%q is not a date (YYYY-MM-DD) or an RFC 3339 time", s)
	}
	return from, to, fmt.Errorf("a time must be a date string or Unix seconds, not %s", describe(arg))
}

// categoriesCond matches the memory's categories (memgate: its layer).
func categoriesCond(op string, arg any) (func(*memory.Record) bool, error) {
	cats := func(r *memory.Record) []string { return []string{strings.ToLower(string(r.Layer))} }
	anyCat := func(pred func(string) bool) func(*memory.Record) bool {
		return func(r *memory.Record) bool {
			for _, c := range cats(r) {
				if pred(c) {
					return true
				}
			}
			return false
		}
	}
	switch op {
	case "*":
		return func(*memory.Record) bool { return true }, nil
	case "in", "nin":
		set, err := stringSet(arg)
		if err != nil {
			return nil, err
		}
		lower := map[string]bool{}
		for k := range set {
			lower[strings.ToLower(k)] = true
		}
		in := anyCat(func(c string) bool { return lower[c] })
		if op == "nin" {
			return func(r *memory.Record) bool { return !in(r) }, nil
		}
		return in, nil
	}
	s, ok := arg.(string)
	if !ok {
		return nil, fmt.Errorf("%s needs a string, not %s", op, describe(arg))
	}
	s = strings.ToLower(s)
	switch op {
	case "eq":
		return anyCat(func(c string) bool { return c == s }), nil
	case "ne":
		eq := anyCat(func(c string) bool { return c == s })
		return func(r *memory.Record) bool { return !eq(r) }, nil
	case "contains", "icontains":
		return anyCat(func(c string) bool { return strings.Contains(c, s) }), nil
	}
	return nil, fmt.Errorf("operator %q does not apply to categories", op)
}

// textCond matches the memory's text.
func textCond(op string, arg any) (func(*memory.Record) bool, error) {
	if op == "*" {
		return func(*memory.Record) bool { return true }, nil
	}
	if op == "in" || op == "nin" {
		set, err := stringSet(arg)
		if err != nil {
			return nil, err
		}
		want := op == "in"
		return func(r *memory.Record) bool { return set[r.Summary] == want }, nil
	}
	s, ok := arg.(string)
	if !ok {
		return nil, fmt.Errorf("%s needs a string, not %s", op, describe(arg))
	}
	ls := strings.ToLower(s)
	switch op {
	case "eq":
		// A bare keywords string is a case-insensitive search, as in Mem0.
		return func(r *memory.Record) bool { return strings.Contains(strings.ToLower(r.Summary), ls) }, nil
	case "contains":
		return func(r *memory.Record) bool { return strings.Contains(r.Summary, s) }, nil
	case "icontains":
		return func(r *memory.Record) bool { return strings.Contains(strings.ToLower(r.Summary), ls) }, nil
	case "ne":
		return func(r *memory.Record) bool { return r.Summary != s }, nil
	}
	return nil, fmt.Errorf("operator %q does not apply to keywords", op)
}

// metadataCond matches one metadata field of the memory.
func metadataCond(key string) condFunc {
	return func(op string, arg any) (func(*memory.Record) bool, error) {
		get := func(r *memory.Record) (any, bool) {
			v, ok := r.Metadata[key]
			return v, ok && v != nil
		}
		switch op {
		case "*":
			return func(r *memory.Record) bool { _, ok := get(r); return ok }, nil
		case "eq":
			return func(r *memory.Record) bool { v, _ := get(r); return reflect.DeepEqual(v, arg) }, nil
		case "ne":
			return func(r *memory.Record) bool { v, _ := get(r); return !reflect.DeepEqual(v, arg) }, nil
		case "in", "nin":
			items, ok := arg.([]any)
			if !ok {
				return nil, fmt.Errorf("%s needs an array, not %s", op, describe(arg))
			}
			want := op == "in"
			return func(r *memory.Record) bool {
				v, _ := get(r)
				for _, it := range items {
					if reflect.DeepEqual(v, it) {
						return want
					}
				}
				return !want
			}, nil
		case "contains", "icontains":
			s, ok := arg.(string)
			if !ok {
				return nil, fmt.Errorf("%s needs a string, not %s", op, describe(arg))
			}
			fold := op == "icontains"
			return func(r *memory.Record) bool { v, _ := get(r); return containsValue(v, s, fold) }, nil
		case "gt", "gte", "lt", "lte":
			switch arg.(type) {
			case float64, string:
			default:
				return nil, fmt.Errorf("%s needs a number or a string, not %s", op, describe(arg))
			}
			return func(r *memory.Record) bool {
				v, _ := get(r)
				c, ok := compare(v, arg)
				if !ok {
					return false
				}
				return map[string]bool{"gt": c > 0, "gte": c >= 0, "lt": c < 0, "lte": c <= 0}[op]
			}, nil
		}
		return nil, fmt.Errorf("unknown operator %q", op)
	}
}

func containsValue(v any, s string, fold bool) bool {
	has := func(x string) bool {
		if fold {
			return strings.Contains(strings.ToLower(x), strings.ToLower(s))
		}
		return strings.Contains(x, s)
	}
	switch t := v.(type) {
	case string:
		return has(t)
	case []any:
		for _, it := range t {
			if str, ok := it.(string); ok && has(str) {
				return true
			}
		}
	}
	return false
}

// compare orders two numbers or two strings.
func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}

func stringSet(arg any) (map[string]bool, error) {
	items, ok := arg.([]any)
	if !ok {
		return nil, fmt.Errorf("in needs an array of strings, not %s", describe(arg))
	}
	set := make(map[string]bool, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("in needs an array of strings, not one holding %s", describe(it))
		}
		set[s] = true
	}
	return set, nil
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
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
