package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/memgate/memgate/memory"
)

// The knowledge graph of @modelcontextprotocol/server-memory, mapped onto
// records so that every part of it is governed like any other memory:
//
//   - an entity is a subject: its name is the subjectId, unchanged, so an MCP
//     entity "project-alpha" and a native or Mem0 memory about project-alpha
//     meet in the same subject;
//   - its type is a record in the slot (name, "entity.type");
//   - each observation is a record in the slot (name, "observation.<hash of
//     the text>"), so deleting an observation deletes exactly that slot;
//   - each relation is a record in the slot (from, "relation.<hash of type
//     and target>"), its value holding from, to and relationType.
//
// The graph an agent reads is built from the active layer only: a parked or
// rejected write never shows, and any other active memory of a subject
// appears as an observation of that entity.

// Fact types of the graph's slots.
const (
	factEntityType        = "entity.type"
	factObservationPrefix = "observation."
	factRelationPrefix    = "relation."
	// untypedEntity is the entityType shown for a subject that has memories
	// but no entity type record (e.g. one written over the native API).
	untypedEntity = "subject"
)

// Entity is a node of the knowledge graph (server-memory's shape).
type Entity struct {
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
}

// Relation is a directed edge of the knowledge graph.
type Relation struct {
	From         string `json:"from"`
	To           string `json:"to"`
	RelationType string `json:"relationType"`
}

// KnowledgeGraph is what read_graph, search_nodes and open_nodes return.
type KnowledgeGraph struct {
	Entities  []Entity   `json:"entities"`
	Relations []Relation `json:"relations"`
}

// entityTypeValue and observationValue keep the exact text the agent sent:
// summaries are trimmed by the governor, the graph must give back what came in.
type entityTypeValue struct {
	EntityType string `json:"entityType"`
}

type observationValue struct {
	Text string `json:"text"`
}

func shortHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// observationFactType names the slot of one observation of an entity.
func observationFactType(text string) string { return factObservationPrefix + shortHash(text) }

// relationFactType names the slot of a relation in its source's subject.
// A hash, not "relation.<type>.<to>": types and names may contain dots, and
// two different relations must never share a slot.
func relationFactType(relationType, to string) string {
	return factRelationPrefix + shortHash(relationType, to)
}

// entityTypeCandidate, observationCandidate and relationCandidate build the
// write for one part of the graph. Layer is left to policy (default
// knowledge), so an observation stating a strategy can be governed as one.
func entityTypeCandidate(name, entityType string) memory.Candidate {
	v, _ := json.Marshal(entityTypeValue{EntityType: entityType})
	return memory.Candidate{SubjectID: name, FactType: factEntityType,
		Summary: name + " is an entity of type " + entityType, Value: v}
}

func observationCandidate(entity, text string) memory.Candidate {
	v, _ := json.Marshal(observationValue{Text: text})
	return memory.Candidate{SubjectID: entity, FactType: observationFactType(text), Summary: text, Value: v}
}

func relationCandidate(r Relation) memory.Candidate {
	v, _ := json.Marshal(r)
	return memory.Candidate{SubjectID: r.From, FactType: relationFactType(r.RelationType, r.To),
		Summary: r.From + " " + r.RelationType + " " + r.To, Value: v}
}

// graphPart is what one active record contributes to the graph.
type graphPart struct {
	kind       partKind
	entityType string   // kind partEntityType
	text       string   // kind partObservation
	relation   Relation // kind partRelation
}

type partKind int

const (
	partObservation partKind = iota
	partEntityType
	partRelation
)

// partOf reads one active record as a part of the graph. Records the MCP
// tools did not write are observations: their summary is their text.
func partOf(r *memory.Record) graphPart {
	switch {
	case r.FactType == factEntityType:
		var v entityTypeValue
		if json.Unmarshal(r.Value, &v) == nil {
			return graphPart{kind: partEntityType, entityType: v.EntityType}
		}
	case strings.HasPrefix(r.FactType, factRelationPrefix):
		var v Relation
		if json.Unmarshal(r.Value, &v) == nil && v.From == r.SubjectID &&
			r.FactType == relationFactType(v.RelationType, v.To) {
			return graphPart{kind: partRelation, relation: v}
		}
	case strings.HasPrefix(r.FactType, factObservationPrefix):
		var v observationValue
		if json.Unmarshal(r.Value, &v) == nil && r.FactType == observationFactType(v.Text) {
			return graphPart{kind: partObservation, text: v.Text}
		}
	}
	text := r.Summary
	if text == "" && len(r.Value) > 0 {
		text = string(r.Value)
	}
	return graphPart{kind: partObservation, text: text}
}

// buildGraph turns active records into the knowledge graph. Entities come in
// the order they were created (their type record, else their first memory),
// observations and relations in the order they were written, as
// server-memory appends them.
func buildGraph(active []*memory.Record) KnowledgeGraph {
	recs := append([]*memory.Record(nil), active...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID }) // ULIDs: creation order
	type node struct {
		Entity
		order string
		typed bool
	}
	nodes := map[string]*node{}
	g := KnowledgeGraph{Entities: []Entity{}, Relations: []Relation{}}
	for _, r := range recs {
		p := partOf(r)
		if p.kind == partRelation {
			g.Relations = append(g.Relations, p.relation)
			continue
		}
		n := nodes[r.SubjectID]
		if n == nil {
			n = &node{Entity: Entity{Name: r.SubjectID, EntityType: untypedEntity, Observations: []string{}}, order: r.ID}
			nodes[r.SubjectID] = n
		}
		switch p.kind {
		case partEntityType:
			n.EntityType, n.typed, n.order = p.entityType, true, r.ID
		case partObservation:
			n.Observations = append(n.Observations, p.text)
		}
	}
	list := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		list = append(list, n)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].order < list[j].order })
	for _, n := range list {
		g.Entities = append(g.Entities, n.Entity)
	}
	return g
}

// searchGraph keeps the entities whose name, type or an observation contains
// the query (any case), and the relations touching them, as server-memory's
// search_nodes does.
func searchGraph(g KnowledgeGraph, query string) KnowledgeGraph {
	q := strings.ToLower(query)
	return subgraph(g, func(e Entity) bool {
		if strings.Contains(strings.ToLower(e.Name), q) || strings.Contains(strings.ToLower(e.EntityType), q) {
			return true
		}
		for _, o := range e.Observations {
			if strings.Contains(strings.ToLower(o), q) {
				return true
			}
		}
		return false
	})
}

// openGraph keeps the named entities and the relations touching them.
func openGraph(g KnowledgeGraph, names []string) KnowledgeGraph {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	return subgraph(g, func(e Entity) bool { return want[e.Name] })
}

func subgraph(g KnowledgeGraph, keep func(Entity) bool) KnowledgeGraph {
	out := KnowledgeGraph{Entities: []Entity{}, Relations: []Relation{}}
	kept := map[string]bool{}
	for _, e := range g.Entities {
		if keep(e) {
			out.Entities = append(out.Entities, e)
			kept[e.Name] = true
		}
	}
	for _, r := range g.Relations {
		if kept[r.From] || kept[r.To] {
			out.Relations = append(out.Relations, r)
		}
	}
	return out
}
