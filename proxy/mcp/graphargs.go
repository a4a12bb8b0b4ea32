package mcp

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/memgate/memgate/memory"
)

// Arguments of the graph tools, as the SDK decodes them after validating
// them against the schemas in graphschema.go, and the checks memgate adds:
// names become subject ids (bounded, printable), texts become summaries
// (bounded, valid UTF-8), and one call makes a bounded number of writes.
// A call that fails a check writes nothing.

// entityList and relationList are the bodies that carry a list of entities
// or of relations; create_entities answers with the first and
// create_relations with the second, in the shape their arguments have.
type entityList struct {
	Entities []Entity `json:"entities"`
}

type relationList struct {
	Relations []Relation `json:"relations"`
}

type createEntitiesArgs entityList
type createRelationsArgs relationList
type deleteRelationsArgs relationList

type observationAdd struct {
	EntityName string   `json:"entityName"`
	Contents   []string `json:"contents"`
}

type addObservationsArgs struct {
	Observations []observationAdd `json:"observations"`
}

type deleteEntitiesArgs struct {
	EntityNames []string `json:"entityNames"`
}

type observationDeletion struct {
	EntityName   string   `json:"entityName"`
	Observations []string `json:"observations"`
}

type deleteObservationsArgs struct {
	Deletions []observationDeletion `json:"deletions"`
}

type searchNodesArgs struct {
	Query string `json:"query"`
}

type openNodesArgs struct {
	Names []string `json:"names"`
}

type noArgs struct{}

// maxItemsPerCall bounds the names, texts or relations one call carries.
const maxItemsPerCall = 1000

// argError is a malformed-arguments error; the tool answers it as an MCP
// tool error and writes nothing.
func argError(format string, a ...any) error {
	return memory.Errorf(memory.EINVALID, "invalid arguments: "+format, a...)
}

// checkName checks an entity name, which becomes a subject id.
func checkName(field, v string) error {
	switch {
	case v == "":
		return argError("%s must not be empty", field)
	case len(v) > memory.MaxIDLen:
		return argError("%s is %d bytes, more than the %d allowed", field, len(v), memory.MaxIDLen)
	case !utf8.ValidString(v):
		return argError("%s is not valid UTF-8", field)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return argError("%s contains a control character", field)
		}
	}
	return nil
}

// checkText checks an observation, entity type or relation type.
func checkText(field, v string) error {
	if len(v) > memory.MaxSummaryBytes/2 {
		return argError("%s is %d bytes, more than the %d allowed", field, len(v), memory.MaxSummaryBytes/2)
	}
	if !utf8.ValidString(v) {
		return argError("%s is not valid UTF-8", field)
	}
	return nil
}

// checkTexts checks each text of a list, field naming the list.
func checkTexts(field string, texts []string) error {
	for i, v := range texts {
		if err := checkText(fmt.Sprintf("%s[%d]", field, i), v); err != nil {
			return err
		}
	}
	return nil
}

// counter bounds the items of one call.
type counter int

func (c *counter) add(n int) error {
	*c += counter(n)
	if *c > maxItemsPerCall {
		return argError("one call may carry at most %d items; split it", maxItemsPerCall)
	}
	return nil
}

// firstError returns the first of errs that is not nil: the checks of one
// item, all cheap, in the order their errors take precedence.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (a createEntitiesArgs) check() error {
	var n counter
	for i, e := range a.Entities {
		at := fmt.Sprintf("entities[%d]", i)
		if err := firstError(n.add(1+len(e.Observations)), checkName(at+".name", e.Name),
			checkText(at+".entityType", e.EntityType), checkTexts(at+".observations", e.Observations)); err != nil {
			return err
		}
	}
	return nil
}

func checkRelations(field string, rels []Relation) error {
	var n counter
	for i, r := range rels {
		at := fmt.Sprintf("%s[%d]", field, i)
		if err := firstError(n.add(1), checkName(at+".from", r.From), checkName(at+".to", r.To),
			checkText(at+".relationType", r.RelationType)); err != nil {
			return err
		}
	}
	return nil
}

func (a createRelationsArgs) check() error { return checkRelations("relations", a.Relations) }
func (a deleteRelationsArgs) check() error {
	var n counter
	return n.add(len(a.Relations))
}

func (a addObservationsArgs) check() error {
	var n counter
	for i, o := range a.Observations {
		at := fmt.Sprintf("observations[%d]", i)
		if err := firstError(n.add(1+len(o.Contents)), checkName(at+".entityName", o.EntityName),
			checkTexts(at+".contents", o.Contents)); err != nil {
			return err
		}
	}
	return nil
}

func (a deleteObservationsArgs) check() error {
	var n counter
	for _, d := range a.Deletions {
		if err := n.add(1 + len(d.Observations)); err != nil {
			return err
		}
	}
	return nil
}

// checkNames bounds a list of names to look up or delete. A name no entity
// can have (empty, too long) is not an error: like server-memory, lookups
// and deletions of unknown names find nothing.
func checkNames(names []string) error {
	var n counter
	return n.add(len(names))
}

func (a deleteEntitiesArgs) check() error { return checkNames(a.EntityNames) }
func (a openNodesArgs) check() error      { return checkNames(a.Names) }

func (a searchNodesArgs) check() error { return checkText("query", a.Query) }
