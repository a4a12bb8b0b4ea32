# METADATA
# title: memgate default risk policy
# description: |
#   The two-tier rule of memgate's DESIGN §2: checkpoints, low-impact
#   preferences, verified knowledge and conflict-free new facts apply at once;
#   strategy constraints, permission boundaries, overrides of key facts and
#   model inferences about state or policy wait for a human; secrets are
#   rejected. The sidecar queries data.memgate.decision about a placed write
#   (free text is placed first, see placement.rego).
package memgate

import data.memgate_config as config

# write is placement and decision in one query, which the sidecar asks
# about a write before placing it (input.unplaced: its layer is the
# declared one with its slot's, and input.current and input.pending are
# the slot it has if placement leaves its slot fields alone). The sidecar
# keeps the decision only when placement left them alone and the layer
# the write is judged at is the same (DESIGN §7); otherwise it asks
# data.memgate.decision about the placed write. So every rule reads the
# write's layer as `layer` (rules.rego), never input.candidate.layer or
# inferredLayer: a policy with a rule that does is asked placement and
# decision apart (the sidecar finds such reads when it compiles).
write := {"placement": placement, "decision": decision}

# decision is defined only when a rule fired, so a gap in the rules is an
# undefined decision, which the sidecar fails closed on. Each rule's entry
# in config.rules is the decision it gives when it fires alone (less
# affects), so the common case copies it: building objects is most of what
# an evaluation costs, and the budget for a whole decision is 20 µs.
decision := object.union(config.rules[id], {"affects": affects}) if {
	count(fired) == 1
	some id in fired
	not config.rules[id].mode # the common case, copied as it is
} else := object.union(object.remove(config.rules[id], {"mode"}), object.union({"affects": affects}, shadow_part)) if {
	count(fired) == 1
	some id in fired
} else := object.union({
	"risk": combined_risk,
	"categories": sort({c | some id in fired; some c in config.rules[id].categories}),
	"action": combined_action,
	"reasons": [reason | some id in fired; some reason in config.rules[id].reasons],
	"affects": affects,
}, shadow_part) if count(fired) > 1

# Per-rule shadow mode: a rule whose entry in config.rules carries
# "mode": "shadow" still fires and is reported, but its park or rejection
# is not enforced. The decision keeps what policy says (action, risk,
# reasons) and adds shadow: the action of the rules that are not shadowed
# and the shadowed rules that would have stopped the write. The sidecar
# never shadows a secret or a policy failure.
shadowed := {id | some id in fired; config.rules[id].mode == "shadow"}

# The shadowed rules that would have parked or rejected the write.
shadow_stops := sort([id | some id in shadowed; config.rules[id].action != "apply"])

shadow_part := {} if {
	count(shadow_stops) == 0
} else := {"shadow": {"rules": shadow_stops, "action": strictest(fired - shadowed)}}

# strictest is the strictest action of the rules ids.
strictest(ids) := "reject" if {
	some id in ids
	config.rules[id].action == "reject"
} else := "review" if {
	some id in ids
	config.rules[id].action == "review"
} else := "apply"

# The highest risk and the strictest action of the rules that fired.
combined_risk := "high" if {
	some id in fired
	config.rules[id].risk == "high"
} else := "medium" if {
	some id in fired
	config.rules[id].risk == "medium"
} else := "low"

combined_action := "reject" if {
	some id in fired
	config.rules[id].action == "reject"
} else := "review" if {
	some id in fired
	config.rules[id].action == "review"
} else := "apply"

# affects: what the write would change, from its topic or else its layer.
affects := a if {
	a := config.topics[input.candidate.factType].affects
} else := a if {
	a := config.layer_affects[layer]
} else := []
