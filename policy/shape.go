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
//
// What the analysis cannot bound gives the whole input (fullShape):
// input read whole or by a variable key at its root (walk(input),
// json.marshal(input), object.get(input, path, x), input[k]), a `with`
// that replaces part of input or binds anything to a value read from it,
// and a call of a function that is neither a builtin nor a rule.
func shapeOf(modules map[string]*ast.Module) *inputShape {
	root := &inputShape{}
	for _, m := range modules {
		if !root.collect(m) {
			return fullShape
		}
	}
	return root.bounded()
}

// queryShape is the shape of one query of a compiled policy: the input
// references of the rules the query may reach (functions and else
// branches included), so placing a text does not build what only deciding
// reads, and the other way round. A query that reaches no rule gets the
// shape of every module.
func queryShape(c *ast.Compiler, query ast.Ref) *inputShape {
	rules := reachable(c, query)
	if len(rules) == 0 {
		return shapeOf(c.Modules)
	}
	root := &inputShape{}
	for _, r := range rules {
		if !root.collect(r) {
			return fullShape
		}
	}
	return root.bounded()
}

// reachable lists the rules evaluating query may evaluate. Every
// reference into data in a rule counts, as OPA lists the rules it may
// select (a variable in it may select any of them): OPA's own dependency
// graph narrows variables to the values it can prove, and a shape must
// not rest on that.
func reachable(c *ast.Compiler, query ast.Ref) []*ast.Rule {
	var out []*ast.Rule
	seen := map[*ast.Rule]bool{}
	visit := func(rules []*ast.Rule) {
		for _, r := range rules {
			for ; r != nil; r = r.Else {
				if !seen[r] {
					seen[r] = true
					out = append(out, r)
				}
			}
		}
	}
	opts := ast.RulesOptions{IncludeHiddenModules: true}
	visit(c.GetRulesDynamicWithOpts(query, opts))
	for i := 0; i < len(out); i++ {
		r := out[i]
		// The rule itself, not its else branches: they are in out too.
		for _, x := range []any{r.Head, r.Body} {
			ast.WalkRefs(x, func(ref ast.Ref) bool {
				if ref.HasPrefix(ast.DefaultRootRef) {
					visit(c.GetRulesDynamicWithOpts(ref, opts))
				}
				return false
			})
		}
	}
	return out
}

// bounded is s, or fullShape when the root is read whole or by a
// variable key.
func (s *inputShape) bounded() *inputShape {
	if s.all || s.elem != nil {
		return fullShape
	}
	return s
}

// collect adds the input references found in x (a module or a rule), and
// reports false when it meets one it cannot bound (see shapeOf).
func (s *inputShape) collect(x any) bool {
	ok := true
	ast.NewGenericVisitor(func(x any) bool {
		if !ok {
			return true
		}
		switch x := x.(type) {
		case *ast.Expr:
			if ref, isNull := nullComparison(x); isNull {
				s.touch(ref[1:])
				return true
			}
			if x.IsCall() && !knownFunction(x.Operator()) {
				ok = false
			}
		case *ast.With:
			if x.Target.Value.(ast.Ref).HasPrefix(ast.InputRootRef) || readsInput(x.Value) {
				ok = false
			}
		case ast.Call:
			if op, isRef := x[0].Value.(ast.Ref); !isRef || !knownFunction(op) {
				ok = false
			}
		case ast.Ref:
			if x.HasPrefix(ast.InputRootRef) {
				s.add(x[1:])
			}
		}
		return !ok
	}).Walk(x)
	return ok
}

// knownFunction reports whether op names a builtin or a rule (a function
// of the policy). print is left out: its output would show the pruned
// input (the compiler drops print calls unless asked to keep them).
func knownFunction(op ast.Ref) bool {
	if op.HasPrefix(ast.DefaultRootRef) {
		return true
	}
	name := op.String()
	_, builtin := ast.BuiltinMap[name]
	return builtin && name != ast.Print.Name && name != ast.InternalPrint.Name
}

func readsInput(x any) bool {
	found := false
	ast.WalkRefs(x, func(ref ast.Ref) bool {
		found = found || ref.HasPrefix(ast.InputRootRef)
		return found
	})
	return found
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
