package search

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/memgate/memgate/memory"
)

// The conditions a Filter's leaves compile to, one constructor per kind of
// field: ids, times, categories, text and metadata.

// condFunc compiles one operator and its operand on a field.
type condFunc func(op string, arg any) (func(*memory.Record) bool, error)

func idCond(get func(*memory.Record) string) condFunc {
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
			return nil, fmt.Errorf("%s needs a string, not %s", op, Describe(arg))
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
	return from, to, fmt.Errorf("a time must be a date string or Unix seconds, not %s", Describe(arg))
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
		return nil, fmt.Errorf("%s needs a string, not %s", op, Describe(arg))
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
		return nil, fmt.Errorf("%s needs a string, not %s", op, Describe(arg))
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
				return nil, fmt.Errorf("%s needs an array, not %s", op, Describe(arg))
			}
			// Strings, numbers, booleans and null are looked up in a set:
			// for them reflect.DeepEqual is ==, which map keys use. Arrays
			// and objects are compared one by one, as before.
			scalars, composites := map[any]bool{}, []any(nil)
			for _, it := range items {
				if isScalar(it) {
					scalars[it] = true
				} else {
					composites = append(composites, it)
				}
			}
			want := op == "in"
			return func(r *memory.Record) bool {
				v, _ := get(r)
				if isScalar(v) && scalars[v] {
					return want
				}
				for _, it := range composites {
					if reflect.DeepEqual(v, it) {
						return want
					}
				}
				return !want
			}, nil
		case "contains", "icontains":
			s, ok := arg.(string)
			if !ok {
				return nil, fmt.Errorf("%s needs a string, not %s", op, Describe(arg))
			}
			fold := op == "icontains"
			if fold {
				s = strings.ToLower(s) // once, not once per record
			}
			return func(r *memory.Record) bool { v, _ := get(r); return containsValue(v, s, fold) }, nil
		case "gt", "gte", "lt", "lte":
			switch arg.(type) {
			case float64, string:
			default:
				return nil, fmt.Errorf("%s needs a number or a string, not %s", op, Describe(arg))
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

// containsValue reports whether v, a string or an array holding strings,
// contains s; with fold, in any case (s is then lower case already).
func containsValue(v any, s string, fold bool) bool {
	has := func(x string) bool {
		if fold {
			return strings.Contains(strings.ToLower(x), s)
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

// isScalar reports whether v, as encoding/json decodes it, is a string, a
// number, a boolean or null: a value reflect.DeepEqual compares as ==.
func isScalar(v any) bool {
	switch v.(type) {
	case nil, string, float64, bool:
		return true
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
		return nil, fmt.Errorf("in needs an array of strings, not %s", Describe(arg))
	}
	set := make(map[string]bool, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("in needs an array of strings, not one holding %s", Describe(it))
		}
		set[s] = true
	}
	return set, nil
}

// Describe names the JSON type of v (as encoding/json decodes it into an
// any), for error messages.
func Describe(v any) string {
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
