package proxy

import (
	"bytes"
	"encoding"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Strict JSON for request bodies. Every body memgate decodes, on either
// listener and in every dialect, follows these rules (encoding/json/v2
// semantics, from github.com/go-json-experiment/json):
//
//   - exactly one JSON value, with nothing but whitespace after it;
//   - valid UTF-8 throughout, escapes included (a lone "\ud800" is refused),
//     so no text turns into U+FFFD behind the caller's back;
//   - no object names a member twice, at any depth: which of the two a
//     reader keeps is up to the reader, and policy and store must see the
//     same value;
//   - nesting at most MaxJSONDepth levels deep;
//   - member names match field names exactly: "Summary" is not "summary".
//     A name that differs from a known field only in case is refused even
//     where unknown members are otherwise tolerated (the Mem0 dialect), so
//     it can neither set the field (as encoding/json v1 would) nor be
//     dropped in silence.
//
// encoding/json v1 accepted all of these, keeping the last duplicate,
// matching names case-insensitively, replacing invalid UTF-8 and nesting
// up to 10,000 levels.

// MaxJSONDepth bounds the nesting of a request body: objects and arrays
// inside one another, the outermost counting as one. The deepest body a
// client has reason to send is a Mem0 filters document at its own bound
// (16 levels of AND/OR, two JSON levels each, inside the body and the
// filters object, with an operator object and list at the leaf: 36
// levels); 64 leaves room for that and for structured `value`s, and bounds
// what the recursive readers downstream (policy input, filters, the event
// log) are handed. A deeper body is a 400 naming the limit.
const MaxJSONDepth = 64

// CheckJSON reports whether body is one JSON value that follows the strict
// rules, without decoding it into anything. It is the check applied to
// bodies that are decoded elsewhere (MCP's JSON-RPC messages). The error
// says what is wrong and where, for the caller.
func CheckJSON(body []byte) error {
	return scanJSON(&scanner{}, body, nil)
}

// checkRPCJSON is CheckJSON for a body a case-insensitive decoder reads
// (the MCP SDK's, encoding/json v1): it also refuses an object whose member
// names differ only in case ("name" and "Name"), of which that decoder
// would keep either.
func checkRPCJSON(body []byte) error {
	return scanJSON(&scanner{foldNames: true}, body, nil)
}

// UnmarshalStrict decodes one JSON value into v by the strict rules,
// refusing object members that name no field of v.
func UnmarshalStrict(body []byte, v any) error {
	return unmarshal(body, v, true)
}

// UnmarshalLenient decodes one JSON value into v by the strict rules but
// ignores object members that name no field of v, unless they differ from
// one only in case.
func UnmarshalLenient(body []byte, v any) error {
	return unmarshal(body, v, false)
}

func unmarshal(body []byte, v any, rejectUnknown bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("cannot decode into %T", v)
	}
	if err := scanJSON(&scanner{rejectUnknown: rejectUnknown}, body, rv.Type().Elem()); err != nil {
		return err
	}
	// The scan has checked syntax, UTF-8, duplicates, depth and names;
	// what is left for the decoder are the types of values.
	err := json.Unmarshal(body, v, json.RejectUnknownMembers(rejectUnknown))
	if err != nil {
		return errors.New(describeJSONError(err))
	}
	return nil
}

// scanJSON reads body token by token, checking the rules; with t set it
// also follows t's fields, so member names are checked against them.
func scanJSON(s *scanner, body []byte, t reflect.Type) error {
	s.dec = jsontext.NewDecoder(bytes.NewReader(body))
	if err := s.value(t); err != nil {
		if err == io.EOF {
			return errors.New("the body is empty; a JSON value is required")
		}
		return err
	}
	if _, err := s.dec.ReadToken(); err != io.EOF {
		return fmt.Errorf("unexpected data after the %s at byte %d", kindName(firstKind(body)), s.dec.InputOffset())
	}
	return nil
}

type scanner struct {
	dec           *jsontext.Decoder
	rejectUnknown bool // member names that name no field are errors
	foldNames     bool // member names that differ only in case are errors
}

// value reads one value; t is the Go type it will be decoded into, nil when
// there is none to check names against.
func (s *scanner) value(t reflect.Type) error {
	t = checkedType(t)
	switch s.dec.PeekKind() {
	case '{':
		return s.object(t)
	case '[':
		return s.array(t)
	}
	_, err := s.read()
	return err
}

func (s *scanner) read() (jsontext.Token, error) {
	tok, err := s.dec.ReadToken()
	if err != nil {
		return tok, jsonSyntaxError(err)
	}
	if k := tok.Kind(); (k == '{' || k == '[') && s.dec.StackDepth() > MaxJSONDepth {
		return tok, fmt.Errorf("nested more than %d levels deep at %s: %d is the limit for a request body",
			MaxJSONDepth, where(s.dec.StackPointer()), MaxJSONDepth)
	}
	return tok, nil
}

