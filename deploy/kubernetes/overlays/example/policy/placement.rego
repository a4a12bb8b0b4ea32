# Placement: where a free-text memory goes. Mem0 and MCP writes carry no
# layer or fact type; the sidecar asks data.memgate.placement for the layer,
# fact type, subject and structured value the text implies, fills in what
# the writer left empty, and then asks data.memgate.decision about the
# placed write.
package memgate

import data.memgate_config as config

placement := {
	"layer": layer,
	"factType": fact_type,
	"subjectId": subject_id,
	"value": value,
}

# The text's topic, input.candidate.text_first.topic, is the first topic of
# config.features.first.topic (they are listed by priority) whose keywords
# the text contains.

# layer: the writer's, else the text's topic's, else knowledge.
layer := l if {
	l := input.candidate.layer
	l != ""
} else := l if {
	l := config.topics[input.candidate.text_first.topic].layer
} else := "knowledge"

# fact_type: the writer's; else, for free text, its text's topic when that
# topic names a slot of the write's layer.
fact_type := t if {
	t := input.candidate.factType
	t != ""
} else := t if {
	t := input.candidate.text_first.topic
	spec := config.topics[t]
	spec.slot
	spec.layer == layer
} else := ""

# subject_id names the project the text mentions: "project alpha", "项目alpha"
# and then "alpha project" all give "project-alpha" (the subject capture of
# config.features.captures). The sidecar uses it only when the writer
# named no subject of its own, so it is derived only then (no subject, or
# the subject the writer's scope defaults to).
default subject_id := ""

subject_id := concat("", [config.subject_prefix, name]) if {
	name := input.candidate.text_captures.subject # most texts name none: stop here
	subject_from_scope
}

subject_from_scope if input.candidate.subjectId == ""

subject_from_scope if input.candidate.subjectId == input.candidate.scope[_]

# value is the structured value the text states for its topic, e.g.
# {"enabled": false}, so overrides compare facts rather than wording. It is
# derived only when the writer gave none.
default value := null

value := {kind: v} if {
	kind := config.topics[fact_type].value # most topics have none: stop here
	not candidate_has_value
	v := stated_value(config.topics[fact_type])
}

# stated_value: a negation wins over an affirmation; else the topic's default.
stated_value(spec) := false if {
	input.candidate.text_features.negation
} else if {
	input.candidate.text_features.affirmation
} else := spec.value_default
