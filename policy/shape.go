package policy

import "github.com/open-policy-agent/opa/v1/ast"

// inputShape is the part of the input document a policy can observe: the
// paths of its references to input, cut at the first part that is not a
// constant key (input.pending[i] reads every pending record, input.candidate
// passed whole to a function reads all of it). Building only those parts
// saves most of the input's cost: OPA objects are hash maps, and the
// records carry many bookkeeping fields the default policy never reads.
// A field outside the shape cannot be observed, so leaving it out changes
// no decision.
type inputShape struct {
	all    bool
	fields map[string]*inputShape
}

// fullShape is every field: for hosts and tests that want the whole input.
var fullShape = &inputShape{all: true}

// shapeOf collects the input references of compiled modules. The compiler
// has resolved imports and rewritten `some x in input.y` into references,
// so every read of input is a reference with the input root at its head.
func shapeOf(modules map[string]*ast.Module) *inputShape {
	root := &inputShape{}
	for _, m := range modules {
		ast.WalkRefs(m, func(ref ast.Ref) bool {
			if ref.HasPrefix(ast.InputRootRef) {
				root.add(ref[1:])
			}
			return false
		})
	}
	return root
}

func (s *inputShape) add(path ast.Ref) {
	for _, t := range path {
		if s.all {
			return
		}
		key, ok := t.Value.(ast.String)
		if !ok {
			break // a variable or a computed key: the whole subtree
		}
		if s.fields == nil {
			s.fields = map[string]*inputShape{}
		}
		next := s.fields[string(key)]
		if next == nil {
			next = &inputShape{}
			s.fields[string(key)] = next
		}
		s = next
	}
	s.all, s.fields = true, nil
}

// has reports whether the field k is (or holds) a part the policy reads.
func (s *inputShape) has(k string) bool {
	return s != nil && (s.all || s.fields[k] != nil)
}

// field is the shape of field k; nil when the policy never reads it.
func (s *inputShape) field(k string) *inputShape {
	switch {
	case s == nil:
		return nil
	case s.all:
		return s
	default:
		return s.fields[k]
	}
}
