package search

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
)

// Filter is the one filter AST every dialect compiles to: the Mem0 JSON
// filters (proxy/mem0 parses them), the native list query (FromList) and
// the MCP tools (through proxy/mem0). It is AND / OR / NOT over leaves, each
// one operator on one field of a record:
//
//	user_id agent_id app_id run_id   the scope's entity ids
//	subject_id layer                 the record's subject and layer
//	categories                       Mem0 categories: the layer, in lower case
//	keywords                         the summary
//	created_at updated_at            times (updated_at: activation, else creation)
//	metadata.<key>                   one metadata field
//
// with the operators eq, ne, in, nin, gt, gte, lt, lte, contains, icontains
// and "*" (has a value). Leaf says which apply to which field. A Filter
// is immutable once built and safe for concurrent use.
type Filter struct {
	Kind  Kind
	Kids  []*Filter // And, Or, Not
	Field string    // Leaf: the canonical field
	Op    string    // Leaf: the operator
	Arg   any       // Leaf: the operand, as encoding/json decodes it
	test  func(*memory.Record) bool
	// weight and textWeight are the leaf's cost per record (Filter.cost);
	// zero for leaves built by Eq, which cost one.
	weight, textWeight int64
}

// Kind is what a Filter node is.
type Kind int

const (
	KindAnd  Kind = iota // every kid holds (true with none)
	KindOr               // some kid holds (true with none)
	KindNot              // not every kid holds
	KindLeaf             // Op holds on Field
)

// And returns the conjunction of kids.
func And(kids ...*Filter) *Filter { return &Filter{Kind: KindAnd, Kids: kids} }

// Or returns the disjunction of kids.
func Or(kids ...*Filter) *Filter { return &Filter{Kind: KindOr, Kids: kids} }

// Not returns the negation of the conjunction of kids.
func Not(kids ...*Filter) *Filter { return &Filter{Kind: KindNot, Kids: kids} }

// Entity fields: the ids of a record's scope.
var entityOf = map[string]func(*memory.Record) string{
	"user_id":  func(r *memory.Record) string { return r.Scope.UserID },
	"agent_id": func(r *memory.Record) string { return r.Scope.AgentID },
	"app_id":   func(r *memory.Record) string { return r.Scope.AppID },
	"run_id":   func(r *memory.Record) string { return r.Scope.RunID },
}

// idOf gives the id fields, the entity ids and the subject and layer.
var idOf = map[string]func(*memory.Record) string{
	"user_id":    entityOf["user_id"],
	"agent_id":   entityOf["agent_id"],
	"app_id":     entityOf["app_id"],
	"run_id":     entityOf["run_id"],
	"subject_id": func(r *memory.Record) string { return r.SubjectID },
	"layer":      func(r *memory.Record) string { return string(r.Layer) },
}

