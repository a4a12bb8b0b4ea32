package mcp

import "github.com/modelcontextprotocol/go-sdk/mcp"

// The nine tools of @modelcontextprotocol/server-memory, declared with the
// very input and output schemas (draft-07, as its zod schemas render them)
// and annotations it publishes, so a client configured for it sees the same
// contract. Only the descriptions of writing tools add one sentence about
// governance.

type schema = map[string]any

const draft07 = "http://json-schema.org/draft-07/schema#"

func str(description string) schema {
	s := schema{"type": "string"}
	if description != "" {
		s["description"] = description
	}
	return s
}

func array(items schema, description string) schema {
	s := schema{"type": "array", "items": items}
	if description != "" {
		s["description"] = description
	}
	return s
}

// object is an object schema; closed ones refuse other properties (zod
// renders output objects closed, input objects open).
func object(props schema, closed bool, required ...string) schema {
	s := schema{"type": "object", "properties": props, "required": required}
	if closed {
		s["additionalProperties"] = false
	}
	return s
}

// top marks a tool's root schema with its draft.
func top(s schema) schema {
	s["$schema"] = draft07
	return s
}

func entitySchema(closed bool) schema {
	return object(schema{
		"name":         str("The name of the entity"),
		"entityType":   str("The type of the entity"),
		"observations": array(str(""), "An array of observation contents associated with the entity"),
	}, closed, "name", "entityType", "observations")
}

func relationSchema(closed bool) schema {
	return object(schema{
		"from":         str("The name of the entity where the relation starts"),
		"to":           str("The name of the entity where the relation ends"),
		"relationType": str("The type of the relation"),
	}, closed, "from", "to", "relationType")
}

func graphOutput() schema {
	return top(object(schema{
		"entities":  array(entitySchema(true), ""),
		"relations": array(relationSchema(true), ""),
	}, true, "entities", "relations"))
}

func statusOutput() schema {
	return top(object(schema{"success": schema{"type": "boolean"}, "message": str("")}, true, "success", "message"))
}

func hints(readOnly, destructive, idempotent bool) *mcp.ToolAnnotations {
	openWorld := false
	return &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive,
		IdempotentHint: idempotent, OpenWorldHint: &openWorld}
}

const governedNote = " Every write is governed by memgate policy: a write may wait for human review" +
	" (the result says so, with its record id) before it becomes visible."

func createEntitiesTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "create_entities", Title: "Create Entities",
		Description:  "Create multiple new entities in the knowledge graph." + governedNote,
		InputSchema:  top(object(schema{"entities": array(entitySchema(false), "")}, false, "entities")),
		OutputSchema: top(object(schema{"entities": array(entitySchema(true), "")}, true, "entities")),
		Annotations:  hints(false, false, false),
	}
}

func createRelationsTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "create_relations", Title: "Create Relations",
		Description:  "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice." + governedNote,
		InputSchema:  top(object(schema{"relations": array(relationSchema(false), "")}, false, "relations")),
		OutputSchema: top(object(schema{"relations": array(relationSchema(true), "")}, true, "relations")),
		Annotations:  hints(false, false, false),
	}
}

func addObservationsTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "add_observations", Title: "Add Observations",
		Description: "Add new observations to existing entities in the knowledge graph." + governedNote,
		InputSchema: top(object(schema{"observations": array(object(schema{
			"entityName": str("The name of the entity to add the observations to"),
			"contents":   array(str(""), "An array of observation contents to add"),
		}, false, "entityName", "contents"), "")}, false, "observations")),
		OutputSchema: top(object(schema{"results": array(object(schema{
			"entityName":        str(""),
			"addedObservations": array(str(""), ""),
		}, true, "entityName", "addedObservations"), "")}, true, "results")),
		Annotations: hints(false, false, false),
	}
}

func deleteEntitiesTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "delete_entities", Title: "Delete Entities",
		Description:  "Delete multiple entities and their associated relations from the knowledge graph." + governedNote,
		InputSchema:  top(object(schema{"entityNames": array(str(""), "An array of entity names to delete")}, false, "entityNames")),
		OutputSchema: statusOutput(),
		Annotations:  hints(false, true, true),
	}
}

func deleteObservationsTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "delete_observations", Title: "Delete Observations",
		Description: "Delete specific observations from entities in the knowledge graph." + governedNote,
		InputSchema: top(object(schema{"deletions": array(object(schema{
			"entityName":   str("The name of the entity containing the observations"),
			"observations": array(str(""), "An array of observations to delete"),
		}, false, "entityName", "observations"), "")}, false, "deletions")),
		OutputSchema: statusOutput(),
		Annotations:  hints(false, true, true),
	}
}

func deleteRelationsTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "delete_relations", Title: "Delete Relations",
		Description:  "Delete multiple relations from the knowledge graph." + governedNote,
		InputSchema:  top(object(schema{"relations": array(relationSchema(false), "An array of relations to delete")}, false, "relations")),
		OutputSchema: statusOutput(),
		Annotations:  hints(false, true, true),
	}
}

func readGraphTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "read_graph", Title: "Read Graph",
		Description:  "Read the entire knowledge graph",
		InputSchema:  top(schema{"type": "object", "properties": schema{}}),
		OutputSchema: graphOutput(),
		Annotations:  hints(true, false, true),
	}
}

func searchNodesTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "search_nodes", Title: "Search Nodes",
		Description:  "Search for nodes in the knowledge graph based on a query",
		InputSchema:  top(object(schema{"query": str("The search query to match against entity names, types, and observation content")}, false, "query")),
		OutputSchema: graphOutput(),
		Annotations:  hints(true, false, true),
	}
}

func openNodesTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "open_nodes", Title: "Open Nodes",
		Description:  "Open specific nodes in the knowledge graph by their names",
		InputSchema:  top(object(schema{"names": array(str(""), "An array of entity names to retrieve")}, false, "names")),
		OutputSchema: graphOutput(),
		Annotations:  hints(true, false, true),
	}
}
