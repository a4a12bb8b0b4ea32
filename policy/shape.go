package policy

import "github.com/open-policy-agent/opa/v1/ast"

// inputShape is the part of the input document a policy can observe: the
// paths of its references to input. A part that is not a constant string
// (input.pending[i].value) stands for every element, and a path that ends
// (input.candidate passed whole to a function) reads all below it.
// Building only those parts saves most of the input's cost: OPA objects
// are hash maps, and the records carry many bookkeeping fields the default
// policy never reads. A field outside the shape cannot be observed, so
// leaving it out changes no decision.
type inputShape struct {
	all    bool
	fields map[string]*inputShape
	// elem is the shape of every element, from references with a variable
	// or number there; for an object it means any key may be read.
	elem *inputShape
}

// fullShape is every field: for hosts and tests that want the whole input.
var fullShape = &inputShape{all: true}

// shapeOf collects the input references of compiled modules. The compiler
// has resolved imports and rewritten `some x in input.y` into references,
// so every read of input is a reference with the input root at its head.
// A comparison with null (input.current == null) only tells whether the
// part is there: it adds the part without reading all of it.
func shapeOf(modules map[string]*ast.Module) *inputShape {
	root := &inputShape{}
	for _, m := range modules {
		root.collect(m)
	}
	return root
}

// queryShape is the shape of one query of a compiled policy: the input
// references of the rules the query reaches through the compiler's
// dependency graph (functions and else branches included), so placing a
// text does not build what only deciding reads, and the other way round.
// A query that reaches no rule gets the shape of every module.
func queryShape(c *ast.Compiler, query ast.Ref) *inputShape {
	var stack []*ast.Rule
	seen := map[*ast.Rule]bool{}
	visit := func(r *ast.Rule) {
		for ; r != nil; r = r.Else {
			if !seen[r] {
				seen[r] = true
				stack = append(stack, r)
			}
		}
	}
	for _, r := range c.GetRules(query) {
		visit(r)
	}
	if len(stack) == 0 {
		return shapeOf(c.Modules)
	}
	root := &inputShape{}
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		root.collect(r)
		for dep := range c.Graph.Dependencies(r) {
			if d, ok := dep.(*ast.Rule); ok {
				visit(d)
			}
		}
	}
	return root
}

// collect adds the input references found in x (a module or a rule).
func (s *inputShape) collect(x any) {
	ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case *ast.Expr:
			if ref, ok := nullComparison(x); ok {
				s.touch(ref[1:])
				return true
			}
		case ast.Ref:
			if x.HasPrefix(ast.InputRootRef) {
				s.add(x[1:])
			}
		}
		return false
	}).Walk(x)
}

// nullComparison matches `input... == null` and `input... != null`.
func nullComparison(e *ast.Expr) (ast.Ref, bool) {
	if !e.IsCall() || len(e.Operands()) != 2 {
		return nil, false
	}
	switch e.Operator().String() {
	case ast.Equal.Name, ast.NotEqual.Name, ast.Equality.Name:
	default:
		return nil, false
	}
	a, b := e.Operand(0), e.Operand(1)
	if _, null := a.Value.(ast.Null); null {
		a, b = b, a
	}
	ref, isRef := a.Value.(ast.Ref)
	_, null := b.Value.(ast.Null)
	if !isRef || !null || !ref.HasPrefix(ast.InputRootRef) || !ref.IsGround() {
		return nil, false
	}
	return ref, true
}

// touch adds the part at path, if absent, without reading any of it.
func (s *inputShape) touch(path ast.Ref) { s.descend(path, false) }

func (s *inputShape) add(path ast.Ref) {
	if n := s.descend(path, true); n != nil {
		n.all, n.fields, n.elem = true, nil, nil
	}
}

// descend walks path down from s, creating the parts it passes, and
// returns where it ended; nil when a part on the way is read whole
// already. A key that is not a constant string leads on to every element
// when elems is set, and ends the walk there otherwise.
func (s *inputShape) descend(path ast.Ref, elems bool) *inputShape {
	for _, t := range path {
		if s.all {
			return nil
		}
		key, ok := t.Value.(ast.String)
		switch {
		case !ok && !elems:
			return s
		case !ok:
			if s.elem == nil {
				s.elem = &inputShape{}
			}
			s = s.elem
		default:
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
	}
	return s
}

// has reports whether the field k of an object is (or holds) a part the
// policy reads.
func (s *inputShape) has(k string) bool {
	return s != nil && (s.all || s.elem != nil || s.fields[k] != nil)
}

// field is the shape of field k of an object; nil when the policy never
// reads it. An object read with a variable key is read whole.
func (s *inputShape) field(k string) *inputShape {
	switch {
	case s == nil:
		return nil
	case s.all, s.elem != nil:
		return fullShape
	default:
		return s.fields[k]
	}
}

// element is the shape of every element of an array.
func (s *inputShape) element() *inputShape {
	switch {
	case s == nil:
		return nil
	case s.all:
		return s
	default:
		return s.elem
	}
}
