# Helpers for the default policy's tests: inputs shaped like the sidecar's.
# text_norm is written out as the sidecar would compute it; the text
# features are computed by the policy's reference definitions
# (features.rego), which a Go test holds the sidecar's to.
package memgate_test

import data.memgate_config as config

import data.memgate

base_candidate := {
	"id": "01JTEST0000000000000000001",
	"slotId": "slot_test",
	"op": "write",
	"layer": "",
	"subjectId": "user-1",
	"summary": "",
	"status": "pending_review",
	"candidateSource": "user-explicit",
	"actor": {"agentId": "agent-1"},
	"scope": {"userId": "user-1"},
	"evidence": {},
	"createdAt": "2026-12-02T10:00:00Z",
	"text_norm": " ",
}

# write(fields) is a write of a candidate with fields set, on an empty slot.
write(fields) := {
	"op": "write",
	"candidate": with_text_facts(object.union(base_candidate, fields)),
	"current": null,
	"pending": [],
	"actor": {"agentId": "agent-1"},
	"dialect": "native",
}

# with_text_facts(c) adds to a candidate what the sidecar computes from its
# text: text_features, text_first and text_captures.
with_text_facts(c) := object.union(c, facts) if {
	cc := object.union({"text_clauses": [c.text_norm]}, c) # the whole text is one clause unless given
	facts := {
		"text_features": memgate.computed_features,
		"text_first": memgate.computed_first,
		"text_captures": memgate.computed_captures,
	} with input as {"candidate": cc}
}

# text(summary, norm) is a free-text (Mem0-style) write.
text(summary, norm) := write({"summary": summary, "text_norm": norm})

# active(fields) is a record that is the slot's active version.
active(fields) := object.union(base_candidate, object.union({"id": "01JTEST0000000000000000000", "status": "active"}, fields))

# with_current(inp, rec) and with_pending(inp, recs) add slot state to an input.
with_current(inp, rec) := object.union(inp, {"current": rec})

with_pending(inp, recs) := object.union(inp, {"pending": recs})

inferred(inp) := object.union(inp, {"candidate": object.union(inp.candidate, {"candidateSource": "model-inference"})})

deletion(fields) := object.union(write(fields), {"op": "delete"})

rules(d) := {r.rule | some r in d.reasons}

# configured(d) holds when d's outcome is the one data.json gives the rules
# that fired: one rule, its entry as it is; several, the strictest action,
# the highest risk and the union of their categories. Tests assert which
# rules fire (the logic) and leave the outcome to the data, so an operator
# who retunes a rule's action, risk or categories in data.json alone still
# passes them; the operator's own table of examples (`sidecar policy test`)
# pins the outcomes they expect.
configured(d) if {
	ids := rules(d)
	count(ids) > 0
	d.action == strictest_action({config.rules[id].action | some id in ids})
	d.risk == highest_risk({config.rules[id].risk | some id in ids})
	d.categories == configured_categories(ids)
}

configured_categories(ids) := config.rules[id].categories if {
	count(ids) == 1
	some id in ids
} else := sort({c | some id in ids; some c in config.rules[id].categories})

strictest_action(actions) := "reject" if "reject" in actions
else := "review" if "review" in actions
else := "apply"

highest_risk(risks) := "high" if "high" in risks
else := "medium" if "medium" in risks
else := "low"

# decide(inp) is what the sidecar does with a write: it asks the placement
# of every write, keeps the writer's layer as declaredLayer and the
# placement's as inferredLayer, judges the write at the higher of the two
# (knowledge if neither), fills in the slot fields the writer left empty,
# and asks the decision about the placed write. The result is the decision
# with the placement's fields and the layer the write is stored at.
decide(inp) := object.union(d, object.union(p, {"layer": placed.candidate.layer})) if {
	p := memgate.placement with input as inp
	layers := object.union(declared_of(inp.candidate), inferred_of(p))
	placed := object.union(inp, {"candidate": object.union(object.union(inp.candidate, filled(inp.candidate, p)), layers)})
	d := memgate.decision with input as placed
}

declared_of(c) := {"declaredLayer": c.layer} if c.layer != ""

else := {}

inferred_of(p) := {"inferredLayer": p.layer} if p.layer != ""

else := {}

filled(c, p) := object.union({k: v | some k, v in p; fill(c, k, v)}, {"layer": stored_layer(c, p)})

# stored_layer is the higher of the declared and the inferred layer.
stored_layer(c, p) := l if {
	l := memgate.highest({c.layer, p.layer})
} else := "knowledge"


fill(c, "factType", _) if object.get(c, "factType", "") == ""

fill(c, "subjectId", v) if {
	v != ""
	c.subjectId == c.scope[_]
}

fill(c, "value", v) if {
	v != null
	object.get(c, "value", null) == null
}
