package mcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/memory"
)

func (s *Server) addGraphTools() {
	mcp.AddTool(s.srv, createEntitiesTool(), s.createEntities)
	mcp.AddTool(s.srv, createRelationsTool(), s.createRelations)
	mcp.AddTool(s.srv, addObservationsTool(), s.addObservations)
	mcp.AddTool(s.srv, deleteEntitiesTool(), s.deleteEntities)
	mcp.AddTool(s.srv, deleteObservationsTool(), s.deleteObservations)
	mcp.AddTool(s.srv, deleteRelationsTool(), s.deleteRelations)
	mcp.AddTool(s.srv, readGraphTool(), s.readGraph)
	mcp.AddTool(s.srv, searchNodesTool(), s.searchNodes)
	mcp.AddTool(s.srv, openNodesTool(), s.openNodes)
}

type entitiesResult = entityList
type relationsResult = relationList

type observationsAdded struct {
	EntityName        string   `json:"entityName"`
	AddedObservations []string `json:"addedObservations"`
}

type observationsResult struct {
	Results []observationsAdded `json:"results"`
}

type statusResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// MaxGraphMemories bounds the memories one knowledge-graph tool reads:
// server-memory's tools answer the whole graph (read_graph) or search it
// whole (search_nodes, open_nodes), with no paging in their schema. A graph
// over it is refused, never cut short; the Mem0 tools page.
const MaxGraphMemories = 10_000

// maxGraphMemories is MaxGraphMemories, lowered by tests.
var maxGraphMemories = MaxGraphMemories

// active returns the active records of one subject ("" = all), at most
// MaxGraphMemories of them. Errors: ETOOLARGE past that.
func (s *Server) active(ctx context.Context, subject string) ([]*memory.Record, error) {
	recs, err := s.gov.List(ctx, memory.ListFilter{SubjectID: subject, Limit: maxGraphMemories + 1})
	if err != nil {
		return nil, fmt.Errorf("reading the active layer: %w", err)
	}
	if len(recs) > maxGraphMemories {
		return nil, memory.Errorf(memory.ETOOLARGE, "the knowledge graph holds more than %d memories, more than one call reads; "+
			"use get_memories or search_memories, which page and filter", maxGraphMemories)
	}
	return recs, nil
}

// hasActive reports whether a slot has an active version.
func (s *Server) hasActive(ctx context.Context, slotID string) (bool, error) {
	r, err := s.gov.Get(ctx, slotID)
	switch {
	case memory.ErrorCode(err) == memory.ENOTFOUND:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading slot %s: %w", slotID, err)
	}
	return r.Status == memory.StatusActive, nil
}

// createEntities creates the entities that do not exist yet (an entity
// exists once its type is active), as server-memory does, and answers with
// those whose type applied, holding the observations that applied.
func (s *Server) createEntities(ctx context.Context, req *mcp.CallToolRequest, in createEntitiesArgs) (*mcp.CallToolResult, entitiesResult, error) {
	out := entitiesResult{Entities: []Entity{}}
	if err := in.check(); err != nil {
		return nil, out, toolError(s.log, err)
	}
	actor, rep, seen := actorOf(req), &report{}, map[string]bool{}
	for _, e := range in.Entities {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		exists, err := s.hasActive(ctx, s.gov.SlotID(ctx, e.Name, factEntityType))
		if err != nil {
			return nil, out, toolError(s.log, err)
		} else if exists {
			continue
		}
		res, err := s.submit(ctx, rep, actor, fmt.Sprintf("entity %q of type %q", e.Name, e.EntityType), entityTypeCandidate(e.Name, e.EntityType))
		if err != nil {
			return nil, out, toolError(s.log, err)
		}
		created := Entity{Name: e.Name, EntityType: e.EntityType, Observations: []string{}}
		for _, o := range e.Observations {
			ores, err := s.submit(ctx, rep, actor, fmt.Sprintf("observation %q of entity %q", o, e.Name), observationCandidate(e.Name, o))
			if err != nil {
				return nil, out, toolError(s.log, err)
			}
			if visible(ores) {
				created.Observations = append(created.Observations, o)
			}
		}
		if res != nil && res.Outcome == memory.OutcomeApplied {
			out.Entities = append(out.Entities, created)
		}
	}
	return rep.result(indentJSON(out.Entities)), out, nil
}

// visible reports whether a write is now part of what the agent reads.
func visible(res *memory.SubmitResult) bool {
	return res != nil && (res.Outcome == memory.OutcomeApplied || res.Outcome == memory.OutcomeUnchanged)
}

