# Placement: the layer a write's text reads as, and where a free-text
# memory goes. The sidecar asks data.memgate.placement about every write
# with text: its layer is the inferred layer (the record's inferredLayer;
# the record's layer is the highest of it, the declared one and the slot's).
# For free text (Mem0, MCP: no fact type, or only its scope as subject) it
# also fills in the fact type, subject and structured value the text
# implies, where the writer left them empty. Then the sidecar asks
# data.memgate.decision about the placed write.
package memgate

import data.memgate_config as config

placement := {
	"layer": inferred_layer,
	"factType": fact_type,
	"subjectId": subject_id,
	"value": value,
}

# inferred_layer: the highest layer the text's strong signals read as
# (text.rego); for a write without a declared layer, also the layer of its
# topic, input.candidate.text_first.topic, the first topic of
# config.features.first.topic (listed by priority) whose keywords the text
# contains. "" when the text says nothing either way.
inferred_layers contains l if some l in text_layers

# A declared fact type is read too (rule 10: the writer's words can raise
# risk, never lower it): one that names a topic is judged at the topic's
# layer, and one that names a permission, an approval or another control
# of what the agent does (fact_type_governs) as a policy, whatever the
# summary says.
inferred_layers contains l if {
	spec := config.topics[input.candidate.factType] # most writes name none: stop here
	l := spec.layer
}

inferred_layers contains "policy" if fact_type_governs

# A policy-layer topic's keywords ("access", "publish", "confirm"…) are a
# lexicon signal like the others: the topic reaches the policy layer
# through text_layers where the classifier does not rule the text out
# (risky("policy_topic"), text.rego), or here when the text is a strong
# rule about it (must, never, 禁止…: "Never modify the invoices table",
# which code comments taught the classifier to read as ordinary). Read
# here for any text, it bypassed the gate: out of fold on the tuning rows
# (2026-12-04) that parked about 80 more ordinary texts of 18,110 (36.8
# per 1,000; 32.4 without it) and caught one high-risk text more of 2,353.
inferred_layers contains l if {
	declared_layer == ""
	l := config.topics[input.candidate.text_first.topic].layer
	l != "policy"
}

inferred_layers contains "policy" if {
	declared_layer == ""
	input.candidate.text_first.policy_topic
	strong_norm
}

default inferred_layer := ""

inferred_layer := highest(inferred_layers)

# declared_layer: the layer the writer declared. Placement alone is asked
# about the write as sent (its layer the declared one); the write document
# (decision.rego) about the write with its slot's layers too, and the
# declared one in declaredLayer (input.unplaced).
declared_layer := object.get(input.candidate, "declaredLayer", "") if {
	input.unplaced
} else := input.candidate.layer

# placed_layer: the layer the write has once placed, before its slot is
# known: the higher of the declared and the inferred one.
placed_layers contains declared_layer

placed_layers contains inferred_layer

default placed_layer := "knowledge"

placed_layer := highest(placed_layers)

# fact_type: the writer's; else, for free text, its text's topic when that
# topic names a slot of the write's layer.
fact_type := t if {
	t := input.candidate.factType
	t != ""
} else := t if {
	t := input.candidate.text_first.topic
	spec := config.topics[t]
	spec.slot
	spec.layer == placed_layer
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

# fact_type_words are the words of the declared fact type, lowercased:
# "deploy.approval_required" and "deployApprovalRequired" both give
# {"deploy", "approval", "required"}.
fact_type_words contains w if {
	input.candidate.factType != ""
	spaced := regex.replace(input.candidate.factType, `([a-z0-9])([A-Z])`, "${1} ${2}")
	some w in regex.split(`[^a-z0-9]+`, lower(spaced))
	w != ""
}

# fact_type_governs: the fact type names who may do what, or a control of
# an action with side effects: a permission or control word
# (config.fact_type_words), or a mode (auto, enabled, …) of an action
# (deploy, pay, …). "release.date" and "darkmode.enabled" do not.
fact_type_governs if fact_type_permission

fact_type_governs if {
	some w in fact_type_words
	w in config.fact_type_words.control
}

fact_type_governs if {
	some w in fact_type_words
	w in config.fact_type_words.mode
	some a in fact_type_words
	a in config.fact_type_words.action
}

fact_type_permission if {
	some w in fact_type_words
	w in config.fact_type_words.permission
}
