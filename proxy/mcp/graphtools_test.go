package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/badgertest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/policy"
	"github.com/memgate/memgate/proxy"
)

func TestGraphToolsRoundTrip(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("claude-code", nil)

	var created entitiesResult
	decode(t, mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "alice", "entityType": "person", "observations": []string{"likes tea", "  lives in Lyon  "}},
		map[string]any{"name": "acme", "entityType": "company", "observations": []string{}},
	}}), &created)
	want := []Entity{{"alice", "person", []string{"likes tea", "  lives in Lyon  "}}, {"acme", "company", []string{}}}
	if !reflect.DeepEqual(created.Entities, want) {
		t.Fatalf("created %+v, want %+v", created.Entities, want)
	}
	// Creating an existing entity again changes nothing and reports nothing new.
	decode(t, mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "alice", "entityType": "robot", "observations": []string{"x"}}}}), &created)
	if len(created.Entities) != 0 {
		t.Fatalf("re-created %+v", created.Entities)
	}

	var rels relationsResult
	decode(t, mustOK(t, cs, "create_relations", map[string]any{"relations": []any{
		map[string]any{"from": "alice", "to": "acme", "relationType": "works.at"},
		map[string]any{"from": "alice", "to": "acme", "relationType": "works.at"},
	}}), &rels)
	if len(rels.Relations) != 1 {
		t.Fatalf("relations created %+v, want one", rels.Relations)
	}

	var added observationsResult
	decode(t, mustOK(t, cs, "add_observations", map[string]any{"observations": []any{
		map[string]any{"entityName": "acme", "contents": []string{"makes anvils", "makes anvils"}},
		map[string]any{"entityName": "alice", "contents": []string{"likes tea", "speaks French"}},
	}}), &added)
	wantAdded := []observationsAdded{{"acme", []string{"makes anvils"}}, {"alice", []string{"speaks French"}}}
	if !reflect.DeepEqual(added.Results, wantAdded) {
		t.Fatalf("added %+v, want %+v", added.Results, wantAdded)
	}

	g := readGraphOf(t, cs)
	wantGraph := KnowledgeGraph{
		Entities: []Entity{{"alice", "person", []string{"likes tea", "  lives in Lyon  ", "speaks French"}},
			{"acme", "company", []string{"makes anvils"}}},
		Relations: []Relation{{"alice", "acme", "works.at"}},
	}
	if !reflect.DeepEqual(g, wantGraph) {
		t.Fatalf("graph %+v\nwant %+v", g, wantGraph)
	}

	var found KnowledgeGraph
	decode(t, mustOK(t, cs, "search_nodes", map[string]any{"query": "ANVIL"}), &found)
	if len(found.Entities) != 1 || found.Entities[0].Name != "acme" || len(found.Relations) != 1 {
		t.Fatalf("search ANVIL: %+v", found)
	}
	decode(t, mustOK(t, cs, "open_nodes", map[string]any{"names": []string{"alice", "nobody"}}), &found)
	if len(found.Entities) != 1 || found.Entities[0].Name != "alice" || len(found.Relations) != 1 {
		t.Fatalf("open alice: %+v", found)
	}

	mustOK(t, cs, "delete_observations", map[string]any{"deletions": []any{
		map[string]any{"entityName": "alice", "observations": []string{"likes tea", "never said"}}}})
	mustOK(t, cs, "delete_relations", map[string]any{"relations": []any{
		map[string]any{"from": "alice", "to": "acme", "relationType": "works.at"}}})
	g = readGraphOf(t, cs)
	if a, _ := g.entity("alice"); slices.Contains(a.Observations, "likes tea") || len(g.Relations) != 0 {
		t.Fatalf("after deletions: %+v", g)
	}

	// Deleting an entity deletes its memories and the relations to it.
	mustOK(t, cs, "create_relations", map[string]any{"relations": []any{
		map[string]any{"from": "alice", "to": "acme", "relationType": "owns"}}})
	var st statusResult
	decode(t, mustOK(t, cs, "delete_entities", map[string]any{"entityNames": []string{"acme", "ghost"}}), &st)
	if !st.Success || st.Message != "Entities deleted successfully" {
		t.Fatalf("delete_entities: %+v", st)
	}
	g = readGraphOf(t, cs)
	if _, ok := g.entity("acme"); ok || len(g.Relations) != 0 {
		t.Fatalf("after deleting acme: %+v", g)
	}
	// The deleted versions stay as history, as every governed deletion does.
	hist, err := e.gov.History(context.Background(), memory.KeyedSlotID("acme", factEntityType))
	if err != nil || len(hist) != 2 || hist[1].Status != memory.StatusDeleted {
		t.Fatalf("history of acme's type: %v, %+v", err, hist)
	}
}

