package mcp

import (
	"reflect"
	"testing"

	"github.com/memgate/memgate/memory"
)

func TestBuildGraph(t *testing.T) {
	rec := func(id string, c memory.Candidate) *memory.Record {
		return &memory.Record{ID: id, SubjectID: c.SubjectID, FactType: c.FactType, Summary: c.Summary, Value: c.Value}
	}
	tests := []struct {
		name   string
		active []*memory.Record
		want   KnowledgeGraph
	}{
		{"empty", nil, KnowledgeGraph{Entities: []Entity{}, Relations: []Relation{}}},
		{"entities in creation order, observations in write order", []*memory.Record{
			rec("04", observationCandidate("b", "second")),
			rec("02", entityTypeCandidate("b", "thing")),
			rec("01", entityTypeCandidate("a", "person")),
			rec("03", observationCandidate("b", "first")),
		}, KnowledgeGraph{Entities: []Entity{{"a", "person", []string{}}, {"b", "thing", []string{"first", "second"}}}, Relations: []Relation{}}},
		{"relations do not make entities", []*memory.Record{
			rec("01", relationCandidate(Relation{From: "x", To: "y", RelationType: "knows"})),
		}, KnowledgeGraph{Entities: []Entity{}, Relations: []Relation{{"x", "y", "knows"}}}},
		{"other memories of a subject are its observations", []*memory.Record{
			rec("01", memory.Candidate{SubjectID: "project-alpha", FactType: "publish.auto", Summary: "auto-publish is off"}),
			rec("02", memory.Candidate{SubjectID: "project-alpha", FactType: "limits", Value: []byte(`{"max":3}`)}),
		}, KnowledgeGraph{Entities: []Entity{{"project-alpha", untypedEntity, []string{"auto-publish is off", `{"max":3}`}}}, Relations: []Relation{}}},
		{"a forged relation value is an observation", []*memory.Record{
			rec("01", memory.Candidate{SubjectID: "a", FactType: "relation.x", Summary: "a likes b",
				Value: []byte(`{"from":"z","to":"b","relationType":"likes"}`)}),
		}, KnowledgeGraph{Entities: []Entity{{"a", untypedEntity, []string{"a likes b"}}}, Relations: []Relation{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildGraph(tt.active); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSlotNamesDoNotCollide(t *testing.T) {
	// Dots in types and names must not make two relations share a slot.
	a, b := relationFactType("a.b", "c"), relationFactType("a", "b.c")
	if a == b {
		t.Fatalf("relation slots collide: %s", a)
	}
	if observationFactType("x") == observationFactType("x ") {
		t.Fatal("observations differing in spaces share a slot")
	}
}
