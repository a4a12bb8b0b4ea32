package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// nest is n arrays inside one another around 1.
func nest(n int) string {
	return strings.Repeat("[", n) + "1" + strings.Repeat("]", n)
}

func TestStrictJSONRules(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type req struct {
		Summary string            `json:"summary"`
		Value   json.RawMessage   `json:"value,omitempty"`
		Meta    map[string]any    `json:"metadata,omitempty"`
		Inner   *inner            `json:"inner,omitempty"`
		List    []inner           `json:"list,omitempty"`
		At      time.Time         `json:"at,omitzero"`
		Tags    map[string]string `json:"tags,omitempty"`
		NoTag   string
	}
	cases := []struct {
		name, body string
		lenient    bool
		want       string // "" accepted, else a substring of the error
	}{
		{"ok", `{"summary":"x","value":{"a":[1,2]},"metadata":{"k":1},"inner":{"a":"y"},"NoTag":"z"}`, false, ""},
		{"duplicate at the top", `{"summary":"x","summary":"y"}`, false, `duplicate member "summary" at the top level`},
		{"duplicate in a raw value", `{"summary":"x","value":{"a":1,"a":2}}`, false, `duplicate member "a" at "value"`},
		{"duplicate in a map", `{"metadata":{"k":1,"k":1}}`, true, `duplicate member "k" at "metadata"`},
		{"duplicate deep in a list", `{"list":[{"a":"x"},{"a":"x","a":"y"}]}`, true, `duplicate member "a" at "list.1"`},
		{"duplicate spelled with an escape", `{"summary":"x","summ\u0061ry":"y"}`, false, "duplicate member"},
		{"case mismatch", `{"Summary":"x"}`, false, `unknown field "Summary" at the top level: field names are case-sensitive (did you mean "summary"?)`},
		{"case mismatch, lenient", `{"SUMMARY":"x"}`, true, `did you mean "summary"?`},
		{"case mismatch, nested", `{"inner":{"A":"x"}}`, true, `unknown field "A" at "inner"`},
		{"case mismatch in a list", `{"list":[{"a":"x"},{"A":"y"}]}`, true, `at "list.1"`},
		{"case mismatch of an untagged field", `{"notag":"x"}`, true, `did you mean "NoTag"?`},
		{"kelvin sign", "{\"\u212Aey\":1,\"summary\":\"x\"}", false, `unknown field`},
		{"map keys keep their case", `{"metadata":{"Summary":1,"summary":2},"tags":{"A":"b"}}`, false, ""},
		{"unknown, strict", `{"summary":"x","riskLevel":"low"}`, false, `unknown field "riskLevel" at the top level`},
		{"unknown, lenient", `{"summary":"x","riskLevel":"low","extra":{"deep":[1]}}`, true, ""},
		{"invalid UTF-8", "{\"summary\":\"caf\xe9\"}", false, `invalid UTF-8 at "summary"`},
		{"invalid UTF-8 in a name", "{\"su\xffmmary\":\"x\"}", true, `invalid UTF-8`},
		{"invalid UTF-8 in a raw value", "{\"value\":[\"\xc3\"]}", false, `invalid UTF-8 at "value.0"`},
		{"lone surrogate escape", `{"summary":"\ud800"}`, false, `invalid UTF-8 at "summary"`},
		{"valid escapes", `{"summary":"caf\u00e9 \ud83d\ude00"}`, false, ""},
		{"depth 5000", `{"value":` + nest(5000) + `}`, false, "nested more than 64 levels deep"},
		{"depth at the limit", `{"value":` + nest(proxy.MaxJSONDepth-1) + `}`, false, ""},
		{"depth one past the limit", `{"value":` + nest(proxy.MaxJSONDepth) + `}`, false, `nested more than 64 levels deep at "value`},
		{"deep unknown member", `{"x":` + nest(proxy.MaxJSONDepth) + `}`, true, "nested more than 64"},
		{"trailing data", `{"summary":"x"} {}`, false, "unexpected data after the object"},
		{"trailing garbage", `{"summary":"x"} x`, false, "unexpected data after the object"},
		{"truncated", `{"summary":`, false, "unexpected end of the body"},
		{"syntax", `{"summary" "x"}`, false, "syntax error at byte"},
		{"not an object", `[1,2]`, false, "expected an object, not array"},
		{"wrong type", `{"summary":7}`, false, `field "summary" must be a string, not number`},
		{"wrong type in a list", `{"list":[{"a":7}]}`, false, `field "list.0.a" must be a string, not number`},
		{"bad time", `{"at":"yesterday"}`, false, `field "at": parsing time`},
		{"number out of range", `{"metadata":{"n":1e400}}`, false, `field "metadata.n"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v req
			decode := proxy.UnmarshalStrict
			if tc.lenient {
				decode = proxy.UnmarshalLenient
			}
			err := decode([]byte(tc.body), &v)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			// CheckJSON holds to the same rules where no type is involved.
			syntactic := tc.want == ""
			for _, w := range []string{"duplicate", "UTF-8", "nested", "unexpected", "syntax"} {
				syntactic = syntactic || strings.Contains(tc.want, w)
			}
			if cerr := proxy.CheckJSON([]byte(tc.body)); syntactic && (cerr != nil) != (err != nil) {
				t.Fatalf("CheckJSON: %v, decode: %v", cerr, err)
			}
		})
	}
}

// Behaviour kept from the encoding/json v1 decoder.
func TestStrictJSONKeepsV1Behaviour(t *testing.T) {
	var c memory.Candidate
	body := `{"subjectId":"s","summary":"x","value":null,"metadata":{"n":12345678901234567890,"f":1.5,"o":{"k":[true,null]}},"scope":null,"actor":{"agentId":"a"}}`
	if err := proxy.UnmarshalStrict([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	if string(c.Value) != "null" { // a json.RawMessage keeps null, as in v1
		t.Fatalf("value %q", c.Value)
	}
	if _, ok := c.Metadata["n"].(float64); !ok { // numbers into any are float64
		t.Fatalf("metadata %#v", c.Metadata)
	}
	want := map[string]any{"k": []any{true, nil}}
	if !reflect.DeepEqual(c.Metadata["o"], want) || c.Actor.AgentID != "a" || c.Scope != (memory.Scope{}) {
		t.Fatalf("candidate %+v", c)
	}
	// A raw value is kept byte for byte, whitespace included.
	if err := proxy.UnmarshalStrict([]byte(`{"value": { "a" : [1, 2] } }`), &c); err != nil || string(c.Value) != `{ "a" : [1, 2] }` {
		t.Fatalf("value %q, %v", c.Value, err)
	}
	// Into any: objects, arrays, float64, strings, booleans, null.
	var v any
	if err := proxy.UnmarshalStrict([]byte(`[{"a":1},"s",false,null]`), &v); err != nil ||
		!reflect.DeepEqual(v, []any{map[string]any{"a": 1.0}, "s", false, nil}) {
		t.Fatalf("%#v, %v", v, err)
	}
}

// bodyCase is one body every decoding route must refuse with a 400.
type bodyCase struct{ name, body, want string }

func TestStrictJSONOnEveryRoute(t *testing.T) {
	g := newGuarded(t, proxy.BrowserPolicy{})
	deep := nest(5000)
	routes := []struct {
		target
		cases []bodyCase
		// underLimit is a body nested exactly MaxJSONDepth deep, accepted.
		underLimit string
	}{
		{target{"native", "POST", "/api/v1/memories", nativeBody, false, false, http.StatusCreated}, []bodyCase{
			{"duplicate", `{"layer":"state","subjectId":"s","summary":"a","summary":"b"}`, `duplicate member "summary"`},
			{"nested duplicate", `{"layer":"state","subjectId":"s","summary":"a","value":{"x":1,"x":2}}`, `duplicate member "x" at "value"`},
			{"duplicate in scope", `{"layer":"state","subjectId":"s","summary":"a","scope":{"userId":"a","userId":"b"}}`, "duplicate member"},
			{"Summary", `{"layer":"state","subjectId":"s","Summary":"a"}`, `did you mean "summary"?`},
			{"nested case", `{"layer":"state","subjectId":"s","summary":"a","actor":{"AgentId":"x"}}`, `did you mean "agentId"?`},
			{"invalid UTF-8", "{\"layer\":\"state\",\"subjectId\":\"s\",\"summary\":\"caf\xe9\"}", "invalid UTF-8"},
			{"lone surrogate", `{"layer":"state","subjectId":"s","summary":"\udc00"}`, "invalid UTF-8"},
			{"depth 5000", `{"layer":"state","subjectId":"s","summary":"a","value":` + deep + `}`, "nested more than 64 levels"},
		}, `{"layer":"state","subjectId":"deep","summary":"deep value","value":` + nest(proxy.MaxJSONDepth-1) + `}`},
		{target{"mem0 add", "POST", "/v1/memories/", mem0Body, false, false, http.StatusOK}, []bodyCase{
			{"duplicate", `{"messages":"x","user_id":"alice","user_id":"bob"}`, `duplicate member "user_id"`},
			{"nested duplicate", `{"messages":[{"role":"user","content":"a","content":"b"}],"user_id":"alice"}`, `duplicate member "content" at "messages.0"`},
			{"User_Id", `{"messages":"x","User_Id":"alice"}`, `did you mean "user_id"?`},
			{"Role", `{"messages":[{"Role":"assistant","content":"x"}],"user_id":"alice"}`, `did you mean "role"?`},
			{"invalid UTF-8", "{\"messages\":\"caf\xe9\",\"user_id\":\"alice\"}", "invalid UTF-8"},
			{"depth 5000", `{"messages":"x","user_id":"alice","metadata":{"v":` + deep + `}}`, "nested more than 64 levels"},
		}, `{"messages":"deep metadata","user_id":"alice","infer":false,"metadata":{"v":` + nest(proxy.MaxJSONDepth-2) + `}}`},
		{target{"mem0 search", "POST", "/v2/memories/search/", `{"query":"tea","filters":{"user_id":"alice"}}`, false, false, http.StatusOK}, []bodyCase{
			{"duplicate in filters", `{"query":"x","filters":{"user_id":"alice","user_id":"bob"}}`, `duplicate member "user_id" at "filters"`},
			{"Query", `{"Query":"x","filters":{"user_id":"alice"}}`, `did you mean "query"?`},
			{"invalid UTF-8", "{\"query\":\"\xff\",\"filters\":{\"user_id\":\"alice\"}}", "invalid UTF-8"},
		}, ""},
		{target{"admin quarantine", "POST", "/admin/v1/quarantine", quarBody, true, false, http.StatusOK}, []bodyCase{
			{"duplicate", `{"runId":"r1","runId":"r2","reason":"x"}`, `duplicate member "runId"`},
			{"RunId", `{"RunId":"r1","reason":"x"}`, `did you mean "runId"?`},
			{"invalid UTF-8", "{\"runId\":\"r\xff\",\"reason\":\"x\"}", "invalid UTF-8"},
			{"depth 5000", `{"runId":"r","reason":` + deep + `}`, "nested more than 64 levels"},
		}, ""},
		{target{"admin approve", "POST", "/admin/v1/reviews/nope/approve", "", true, false, http.StatusNotFound}, []bodyCase{
			{"duplicate", `{"note":"a","note":"b"}`, "duplicate member"},
			{"Note", `{"Note":"a"}`, `did you mean "note"?`},
		}, ""},
	}
	for _, rt := range routes {
		for _, bc := range rt.cases {
			t.Run(rt.name+"/"+bc.name, func(t *testing.T) {
				a := send(t, rt.method, g.url(rt.target), bc.body, rt.headers("Content-Type", "application/json")...)
				if a.status != http.StatusBadRequest || a.code() != memory.EINVALID || !strings.Contains(a.message(), bc.want) {
					t.Fatalf("%d %s: want 400 invalid containing %q", a.status, a.raw, bc.want)
				}
				if !rt.admin && strings.HasPrefix(rt.name, "mem0") {
					if a.obj["detail"] != a.message() { // Mem0's shape: {error, detail, code}
						t.Fatalf("not Mem0's error shape: %s", a.raw)
					}
				} else if _, ok := a.obj["error"].(map[string]any); !ok {
					t.Fatalf("not the JSON error shape: %s", a.raw)
				}
			})
		}
	}
	if evs, err := g.gov.Events(context.Background(), "", 0); err != nil || len(evs) != 0 {
		t.Fatalf("refused bodies recorded %d events (%v)", len(evs), err)
	}
	for _, rt := range routes {
		if rt.underLimit == "" {
			continue
		}
		a := send(t, rt.method, g.url(rt.target), rt.underLimit, rt.headers("Content-Type", "application/json")...)
		if a.status != rt.ok {
			t.Fatalf("%s nested %d deep: %d %s", rt.name, proxy.MaxJSONDepth, a.status, a.raw)
		}
	}
}

// MCP tool arguments are decoded by the SDK with encoding/json v1; the
// guard holds /mcp bodies to the strict rules first.
func TestStrictJSONOnMCP(t *testing.T) {
	g := newGuarded(t, proxy.BrowserPolicy{})
	url := g.agent.URL + "/mcp"
	h := append([]string{"Content-Type", "application/json"}, mcpAccept...)
	a := send(t, "POST", url, mcpInit, h...)
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", a.status, a.raw)
	}
	h = append(h, "Mcp-Session-Id", sid)
	send(t, "POST", url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h...)
	call := func(tool, args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	refused := []bodyCase{
		{"duplicate argument", call("add_memory", `{"text":"I like coffee","text":"I like beer","user_id":"alice"}`), `duplicate member "text" at "params.arguments"`},
		{"duplicate in metadata", call("add_memory", `{"text":"x","user_id":"alice","metadata":{"a":1,"a":2}}`), "duplicate member"},
		{"duplicate id", `{"jsonrpc":"2.0","id":4,"id":5,"method":"tools/list"}`, `duplicate member "id"`},
		{"names differing in case", call("create_entities", `{"entities":[{"name":"C","Name":"D","entityType":"person","observations":["x"]}]}`), `"name" and "Name"`},
		{"invalid UTF-8", call("add_memory", "{\"text\":\"caf\xe9\",\"user_id\":\"alice\"}"), "invalid UTF-8"},
		{"depth 5000", call("add_memory", `{"text":"x","user_id":"alice","metadata":{"v":`+nest(5000)+`}}`), "nested more than 64 levels"},
		{"not JSON", `{"jsonrpc":"2.0",`, "unexpected end"},
	}
	for _, bc := range refused {
		t.Run(bc.name, func(t *testing.T) {
			a := send(t, "POST", url, bc.body, h...)
			if a.status != http.StatusBadRequest || a.obj["jsonrpc"] != "2.0" || a.obj["id"] != nil || a.code() != "-32700" ||
				!strings.Contains(a.message(), bc.want) {
				t.Fatalf("%d %s: want 400 with a JSON-RPC parse error containing %q", a.status, a.raw, bc.want)
			}
		})
	}
	// A name in the wrong case alone is refused by the tools' schemas
	// (closed for the Mem0 tools, "name" required for the graph tools).
	for _, args := range []string{`{"Text":"I like juice","user_id":"alice"}`, `{"text":"x","User_Id":"bob"}`} {
		a := send(t, "POST", url, call("add_memory", args), h...)
		if res, _ := a.obj["result"].(map[string]any); a.status != http.StatusOK || res["isError"] != true {
			t.Fatalf("%s: %d %s", args, a.status, a.raw)
		}
	}
	if evs, err := g.gov.Events(context.Background(), "", 0); err != nil || len(evs) != 0 {
		t.Fatalf("refused calls recorded %d events (%v)", len(evs), err)
	}
	// The strict rules leave a good call alone, nested to the limit
	// (envelope, params, arguments, metadata: 4 levels).
	a = send(t, "POST", url, call("add_memory", `{"text":"I like tea","user_id":"alice","metadata":{"v":`+nest(proxy.MaxJSONDepth-4)+`}}`), h...)
	if res, _ := a.obj["result"].(map[string]any); a.status != http.StatusOK || res == nil || res["isError"] == true {
		t.Fatalf("good call: %d %s", a.status, a.raw)
	}
}

// FuzzDecodeStrict: decoding never panics, and whatever is accepted
// re-encodes (as the server encodes) to a body that is accepted again and
// decodes to the same value.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		nativeBody, `{"subjectId":"s","summary":"x","value":{"a":[1,2.5,"x",null,true]},"metadata":{"k":{"z":[]}}}`,
		`{"summary":"a","summary":"b"}`, `{"Summary":"x"}`, "{\"summary\":\"\xff\"}", `{"summary":"\ud800"}`,
		`{"value":` + nest(70) + `}`, `{"scope":{"userId":"u"},"actor":{"agentId":"a"},"evidence":{"excerpt":"e"}}`,
		`{"value":null}`, `{"value":"\u0000\u001b[2K"}`, `[]`, `null`, `{"op":"delete","slotId":"x"} `, `{"metadata":{"n":1e308}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var c memory.Candidate
		if err := proxy.DecodeStrict(body, &c); err != nil {
			if memory.ErrorCode(err) != memory.EINVALID {
				t.Fatalf("error code %q: %v", memory.ErrorCode(err), err)
			}
			return
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", body, err)
		}
		var c2 memory.Candidate
		if err := proxy.DecodeStrict(again, &c2); err != nil {
			t.Fatalf("accepted %q, re-encoded %q is refused: %v", body, again, err)
		}
		third, _ := json.Marshal(c2)
		if string(third) != string(again) {
			t.Fatalf("re-decoding changed the value:\n%s\n%s", again, third)
		}
		var v any
		if err := proxy.UnmarshalLenient(body, &v); err != nil {
			t.Fatalf("accepted into a Candidate, refused into any: %v", err)
		}
	})
}