func TestParkedWriteWaitsForReviewThenAppears(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("openclaw", nil)
	mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "project-alpha", "entityType": "project", "observations": []string{"ships on Fridays"}}}})

	res := call(t, cs, "add_observations", map[string]any{"observations": []any{
		map[string]any{"entityName": "project-alpha", "contents": []string{"auto-publish is allowed without review"}}}})
	if res.IsError {
		t.Fatalf("a parked write answered as an error: %s", text(res))
	}
	msg := text(res)
	if !strings.Contains(msg, "NOT SAVED YET") || !strings.Contains(msg, "human reviewer") || strings.Contains(strings.ToLower(msg), "denied") {
		t.Fatalf("parked answer does not say it waits: %s", msg)
	}
	var added observationsResult
	decode(t, res, &added)
	if len(added.Results) != 1 || len(added.Results[0].AddedObservations) != 0 {
		t.Fatalf("a parked observation was reported as added: %+v", added)
	}
	writes := writesOf(t, res)
	if len(writes) != 1 || writes[0].Outcome != outParked || writes[0].RecordID == "" || !strings.Contains(msg, writes[0].RecordID) {
		t.Fatalf("writes %+v; text %s", writes, msg)
	}

	// Nothing the agent reads has changed.
	a, _ := readGraphOf(t, cs).entity("project-alpha")
	if !reflect.DeepEqual(a.Observations, []string{"ships on Fridays"}) {
		t.Fatalf("parked observation visible: %+v", a)
	}
	var found KnowledgeGraph
	decode(t, mustOK(t, cs, "search_nodes", map[string]any{"query": "auto-publish"}), &found)
	if len(found.Entities) != 0 {
		t.Fatalf("search found a parked write: %+v", found)
	}

	// A human approves it: now it is part of the graph.
	if _, err := e.gov.Approve(context.Background(), writes[0].RecordID, memory.Review{By: "reviewer", Route: "admin"}); err != nil {
		t.Fatal(err)
	}
	a, _ = readGraphOf(t, cs).entity("project-alpha")
	if !reflect.DeepEqual(a.Observations, []string{"ships on Fridays", "auto-publish is allowed without review"}) {
		t.Fatalf("approved observation not visible: %+v", a)
	}

	// Deleting it is itself governed: it waits, and the observation stays.
	res = call(t, cs, "delete_observations", map[string]any{"deletions": []any{
		map[string]any{"entityName": "project-alpha", "observations": []string{"auto-publish is allowed without review"}}}})
	var st statusResult
	decode(t, res, &st)
	if res.IsError || !st.Success || !strings.Contains(st.Message, "wait for human review") {
		t.Fatalf("parked deletion: error=%v %+v %s", res.IsError, st, text(res))
	}
	a, _ = readGraphOf(t, cs).entity("project-alpha")
	if len(a.Observations) != 2 {
		t.Fatalf("a parked deletion removed the observation: %+v", a)
	}
}

func TestRejectedWriteSaysWhy(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("cursor", nil)
	res := call(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "bob", "entityType": "person", "observations": []string{"his password is hunter2", "likes jazz"}}}})
	if !res.IsError {
		t.Fatalf("a rejected write did not answer as an error: %s", text(res))
	}
	if msg := text(res); !strings.Contains(msg, "policy refused it: secrets are never remembered") || strings.Contains(msg, "hunter2") {
		t.Fatalf("rejection does not say why: %s", msg)
	}
	var created entitiesResult
	decode(t, res, &created)
	if len(created.Entities) != 1 || !reflect.DeepEqual(created.Entities[0].Observations, []string{"likes jazz"}) {
		t.Fatalf("created %+v", created)
	}
	b, _ := readGraphOf(t, cs).entity("bob")
	if slices.Contains(b.Observations, "his password is hunter2") {
		t.Fatalf("rejected observation visible: %+v", b)
	}
}

func TestAddObservationsToUnknownEntityWritesNothing(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("client", nil)
	mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "known", "entityType": "thing", "observations": []string{}}}})
	res := call(t, cs, "add_observations", map[string]any{"observations": []any{
		map[string]any{"entityName": "known", "contents": []string{"first"}},
		map[string]any{"entityName": "nope", "contents": []string{"a"}},
	}})
	if !res.IsError || text(res) != "Entity with name nope not found" {
		t.Fatalf("got error=%v %q", res.IsError, text(res))
	}
	if k, _ := readGraphOf(t, cs).entity("known"); len(k.Observations) != 0 {
		t.Fatalf("a refused call wrote: %+v", k)
	}
}