func (s *scanner) object(t reflect.Type) error {
	if _, err := s.read(); err != nil {
		return err
	}
	var fields *fieldSet
	if t != nil && t.Kind() == reflect.Struct {
		fields = fieldsOf(t)
	}
	var folded map[string]string
	for s.dec.PeekKind() != '}' {
		tok, err := s.read()
		if err != nil {
			return err
		}
		name := tok.String()
		if s.foldNames {
			k := foldName(name)
			if prev, dup := folded[k]; dup {
				return fmt.Errorf("members %q and %q at %s differ only in case", prev, name, where(s.dec.StackPointer().Parent()))
			}
			if folded == nil {
				folded = map[string]string{}
			}
			folded[k] = name
		}
		var vt reflect.Type
		switch {
		case fields != nil:
			ft, ok := fields.byName[name]
			if !ok {
				if want := fields.fold(name); want != "" {
					return fmt.Errorf("unknown field %q at %s: field names are case-sensitive (did you mean %q?)",
						name, where(s.dec.StackPointer().Parent()), want)
				}
				if s.rejectUnknown {
					return fmt.Errorf("unknown field %q at %s", name, where(s.dec.StackPointer().Parent()))
				}
			}
			vt = ft
		case t != nil && t.Kind() == reflect.Map:
			vt = t.Elem()
		}
		if err := s.value(vt); err != nil {
			return err
		}
	}
	_, err := s.read()
	return err
}

func (s *scanner) array(t reflect.Type) error {
	if _, err := s.read(); err != nil {
		return err
	}
	var et reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		et = t.Elem()
	}
	for s.dec.PeekKind() != ']' {
		if err := s.value(et); err != nil {
			return err
		}
	}
	_, err := s.read()
	return err
}

var (
	v1Unmarshaler   = reflect.TypeFor[stdjson.Unmarshaler]()
	v2Unmarshaler   = reflect.TypeFor[json.UnmarshalerFrom]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkedType is the type whose member names a value is checked against:
// t without pointers, or nil when t decodes itself (json.RawMessage,
// time.Time) or takes any value (interfaces).
func checkedType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(v1Unmarshaler) || pt.Implements(v2Unmarshaler) || pt.Implements(textUnmarshaler) {
		return nil
	}
	return t
}

// fieldSet is a struct's JSON member names and their types.
type fieldSet struct {
	byName map[string]reflect.Type
	names  []string
}

// fold returns the field name that name matches case-insensitively, if
// any.
func (f *fieldSet) fold(name string) string {
	k := foldName(name)
	for _, n := range f.names {
		if foldName(n) == k {
			return n
		}
	}
	return ""
}

// foldName folds a name as encoding/json v1 folds it to match fields
// case-insensitively.
func foldName(name string) string {
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, name)
}

var fieldCache sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fieldSet)
	}
	f := &fieldSet{byName: map[string]reflect.Type{}}
	f.add(t, 0)
	fieldCache.Store(t, f)
	return f
}

// add collects t's fields as encoding/json names them: the tag's name or
// the Go name, embedded structs without a tag name inlined.
func (f *fieldSet) add(t reflect.Type, depth int) {
	if depth > 8 { // embedding cycles through pointers
		return
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				f.add(et, depth+1)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := f.byName[name]; !dup {
			f.byName[name] = sf.Type
			f.names = append(f.names, name)
		}
	}
}

// jsonSyntaxError rewords the reader's errors for the caller.
func jsonSyntaxError(err error) error {
	if err == io.EOF {
		return err
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		switch {
		case errors.Is(err, jsontext.ErrDuplicateName):
			return fmt.Errorf("duplicate member %q at %s", syn.JSONPointer.LastToken(), where(syn.JSONPointer.Parent()))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("unexpected end of the body at byte %d", syn.ByteOffset)
		case strings.Contains(syn.Err.Error(), "UTF-8") || strings.Contains(syn.Err.Error(), "surrogate"):
			return fmt.Errorf("invalid UTF-8 at %s (byte %d)", where(syn.JSONPointer), syn.ByteOffset)
		}
		return fmt.Errorf("syntax error at byte %d: %s", syn.ByteOffset, strings.TrimPrefix(syn.Err.Error(), "jsontext: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of the body")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "jsontext: "))
}

// describeJSONError words a decoding error as the v1 decoder's errors were
// worded: field "x" must be a string, not number.
func describeJSONError(err error) string {
	var sem *json.SemanticError
	if !errors.As(err, &sem) {
		return jsonSyntaxError(err).Error()
	}
	switch {
	case errors.Is(sem.Err, json.ErrUnknownName):
		return fmt.Sprintf("unknown field %q at %s", sem.JSONPointer.LastToken(), where(sem.JSONPointer.Parent()))
	case sem.Err != nil:
		return fmt.Sprintf("%s: %s", fieldOf(sem.JSONPointer), sem.Err)
	}
	got := kindName(sem.JSONKind)
	if sem.JSONPointer == "" {
		return fmt.Sprintf("expected %s, not %s", goTypeName(sem.GoType), got)
	}
	return fmt.Sprintf("field %q must be %s, not %s", pointerPath(sem.JSONPointer), goTypeName(sem.GoType), got)
}

func fieldOf(p jsontext.Pointer) string {
	if p == "" {
		return "the body"
	}
	return fmt.Sprintf("field %q", pointerPath(p))
}

// where names a place in the body for a message.
func where(p jsontext.Pointer) string {
	if p == "" {
		return "the top level"
	}
	return fmt.Sprintf("%q", pointerPath(p))
}

// pointerPath renders a JSON pointer as a dotted path: /scope/userId is
// scope.userId, /messages/0/role is messages.0.role.
func pointerPath(p jsontext.Pointer) string {
	var parts []string
	for tok := range p.Tokens() {
		parts = append(parts, tok)
	}
	return strings.Join(parts, ".")
}

func firstKind(body []byte) jsontext.Kind {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return jsontext.Value(b[:1]).Kind()
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// goTypeName names the JSON a Go type takes, with its article.
func goTypeName(t reflect.Type) string {
	if t == nil {
		return "a value of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}
