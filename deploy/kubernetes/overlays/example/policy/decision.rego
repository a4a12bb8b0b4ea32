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

# decision is defined only when a rule fired, so a gap in the rules is an
# undefined decision, which the sidecar fails closed on. One rule firing is
# the common case and is read off its configuration directly: every
# expression evaluated costs a fraction of a microsecond, and the budget for
# a whole decision is 20 µs.
decision := {
	"risk": r.risk,
	"categories": r.categories,
	"action": r.action,
	"reasons": [{"rule": id, "message": r.message}],
	"affects": affects,
} if {
	count(fired) == 1
	some id in fired
	r := data.memgate.config.rules[id]
} else := {
	"risk": combined_risk,
	"categories": sort({c | some id in fired; some c in data.memgate.config.rules[id].categories}),
	"action": combined_action,
	"reasons": [{"rule": id, "message": data.memgate.config.rules[id].message} | some id in fired],
	"affects": affects,
} if count(fired) > 1

# The highest risk and the strictest action of the rules that fired.
combined_risk := "high" if {
	some id in fired
	data.memgate.config.rules[id].risk == "high"
} else := "medium" if {
	some id in fired
	data.memgate.config.rules[id].risk == "medium"
} else := "low"

combined_action := "reject" if {
	some id in fired
	data.memgate.config.rules[id].action == "reject"
} else := "review" if {
	some id in fired
	data.memgate.config.rules[id].action == "review"
} else := "apply"

# affects: what the write would change, from its topic or else its layer.
affects := a if {
	a := data.memgate.config.topics[input.candidate.factType].affects
} else := a if {
	a := data.memgate.config.layer_affects[input.candidate.layer]
} else := []