// createRelations writes the relations not already in the graph and answers
// with those that applied.
func (s *Server) createRelations(ctx context.Context, req *mcp.CallToolRequest, in createRelationsArgs) (*mcp.CallToolResult, relationsResult, error) {
	out := relationsResult{Relations: []Relation{}}
	if err := in.check(); err != nil {
		return nil, out, toolError(s.log, err)
	}
	actor, rep, seen := actorOf(req), &report{}, map[Relation]bool{}
	for _, r := range in.Relations {
		if seen[r] {
			continue
		}
		seen[r] = true
		exists, err := s.hasActive(ctx, s.gov.SlotID(ctx, r.From, relationFactType(r.RelationType, r.To)))
		if err != nil {
			return nil, out, toolError(s.log, err)
		} else if exists {
			continue
		}
		res, err := s.submit(ctx, rep, actor, fmt.Sprintf("relation %q %s %q", r.From, r.RelationType, r.To), relationCandidate(r))
		if err != nil {
			return nil, out, toolError(s.log, err)
		}
		if res != nil && res.Outcome == memory.OutcomeApplied {
			out.Relations = append(out.Relations, r)
		}
	}
	return rep.result(indentJSON(out.Relations)), out, nil
}

// addObservations adds observations to entities that exist; like
// server-memory it refuses the whole call, writing nothing, when one of the
// entities does not exist.
func (s *Server) addObservations(ctx context.Context, req *mcp.CallToolRequest, in addObservationsArgs) (*mcp.CallToolResult, observationsResult, error) {
	out := observationsResult{Results: []observationsAdded{}}
	if err := in.check(); err != nil {
		return nil, out, toolError(s.log, err)
	}
	have := map[string]*observations{} // entity -> the observations it has
	for _, o := range in.Observations {
		if have[o.EntityName] != nil {
			continue
		}
		recs, err := s.active(ctx, o.EntityName)
		if err != nil {
			return nil, out, toolError(s.log, err)
		}
		if len(buildGraph(recs).Entities) == 0 {
			return nil, out, toolError(s.log, memory.Errorf(memory.ENOTFOUND, "Entity with name %s not found", o.EntityName))
		}
		have[o.EntityName] = observationsOf(recs)
	}
	actor, rep := actorOf(req), &report{}
	for _, o := range in.Observations {
		added := observationsAdded{EntityName: o.EntityName, AddedObservations: []string{}}
		obs := have[o.EntityName]
		for _, text := range o.Contents {
			if obs.has(text) {
				continue
			}
			c := observationCandidate(o.EntityName, text)
			c.Related = obs.related(text)
			res, err := s.submit(ctx, rep, actor, fmt.Sprintf("observation %q of entity %q", text, o.EntityName), c)
			if err != nil {
				return nil, out, toolError(s.log, err)
			}
			if res != nil && res.Outcome == memory.OutcomeApplied {
				added.AddedObservations = append(added.AddedObservations, text)
				obs.applied(res.Record, res.Replaced)
			}
		}
		out.Results = append(out.Results, added)
	}
	return rep.result(indentJSON(out.Results)), out, nil
}

// deletion is one slot to delete, with words for the agent.
type deletion struct {
	slotID, what, summary string
}

// deleteAll submits the deletions, each slot once, and answers in
// server-memory's {success, message} shape.
func (s *Server) deleteAll(ctx context.Context, req *mcp.CallToolRequest, dels []deletion, done string) (*mcp.CallToolResult, statusResult, error) {
	actor, rep, seen := actorOf(req), &report{}, map[string]bool{}
	for _, d := range dels {
		if seen[d.slotID] {
			continue
		}
		seen[d.slotID] = true
		c := memory.Candidate{Op: memory.OpDelete, SlotID: d.slotID, Summary: d.summary}
		if _, err := s.submit(ctx, rep, actor, d.what, c); err != nil {
			return nil, statusResult{}, toolError(s.log, err)
		}
	}
	out := statusResult{Success: !rep.refused(), Message: done}
	switch {
	case rep.refused():
		out.Message = "Some deletions were not made; see below."
	case rep.count(outParked) > 0:
		out.Message = fmt.Sprintf("%d of %d deletion(s) applied; %d wait for human review.",
			rep.count(outApplied), len(rep.writes), rep.count(outParked))
	}
	return rep.result(out.Message), out, nil
}

// describe names what deleting an active record removes from the graph.
func describe(r *memory.Record) string {
	p := partOf(r)
	switch p.kind {
	case partEntityType:
		return fmt.Sprintf("entity %q", r.SubjectID)
	case partRelation:
		return fmt.Sprintf("relation %q %s %q", p.relation.From, p.relation.RelationType, p.relation.To)
	}
	return fmt.Sprintf("observation %q of entity %q", p.text, r.SubjectID)
}

