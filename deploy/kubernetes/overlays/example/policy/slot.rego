# Slot derivation: gives free-text memories (Mem0 and MCP writes carry no
# layer or fact type) a layer, a fact type, a subject and a structured value.
package memgate

# text_topic is the highest-priority topic whose keywords the text contains.
text_topic := min({[p, t] | some t, _ in text_features; p := data.memgate.config.topics[t].priority})[1]

# layer: the writer's, else the text's topic's, else knowledge.
layer := l if {
	l := input.candidate.layer
	l != ""
} else := l if {
	l := data.memgate.config.topics[text_topic].layer
} else := "knowledge"

# topic: the configured topic this write is about. A writer's fact type
# names it directly; free text gets its text's topic when that topic names a
# slot of the write's layer.
topic := t if {
	t := input.candidate.factType
	data.memgate.config.topics[t]
} else := text_topic if {
	not input.candidate.factType
	spec := data.memgate.config.topics[text_topic]
	spec.slot
	spec.layer == layer
}

default fact_type := ""

fact_type := t if {
	t := input.candidate.factType
	t != ""
} else := topic

# subject_id names the project the text mentions: "project alpha", "项目alpha"
# and then "alpha project" all give "project-alpha". The sidecar uses it only
# when the writer named no subject of its own, so it is derived only then
# (no subject, or the subject the writer's scope defaults to).
default subject_id := ""

subject_id := concat("", [data.memgate.config.subject_prefix, subject_name]) if {
	text_features["subject.marker"]
	subject_from_scope
}

subject_from_scope if input.candidate.subjectId == ""

subject_from_scope if input.candidate.subjectId == input.candidate.scope[_]

subject_name := n if {
	n := subject_names(data.memgate.config.subject_patterns[0])[0]
} else := n if {
	n := subject_names(data.memgate.config.subject_patterns[1])[0]
}

subject_names(pattern) := [n |
	some m in regex.find_all_string_submatch_n(pattern, text, -1)
	some i, n in m
	i > 0
	n != ""
	not n in data.memgate.config.subject_stopwords
]

# value is the structured value the text states for its topic, e.g.
# {"enabled": false}, so overrides compare facts rather than wording. It is
# derived only when the writer gave none.
default value := null

value := {spec.value: v} if {
	not has_value(input.candidate)
	spec := data.memgate.config.topics[topic]
	v := stated_value(spec)
}

# stated_value: a negation wins over an affirmation; else the topic's default.
stated_value(spec) := false if {
	text_features.negation
} else if {
	text_features.affirmation
} else := spec.value_default

affects := a if {
	a := data.memgate.config.topics[topic].affects
} else := a if {
	a := data.memgate.config.layer_affects[layer]
} else := []