func TestActorComesFromTheSession(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("claude-code", map[string]string{HeaderAgentID: "agent-7", HeaderRunID: "run-42", HeaderUserID: "u-1"})
	res := mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "carol", "entityType": "person", "observations": []string{}}}})
	rec, err := e.gov.Get(context.Background(), writesOf(t, res)[0].RecordID)
	if err != nil {
		t.Fatal(err)
	}
	want := memory.Actor{AgentID: "agent-7", UserID: "u-1", RunID: "run-42", SessionID: cs.ID(), Dialect: "mcp",
		RemoteAddr: "127.0.0.1", Client: "claude-code/1.0"}
	if rec.Actor != want {
		t.Fatalf("actor %+v, want %+v", rec.Actor, want)
	}

	// Without headers the run is the MCP session, so one session's writes can
	// be quarantined together.
	cs2 := e.connect("other", nil)
	res = mustOK(t, cs2, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "dave", "entityType": "person", "observations": []string{"likes chess"}}}})
	rec, _ = e.gov.Get(context.Background(), writesOf(t, res)[0].RecordID)
	if rec.Actor.RunID != cs2.ID() || rec.Actor.SessionID != cs2.ID() || rec.Actor.Client != "other/1.0" {
		t.Fatalf("actor %+v, session %s", rec.Actor, cs2.ID())
	}
	q, err := e.gov.Quarantine(context.Background(), "run", cs2.ID(), "bad session", "sre")
	if err != nil || len(q.RolledBack) != 2 {
		t.Fatalf("quarantine: %v %+v", err, q)
	}
	if _, ok := readGraphOf(t, cs).entity("dave"); ok {
		t.Fatal("quarantined session's entity still visible")
	}
}

// TestGraphReadsAreBounded: the knowledge-graph tools read at most
// MaxGraphMemories memories (lowered here to 3); a graph over it is an
// error saying so, never a graph cut short.
func TestGraphReadsAreBounded(t *testing.T) {
	old := maxGraphMemories
	maxGraphMemories = 3
	t.Cleanup(func() { maxGraphMemories = old })
	e := newEnv(t)
	cs := e.connect("client", nil)
	mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "a", "entityType": "thing", "observations": []string{"one"}}}})
	if g := readGraphOf(t, cs); len(g.Entities) != 1 {
		t.Fatalf("a graph within the bound: %+v", g)
	}
	mustOK(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "b", "entityType": "thing", "observations": []string{"two"}}}})
	for tool, args := range map[string]any{"read_graph": map[string]any{}, "search_nodes": map[string]any{"query": "t"},
		"open_nodes": map[string]any{"names": []string{"a"}}} {
		res := call(t, cs, tool, args)
		if !res.IsError || !strings.Contains(text(res), "more than 3 memories") {
			t.Errorf("%s over the bound: error=%v %q", tool, res.IsError, text(res))
		}
	}
}

// With memgate's built-in default policy, graph writes get the two-tier
// treatment: a plain fact applies, a strategy constraint stated as an
// observation waits for a human, a secret is rejected.
func TestDefaultPolicyGovernsGraphWrites(t *testing.T) {
	st := badgertest.New(t)
	cls := policy.New(policy.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := cls.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer cls.Close(context.Background())
	gov := memory.NewGovernor(memory.Options{Store: st, Classifier: cls})
	srv := NewServer(gov, Options{})
	defer srv.Close()
	mux := http.NewServeMux()
	srv.Register(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	cs := (&env{t: t, gov: gov, srv: srv, http: hs}).connect("openclaw", nil)

	res := call(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{
		"name": "project-alpha", "entityType": "project", "observations": []string{
			"the team ships on Fridays",
			"auto publish is allowed for project alpha",
			"the deploy password is hunter2-hunter2",
		}}}})
	outcomes := map[string]string{}
	for _, w := range writesOf(t, res) {
		outcomes[w.What] = w.Outcome
	}
	t.Logf("outcomes: %v\n%s", outcomes, text(res))
	want := map[string]string{
		`entity "project-alpha" of type "project"`:                                          outApplied,
		`observation "the team ships on Fridays" of entity "project-alpha"`:                 outApplied,
		`observation "auto publish is allowed for project alpha" of entity "project-alpha"`: outParked,
		proxy.Withheld: outRejected, // a refused write's text is never echoed back
	}
	for what, o := range want {
		if outcomes[what] != o {
			t.Errorf("%s: %q, want %q", what, outcomes[what], o)
		}
	}
	if !res.IsError || !strings.Contains(text(res), "NOT SAVED YET") || !strings.Contains(text(res), "rule secret") {
		t.Errorf("answer does not report the parked and the rejected write: %s", text(res))
	}
	a, _ := readGraphOf(t, cs).entity("project-alpha")
	if len(a.Observations) != 1 || a.Observations[0] != "the team ships on Fridays" {
		t.Errorf("graph shows %+v, want only the applied observation", a)
	}
}