// Leaf compiles one operator on one field (see Filter). Errors name the
// field and say what is wrong, for a client to read.
func Leaf(field, op string, arg any) (*Filter, error) {
	var cf condFunc
	switch {
	case idOf[field] != nil:
		cf = idCond(idOf[field])
	case field == "created_at":
		cf = timeCond(func(r *memory.Record) time.Time { return r.CreatedAt })
	case field == "updated_at":
		cf = timeCond(UpdatedAt)
	case field == "categories":
		cf = categoriesCond
	case field == "keywords":
		cf = textCond
	case strings.HasPrefix(field, "metadata."):
		cf = metadataCond(strings.TrimPrefix(field, "metadata."))
	default:
		return nil, fmt.Errorf("unknown field %q", field)
	}
	if err := checkArg(op, arg); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if idOf[field] != nil {
		if err := checkIDArg(field, arg); err != nil {
			return nil, err
		}
	}
	test, err := cf(op, arg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	leaf := &Filter{Kind: KindLeaf, Field: field, Op: op, Arg: arg, test: test, weight: 1}
	// A condition that searches text costs the operand it looks for and
	// the summary it reads (metadata values are bounded by the record).
	if s, ok := arg.(string); ok && (op == "contains" || op == "icontains" || field == "keywords") {
		leaf.weight += int64(len(s) / textUnit)
	}
	if field == "keywords" && op != "*" {
		leaf.textWeight = 1
	}
	if items, ok := arg.([]any); ok && strings.HasPrefix(field, "metadata.") {
		for _, it := range items {
			if !isScalar(it) {
				leaf.weight++ // compared one by one
			}
		}
	}
	return leaf, nil
}

// checkArg bounds an operand: its size, and the values of an in or nin.
func checkArg(op string, arg any) error {
	switch a := arg.(type) {
	case string:
		return checkOperand(a)
	case []any:
		if op == "in" || op == "nin" {
			return checkValues(a)
		}
	}
	if n := operandSize(arg, MaxOperandBytes); n > MaxOperandBytes+2 {
		return fmt.Errorf("an operand is more than %d bytes", MaxOperandBytes)
	}
	return nil
}

// Eq is the leaf field = id, for the id fields (entity ids, subject_id,
// layer), which accept any string.
func Eq(field, id string) *Filter {
	get := idOf[field]
	if get == nil {
		panic("search.Eq on " + field + ", not an id field")
	}
	return &Filter{Kind: KindLeaf, Field: field, Op: "eq", Arg: id, test: func(r *memory.Record) bool { return get(r) == id }}
}

// UpdatedAt is when a record last changed as readers see it: its
// activation, else its creation.
func UpdatedAt(r *memory.Record) time.Time {
	if !r.ActivatedAt.IsZero() {
		return r.ActivatedAt
	}
	return r.CreatedAt
}

// FromList compiles the native list query: each non-empty field must
// match, and every word of Query must appear in the summary, in any case.
// The subject is folded as writes fold it. Errors: EINVALID for an unknown
// layer.
func FromList(f memory.ListFilter) (*Filter, error) {
	if f.Layer != "" && !f.Layer.Valid() {
		return nil, memory.Errorf(memory.EINVALID, "unknown layer %q", f.Layer)
	}
	out := And()
	if f.SubjectID != "" {
		if id, err := memory.FoldID(f.SubjectID); err == nil {
			f.SubjectID = id // a look-alike in a read names the stored subject
		}
		out.Kids = append(out.Kids, Eq("subject_id", f.SubjectID))
	}
	if f.Layer != "" {
		out.Kids = append(out.Kids, Eq("layer", string(f.Layer)))
	}
	out.Kids = append(out.Kids, scopeFilter(f.Scope).Kids...)
	for _, w := range strings.Fields(strings.ToLower(f.Query)) {
		leaf, err := Leaf("keywords", "icontains", w)
		if err != nil {
			return nil, err
		}
		out.Kids = append(out.Kids, leaf)
	}
	return out, nil
}

// scopeFilter is the conjunction of equalities on s's non-empty ids.
func scopeFilter(s memory.Scope) *Filter {
	out := And()
	for _, p := range [...][2]string{{"user_id", s.UserID}, {"agent_id", s.AgentID}, {"app_id", s.AppID}, {"run_id", s.RunID}} {
		if p[1] != "" {
			out.Kids = append(out.Kids, Eq(p[0], p[1]))
		}
	}
	return out
}

// Match reports whether a record passes the filter.
func (f *Filter) Match(r *memory.Record) bool {
	switch f.Kind {
	case KindAnd:
		for _, k := range f.Kids {
			if !k.Match(r) {
				return false
			}
		}
		return true
	case KindOr:
		for _, k := range f.Kids {
			if k.Match(r) {
				return true
			}
		}
		return len(f.Kids) == 0
	case KindNot:
		return !And(f.Kids...).Match(r)
	}
	return f.test(r)
}

// Scoped reports whether every record the filter lets through has an
// entity id the filter pins (eq, in or "*" on an entity field): Mem0
// refuses unscoped reads.
func (f *Filter) Scoped() bool {
	switch f.Kind {
	case KindAnd:
		return slices.ContainsFunc(f.Kids, (*Filter).Scoped)
	case KindOr:
		return len(f.Kids) > 0 && !slices.ContainsFunc(f.Kids, func(k *Filter) bool { return !k.Scoped() })
	case KindNot:
		return false
	}
	return entityOf[f.Field] != nil && (f.Op == "eq" || f.Op == "in" || f.Op == "*")
}

// indexFields are the fields the index's entries hold (storeapi.ActiveEntry).
// Times are left out: entries written before the index held them have
// none.
var indexFields = map[string]bool{"user_id": true, "agent_id": true, "app_id": true, "run_id": true,
	"subject_id": true, "layer": true, "categories": true, "keywords": true}

// indexable reports whether the filter tests only fields the index holds,
// so entries can be tested without loading their records.
func (f *Filter) indexable() bool {
	if f.Kind == KindLeaf {
		return indexFields[f.Field]
	}
	return !slices.ContainsFunc(f.Kids, func(k *Filter) bool { return !k.indexable() })
}

// eqID returns a leaf's id when it is an equality on an id field.
func (f *Filter) eqID() (field, id string, ok bool) {
	if f.Kind != KindLeaf || f.Op != "eq" || idOf[f.Field] == nil {
		return "", "", false
	}
	id, ok = f.Arg.(string)
	return f.Field, id, ok
}

// Pinned returns the subject and entity ids every match must have, from
// the equalities of the top-level conjunction; ok is false when two of
// them disagree, so nothing can match.
func (f *Filter) Pinned() (subject string, scope memory.Scope, ok bool) {
	ok = true
	var walk func(*Filter)
	walk = func(n *Filter) {
		if n.Kind == KindAnd {
			for _, k := range n.Kids {
				walk(k)
			}
			return
		}
		field, id, isEq := n.eqID()
		if !isEq || id == "" {
			return // an equality with "" pins nothing: it passes records without that id
		}
		var at *string
		switch field {
		case "subject_id":
			at = &subject
		case "user_id":
			at = &scope.UserID
		case "agent_id":
			at = &scope.AgentID
		case "app_id":
			at = &scope.AppID
		case "run_id":
			at = &scope.RunID
		default:
			return
		}
		if *at != "" && *at != id {
			ok = false
		}
		*at = id
	}
	walk(f)
	return subject, scope, ok
}

// selectsPart reports whether f lets through exactly the entries of the
// part of key pk: a conjunction of equalities that each name pk's id. A
// search may then take the part as it is, untested.
func (f *Filter) selectsPart(pk string) bool {
	subject, scope := partSelection(pk)
	var walk func(*Filter) bool
	walk = func(n *Filter) bool {
		if n.Kind == KindAnd {
			return !slices.ContainsFunc(n.Kids, func(k *Filter) bool { return !walk(k) })
		}
		field, id, isEq := n.eqID()
		if !isEq {
			return false
		}
		switch field {
		case "subject_id":
			return subject != "" && id == subject
		case "user_id":
			return scope.UserID != "" && id == scope.UserID
		case "agent_id":
			return scope.AgentID != "" && id == scope.AgentID
		case "app_id":
			return scope.AppID != "" && id == scope.AppID
		case "run_id":
			return scope.RunID != "" && id == scope.RunID
		}
		return false
	}
	return walk(f)
}

// words returns the operands of the keyword conditions of the top-level
// conjunction that every match's lower-case summary contains.
func (f *Filter) words() []string {
	var out []string
	var walk func(*Filter)
	walk = func(n *Filter) {
		switch {
		case n.Kind == KindAnd:
			for _, k := range n.Kids {
				walk(k)
			}
		case n.Kind == KindLeaf && n.Field == "keywords" && (n.Op == "icontains" || n.Op == "eq"):
			if s, ok := n.Arg.(string); ok && s != "" {
				out = append(out, strings.ToLower(s))
			}
		}
	}
	walk(f)
	return out
}

// confine returns f confined to the tenant: ANDed with equalities on the
// ids it binds (rule 11).
func confine(f *Filter, t memory.Tenant) *Filter {
	if !t.Bound() {
		return f
	}
	return And(f, scopeFilter(memory.Scope{UserID: t.UserID, AgentID: t.AgentID, AppID: t.AppID}))
}
