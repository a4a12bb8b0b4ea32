package policy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
)

// ErrMalformed marks a decision document that does not have the shape of
// memory.Decision.
var ErrMalformed = errors.New("malformed decision")

var (
	validRisks      = map[string]bool{string(memory.RiskLow): true, string(memory.RiskMedium): true, string(memory.RiskHigh): true}
	validActions    = map[string]bool{string(memory.ActionApply): true, string(memory.ActionReview): true, string(memory.ActionReject): true}
	validCategories = map[string]bool{memory.CategoryStrategy: true, memory.CategoryStateOverride: true, memory.CategoryInference: true, memory.CategoryPoisoning: true}
)

// decodeDecision reads the decision document straight from its AST value
// and checks it strictly: a policy that returns something else is broken,
// and the sidecar must fail closed rather than guess.
func decodeDecision(v ast.Value) (memory.Decision, error) {
	var d memory.Decision
	obj, ok := v.(ast.Object)
	if !ok {
		return d, fmt.Errorf("%w: want an object, got %s", ErrMalformed, ast.ValueName(v))
	}
	var err error
	var risk, action string
	if risk, err = enumField(obj, "risk", validRisks); err != nil {
		return d, err
	}
	if action, err = enumField(obj, "action", validActions); err != nil {
		return d, err
	}
	d.Risk, d.Action = memory.Risk(risk), memory.Action(action)
	if d.Categories, err = stringsField(obj, "categories", true); err != nil {
		return d, err
	}
	for _, c := range d.Categories {
		if !validCategories[c] {
			return d, fmt.Errorf("%w: unknown category %q (want strategy, state_override, inference or poisoning)", ErrMalformed, c)
		}
	}
	if d.Reasons, err = reasonsField(obj); err != nil {
		return d, err
	}
	if d.Affects, err = stringsField(obj, "affects", true); err != nil {
		return d, err
	}
	pl, err := slotFields(obj)
	if err != nil {
		return d, err
	}
	d.Layer, d.FactType, d.SubjectID, d.Value = pl.Layer, pl.FactType, pl.SubjectID, pl.Value
	if d.Shadow, err = shadowField(obj, d.Action); err != nil {
		return d, err
	}
	return d, nil
}

// actionRank orders actions by how much they hold a write back.
var actionRank = map[memory.Action]int{memory.ActionApply: 0, memory.ActionReview: 1, memory.ActionReject: 2}

// shadowField reads the optional shadow of a decision, {rules, action}:
// rules the policy's data shadows (per-rule mode) and the action of the
// rules that are not. It is kept only where it holds the write back less
// than action does; otherwise shadowing changed nothing.
func shadowField(obj ast.Object, action memory.Action) (*memory.Shadow, error) {
	t := obj.Get(keyTerm("shadow"))
	if t == nil || isNull(t.Value) {
		return nil, nil
	}
	sh, ok := t.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%w: shadow is %s, want {rules, action}", ErrMalformed, ast.ValueName(t.Value))
	}
	enforced, err := enumField(sh, "action", validActions)
	if err != nil {
		return nil, fmt.Errorf("shadow: %w", err)
	}
	rules, err := stringsField(sh, "rules", true)
	if err != nil {
		return nil, fmt.Errorf("shadow: %w", err)
	}
	if actionRank[memory.Action(enforced)] >= actionRank[action] || len(rules) == 0 {
		return nil, nil
	}
	return &memory.Shadow{Action: memory.Action(enforced), Rules: rules, By: memory.ShadowByRule}, nil
}

// decodePlacement reads the placement document: all of its fields are
// optional, and an undefined document places nothing.
func decodePlacement(v ast.Value) (memory.Placement, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return memory.Placement{}, fmt.Errorf("%w: placement is %s, want an object", ErrMalformed, ast.ValueName(v))
	}
	return slotFields(obj)
}