// deleteEntities deletes every active memory of the entities (their type
// and observations, and any other memory of the subject) and the relations
// from or to them.
func (s *Server) deleteEntities(ctx context.Context, req *mcp.CallToolRequest, in deleteEntitiesArgs) (*mcp.CallToolResult, statusResult, error) {
	if err := in.check(); err != nil {
		return nil, statusResult{}, toolError(s.log, err)
	}
	doomed := map[string]bool{}
	for _, n := range in.EntityNames {
		doomed[n] = true
	}
	all, err := s.active(ctx, "")
	if err != nil {
		return nil, statusResult{}, toolError(s.log, err)
	}
	var dels []deletion
	for _, r := range all {
		p := partOf(r)
		if doomed[r.SubjectID] || p.kind == partRelation && doomed[p.relation.To] {
			dels = append(dels, deletion{slotID: r.SlotID, what: "delete " + describe(r), summary: r.Summary})
		}
	}
	return s.deleteAll(ctx, req, dels, "Entities deleted successfully")
}

// deleteObservations deletes the named observations of each entity;
// observations it does not have are ignored.
func (s *Server) deleteObservations(ctx context.Context, req *mcp.CallToolRequest, in deleteObservationsArgs) (*mcp.CallToolResult, statusResult, error) {
	if err := in.check(); err != nil {
		return nil, statusResult{}, toolError(s.log, err)
	}
	var dels []deletion
	for _, d := range in.Deletions {
		if checkName("entityName", d.EntityName) != nil {
			continue // no entity can have this name
		}
		texts := map[string]bool{}
		for _, o := range d.Observations {
			texts[o] = true
		}
		recs, err := s.active(ctx, d.EntityName)
		if err != nil {
			return nil, statusResult{}, toolError(s.log, err)
		}
		for _, r := range recs {
			if p := partOf(r); p.kind == partObservation && texts[p.text] {
				dels = append(dels, deletion{slotID: r.SlotID, what: "delete " + describe(r), summary: r.Summary})
			}
		}
	}
	return s.deleteAll(ctx, req, dels, "Observations deleted successfully")
}

// deleteRelations deletes the named relations; unknown ones are ignored.
func (s *Server) deleteRelations(ctx context.Context, req *mcp.CallToolRequest, in deleteRelationsArgs) (*mcp.CallToolResult, statusResult, error) {
	if err := in.check(); err != nil {
		return nil, statusResult{}, toolError(s.log, err)
	}
	var dels []deletion
	for _, rel := range in.Relations {
		if checkName("from", rel.From) != nil {
			continue
		}
		slot := s.gov.SlotID(ctx, rel.From, relationFactType(rel.RelationType, rel.To))
		exists, err := s.hasActive(ctx, slot)
		if err != nil {
			return nil, statusResult{}, toolError(s.log, err)
		}
		if exists {
			dels = append(dels, deletion{slotID: slot, summary: rel.From + " " + rel.RelationType + " " + rel.To,
				what: fmt.Sprintf("delete relation %q %s %q", rel.From, rel.RelationType, rel.To)})
		}
	}
	return s.deleteAll(ctx, req, dels, "Relations deleted successfully")
}

// graph reads the knowledge graph from the active layer.
func (s *Server) graph(ctx context.Context) (KnowledgeGraph, error) {
	recs, err := s.active(ctx, "")
	if err != nil {
		return KnowledgeGraph{}, err
	}
	return buildGraph(recs), nil
}

func graphResult(g KnowledgeGraph) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: indentJSON(g)}}}
}

func (s *Server) readGraph(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, KnowledgeGraph, error) {
	g, err := s.graph(ctx)
	if err != nil {
		return nil, KnowledgeGraph{}, toolError(s.log, err)
	}
	return graphResult(g), g, nil
}

func (s *Server) searchNodes(ctx context.Context, _ *mcp.CallToolRequest, in searchNodesArgs) (*mcp.CallToolResult, KnowledgeGraph, error) {
	if err := in.check(); err != nil {
		return nil, KnowledgeGraph{}, toolError(s.log, err)
	}
	g, err := s.graph(ctx)
	if err != nil {
		return nil, KnowledgeGraph{}, toolError(s.log, err)
	}
	g = searchGraph(g, in.Query)
	return graphResult(g), g, nil
}

func (s *Server) openNodes(ctx context.Context, _ *mcp.CallToolRequest, in openNodesArgs) (*mcp.CallToolResult, KnowledgeGraph, error) {
	if err := in.check(); err != nil {
		return nil, KnowledgeGraph{}, toolError(s.log, err)
	}
	g, err := s.graph(ctx)
	if err != nil {
		return nil, KnowledgeGraph{}, toolError(s.log, err)
	}
	g = openGraph(g, in.Names)
	return graphResult(g), g, nil
}
