package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// malformed lists tool calls whose arguments are wrong; each must get an MCP
// error (a tool result with isError, or a JSON-RPC error), write nothing and
// leave the session working.
var malformed = []struct {
	tool, args, want string
}{
	{"create_entities", `{"entities":[{"name":1}]}`, "name"},
	{"create_entities", `{}`, "entities"},
	{"create_entities", `{"entities":null}`, "entities"},
	{"create_entities", `{"entities":[{"name":"","entityType":"t","observations":[]}]}`, "must not be empty"},
	{"create_entities", `{"entities":[{"name":"a\u0007b","entityType":"t","observations":[]}]}`, "control character"},
	{"create_entities", `{"entities":[{"name":"` + strings.Repeat("n", 300) + `","entityType":"t","observations":[]}]}`, "more than the 256 allowed"},
	{"create_entities", `{"entities":[{"name":"a","entityType":"t","observations":[` + strings.Repeat(`"o",`, 1000) + `"o"]}]}`, "at most 1000"},
	{"create_entities", `{"entities":"alice"}`, "entities"},
	{"create_relations", `{"relations":[{"from":"a","to":"b"}]}`, "relationType"},
	{"create_relations", `{"relations":[{"from":"","to":"b","relationType":"r"}]}`, "must not be empty"},
	{"add_observations", `{"observations":[{"entityName":"a","contents":"x"}]}`, "contents"},
	{"delete_entities", `{"entityNames":[1,2]}`, "entityNames"},
	{"delete_observations", `{"deletions":{}}`, "deletions"},
	{"delete_relations", `{"relations":[null]}`, "relations"},
	{"search_nodes", `{"query":7}`, "query"},
	{"open_nodes", `{}`, "names"},
	{"add_memory", `{}`, "text"},
	{"add_memory", `{"text":"   "}`, "text is required"},
	{"add_memory", `{"text":"x","user_id":"a\u0000"}`, "control character"},
	{"add_memory", `{"text":"x","metadata":"not an object"}`, "metadata"},
	{"search_memories", `{"query":"x","limit":-1}`, "limit"},
	{"search_memories", `{"query":"x","filters":{"NOT":"a"}}`, "NOT must be an array"},
	{"search_memories", `{"query":"x","filters":{"created_at":{"gte":"yesterday"}}}`, "created_at"},
	{"search_memories", `{"query":"x","threshold":2}`, "threshold"},
	{"search_memories", `{"query":""}`, "query is required"},
	{"get_memories", `{"page":-1}`, "page"},
	{"get_memories", `{"page_size":201}`, "page_size"},
	{"get_memory_history", `{"memory_id":"no-such-memory"}`, "not found"},
	{"get_memory", `{"memory_id":""}`, "not found"},
	{"get_memory", `{"memory_id":"no-such-memory"}`, "not found"},
	{"update_memory", `{"memory_id":"no-such-memory","text":"x"}`, "not found"},
	{"delete_memory", `{"memory_id":["x"]}`, "memory_id"},
	{"get_event_status", `{"event_id":"` + strings.Repeat("e", 5000) + `"}`, "not found"},
}

func TestMalformedArgumentsGetMCPErrors(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("fuzzy", nil)
	for _, m := range malformed {
		t.Run(m.tool, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: m.tool, Arguments: json.RawMessage(m.args)})
			switch {
			case err != nil:
				if !strings.Contains(err.Error(), m.want) {
					t.Fatalf("%s %s: protocol error %v does not mention %q", m.tool, m.args, err, m.want)
				}
			case !res.IsError:
				t.Fatalf("%s %s: accepted: %s", m.tool, m.args, text(res))
			case !strings.Contains(text(res), m.want):
				t.Fatalf("%s %s: error %q does not mention %q", m.tool, m.args, text(res), m.want)
			}
		})
	}
	if g := readGraphOf(t, cs); len(g.Entities)+len(g.Relations) != 0 {
		t.Fatalf("malformed calls wrote: %+v", g)
	}
}

// fuzzTools are the tools the fuzz target calls, by index.
var fuzzTools = []string{"create_entities", "create_relations", "add_observations", "delete_entities",
	"delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes",
	"add_memory", "search_memories", "get_memory", "update_memory", "delete_memory", "get_event_status",
	"get_memories", "get_memory_history"}

// FuzzToolArguments sends arbitrary arguments to every tool through the real
// SDK server and the real governor: whatever comes in, the server answers
// (a result or an MCP error) and keeps answering. Its seeds run in every
// `go test`.
func FuzzToolArguments(f *testing.F) {
	for _, m := range malformed {
		f.Add(uint8(toolIndex(m.tool)), []byte(m.args))
	}
	for i, args := range []string{
		`{"entities":[{"name":"a","entityType":"t","observations":["x","y"]}]}`,
		`{"relations":[{"from":"a","to":"b","relationType":"r"}]}`,
		`{"observations":[{"entityName":"a","contents":["z"]}]}`,
		`{"entityNames":["a"]}`,
		`{"deletions":[{"entityName":"a","observations":["x"]}]}`,
		`{"relations":[{"from":"a","to":"b","relationType":"r"}]}`,
		`{}`,
		`{"query":"x"}`,
		`{"names":["a","b"]}`,
		`{"text":"publish nightly","messages":[{"role":"user","content":"hi"}],"run_id":"r"}`,
		`{"query":"","filters":{"AND":[{"user_id":"*"}]},"limit":1000}`,
		`{"memory_id":"slot_0"}`,
		`{"memory_id":"x","text":"y"}`,
		`{"memory_id":"x"}`,
		`{"event_id":"x"}`,
		`{"filters":{"OR":[{"user_id":"a"},{"agent_id":"b"}]},"page":2,"page_size":1}`,
		`{"memory_id":"slot_0"}`,
	} {
		f.Add(uint8(i), []byte(args))
	}
	f.Add(uint8(0), []byte(`not json`))
	f.Add(uint8(9), []byte(`[1,2,3]`))
	f.Add(uint8(10), []byte(`{"query":"x","filters":{"AND":[{"AND":[{"AND":[{"AND":[{"AND":[{"AND":[{"AND":[{"AND":[{"AND":[{"AND":[{"user_id":"a"}]}]}]}]}]}]}]}]}]}]}}`))

	fz := newEnv(f).inProcess() // one server and database for all iterations
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tool := fuzzTools[int(which)%len(fuzzTools)]
		var arguments any = json.RawMessage(args)
		if !json.Valid(args) {
			arguments = string(args) // the client can only send JSON; send the bytes as a string
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := fz.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
		if err == nil && !res.IsError && res.StructuredContent == nil {
			t.Fatalf("%s %q: a success without structured content", tool, args)
		}
		if _, err := fz.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err != nil {
			t.Fatalf("after %s %q the server no longer answers: %v", tool, args, err)
		}
	})
}

func toolIndex(name string) int {
	for i, n := range fuzzTools {
		if n == name {
			return i
		}
	}
	return 0
}