// slotFields reads layer, factType, subjectId and value, each optional.
func slotFields(obj ast.Object) (memory.Placement, error) {
	var pl memory.Placement
	layer, err := stringField(obj, "layer", false)
	if err != nil {
		return pl, err
	}
	pl.Layer = memory.Layer(layer)
	if pl.Layer != "" && !pl.Layer.Valid() {
		return pl, fmt.Errorf("%w: unknown layer %q", ErrMalformed, layer)
	}
	if pl.FactType, err = stringField(obj, "factType", false); err != nil {
		return pl, err
	}
	if pl.SubjectID, err = stringField(obj, "subjectId", false); err != nil {
		return pl, err
	}
	if t := obj.Get(keyTerm("value")); t != nil && !isNull(t.Value) {
		native, err := ast.JSON(t.Value)
		if err != nil {
			return pl, fmt.Errorf("%w: value: %v", ErrMalformed, err)
		}
		if pl.Value, err = json.Marshal(native); err != nil {
			return pl, fmt.Errorf("%w: value: %v", ErrMalformed, err)
		}
	}
	return pl, nil
}

func stringField(obj ast.Object, key string, required bool) (string, error) {
	t := obj.Get(keyTerm(key))
	if t == nil {
		if required {
			return "", fmt.Errorf("%w: %s is missing", ErrMalformed, key)
		}
		return "", nil
	}
	s, ok := t.Value.(ast.String)
	if !ok {
		return "", fmt.Errorf("%w: %s is %s, want a string", ErrMalformed, key, ast.ValueName(t.Value))
	}
	return string(s), nil
}

func enumField(obj ast.Object, key string, valid map[string]bool) (string, error) {
	s, err := stringField(obj, key, true)
	if err != nil {
		return "", err
	}
	if !valid[s] {
		return "", fmt.Errorf("%w: %s is %q", ErrMalformed, key, s)
	}
	return s, nil
}

// stringsField reads an array (or set) of strings; a required one may be empty.
func stringsField(obj ast.Object, key string, required bool) ([]string, error) {
	t := obj.Get(keyTerm(key))
	if t == nil {
		if required {
			return nil, fmt.Errorf("%w: %s is missing", ErrMalformed, key)
		}
		return nil, nil
	}
	elems, ok := elements(t.Value)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %s, want an array", ErrMalformed, key, ast.ValueName(t.Value))
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		s, ok := e.Value.(ast.String)
		if !ok {
			return nil, fmt.Errorf("%w: %s holds %s, want strings", ErrMalformed, key, ast.ValueName(e.Value))
		}
		out = append(out, string(s))
	}
	return out, nil
}

func reasonsField(obj ast.Object) ([]memory.Reason, error) {
	t := obj.Get(keyTerm("reasons"))
	if t == nil {
		return nil, fmt.Errorf("%w: reasons is missing", ErrMalformed)
	}
	arr, ok := t.Value.(*ast.Array)
	if !ok {
		return nil, fmt.Errorf("%w: reasons is %s, want an array", ErrMalformed, ast.ValueName(t.Value))
	}
	if arr.Len() == 0 {
		return nil, fmt.Errorf("%w: no reasons; every decision names the rules that fired", ErrMalformed)
	}
	out := make([]memory.Reason, 0, arr.Len())
	for i := range arr.Len() {
		e := arr.Elem(i)
		r, ok := e.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("%w: a reason is %s, want {rule, message}", ErrMalformed, ast.ValueName(e.Value))
		}
		rule, err := stringField(r, "rule", true)
		if err == nil && rule == "" {
			err = fmt.Errorf("%w: a reason has an empty rule", ErrMalformed)
		}
		msg, err2 := stringField(r, "message", true)
		if err := errors.Join(err, err2); err != nil {
			return nil, err
		}
		out = append(out, memory.Reason{Rule: rule, Message: msg})
	}
	return out, nil
}

// elements returns the terms of an array, or of a set in its order.
func elements(v ast.Value) ([]*ast.Term, bool) {
	switch c := v.(type) {
	case *ast.Array:
		terms := make([]*ast.Term, c.Len())
		for i := range terms {
			terms[i] = c.Elem(i)
		}
		return terms, true
	case ast.Set:
		return c.Slice(), true
	}
	return nil, false
}

func isNull(v ast.Value) bool {
	_, ok := v.(ast.Null)
	return ok
}
